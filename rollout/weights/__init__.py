"""Moving new policy weights from the learner to the generators: one seam, one module per transport.

    base.py          the interface (WeightSender, WeightReceiver) and the factories that pick by config
    object_store.py  one copy in Ray's object store, fetched by every generator (one node; the default)
    collective.py    a process group of the learner's rank 0 and every generator worker, broadcast in
                     buckets: NCCL between GPUs, the same code over gloo on CPUs

Both halves of each protocol live in its module. `schema/records.WeightUpdate` is what crosses
between them (through the generator pool, actors/generator_pool.py).
"""
