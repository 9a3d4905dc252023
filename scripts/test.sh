#!/usr/bin/env bash
# Install (idempotent) and run the test suite. Extra arguments go to pytest.
# PROGAGENT_TEST_WORKERS=N runs N pytest-xdist workers, one test file each at a time (module fixtures
# such as a Ray cluster stay in one process). Default 0 (one process): the suite is CPU-bound on 2
# cores. Two workers were 12-15 min against 15 serially (CPU-heavy files overlapping); two fixed lanes
# (library validation + Ray files | the rest) 10 min 45 s against 10 min 28 s serially.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${PROGAGENT_TEST_WORKERS:-0}" --dist loadfile "$@"
