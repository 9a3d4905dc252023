"""Checks of tasks: the validator (oracle at every scale, wrong solutions rejected, determinism), the
author's quick check, and the DTC-vs-PTC context report."""
