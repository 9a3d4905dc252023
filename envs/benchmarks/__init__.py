"""Third-party benchmarks as episode environments: each runs its own code (state generator, servers,
evaluator) in its own Python environment (environment.py) and in a benchmark sandbox (sandbox.py),
from the user's own checkout. One folder per benchmark."""
