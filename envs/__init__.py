"""Environments: the sandboxed PTC runtime (envs.runtime) and verifiable tasks (envs.tasks)."""
