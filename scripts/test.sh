#!/usr/bin/env bash
# Install (idempotent) and run the test suite. Extra arguments go to pytest.
# Two pytest-xdist workers, one test file each at a time (module fixtures such as a Ray cluster stay
# in one process): much of the suite waits on kernels, servers and Ray starting, so two files at
# once fill the cores. PROGAGENT_TEST_WORKERS=0 runs it in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${PROGAGENT_TEST_WORKERS:-2}" --dist loadfile "$@"
