#!/usr/bin/env bash
# Install (idempotent) and run the test suite.
#
# Without arguments, in three parts (tests/conftest.py, `--part`):
# - serial: the Ray files, then the library validation, in one process. Each uses both cores at
#   times (Ray's actors, the validation's two workers), and the Ray tests are latency-bound.
# - beside: short files that mostly wait (sandbox limits, restarts, MCP round trips), in a second
#   process alongside serial, on the CPU its Ray tests leave idle (about a third of it).
# - parallel: the rest, one core each, on two pytest-xdist workers, a file at a time.
# All parts run; the exit status is the first failing part's; beside's output follows serial's.
# Measured on 2 cores: 9:03 on a quiet host (serial 6:20, beside 2:46 alongside it, parallel 2:29;
# 949 s of CPU) and 11:39 on a slower one (the same work took 1215 s of CPU), where the two-part
# layout (no beside) took 12:44 and one process 13:01-17:23. Moving the tiny-model Harbor and
# context files beside too took 11:07 (1202 s of CPU): no clear gain, and more CPU beside the
# latency-bound Ray tests, so they stay in the parallel part. A third xdist worker for the
# parallel files was slower than two (4:17 against 3:59).
#
# With arguments, one pytest run with those arguments; PROGAGENT_TEST_WORKERS=N gives it N workers
# (default 0: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider --dist loadfile)
if [ $# -gt 0 ]; then
    exec "${PYTEST[@]}" -n "${PROGAGENT_TEST_WORKERS:-0}" "$@"
fi
status=0
note() { [ "$status" -ne 0 ] || status=$1; }
beside_log=$(mktemp)
"${PYTEST[@]}" -n 0 --part beside > "$beside_log" 2>&1 &
beside=$!
trap 'kill "$beside" 2>/dev/null; rm -f "$beside_log"' EXIT  # interrupted: nothing left running or behind
"${PYTEST[@]}" -n 0 --part serial || note $?
wait "$beside" || note $?
trap - EXIT  # reaped: its pid may belong to another process now
cat "$beside_log"
rm -f "$beside_log"
"${PYTEST[@]}" -n 2 --part parallel || note $?
exit "$status"
