#!/usr/bin/env bash
# Install (idempotent) and run the test suite.
#
# Without arguments, in two parts (tests/conftest.py, `--part`): the library validation and the Ray
# files in one process (each of them already uses both cores, and they are latency-bound), then the
# rest on two pytest-xdist workers, a file at a time each (mostly one core per file). Both parts
# always run; the exit status is the first failing part's. Measured on 2 cores, quiet host: the
# parallel part's files take 4:05 on two workers against 6:53 in one process; the whole suite took
# 13:01 in one process. Beside the serial part, anything else only slows it: the library validation
# at nice 10 beside the Ray files made them twice as slow, and in the parallel part (one validation
# process) it gained nothing measurable.
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
trap 'kill "$beside" 2>/dev/null || true' EXIT  # interrupted: not left running
"${PYTEST[@]}" -n 0 --part serial || note $?
wait "$beside" || note $?
cat "$beside_log"
rm -f "$beside_log"
"${PYTEST[@]}" -n 2 --part parallel || note $?
exit "$status"
