"""Generator backends behind one interface (rollout/generators/base.py)."""
