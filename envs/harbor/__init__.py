"""Harbor both ways: our tasks exported as Harbor tasks (export.py), Harbor tasks loaded (task.py) and
run as episodes of our runtime, judged by their own tests (episode.py)."""
