"""ProgAgent inside verl: the `progagent` agent loop (agent_loop.py), its dataset rows (dataset.py,
rows.py) and verl's servers as a ProgAgent generator (server_generator.py). Importing agent_loop
needs the `verl` extra; nothing else here does."""
