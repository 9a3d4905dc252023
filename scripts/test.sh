#!/usr/bin/env bash
# Install (idempotent) and run the test suite. Extra arguments go to pytest.
# PROGAGENT_TEST_WORKERS=N runs N pytest-xdist workers, one test file each at a time (module fixtures
# such as a Ray cluster stay in one process). Default 0 (one process): on 2 cores two workers were
# 12-15 min against 15 serially, and CPU-heavy files overlapping (library validation next to vLLM)
# made the slowest tests slower still.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${PROGAGENT_TEST_WORKERS:-0}" --dist loadfile "$@"
