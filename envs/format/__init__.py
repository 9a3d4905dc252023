"""The task format and its serving: loading task folders, their provenance, their tools served in
process or in the sandboxed tool host, their sandboxed code runner, and library tasks as episode
environments (task_env.py). The format itself: TASK_FORMAT.md."""
