#!/usr/bin/env bash
# Install (idempotent) and run the test suite.
#
# Without arguments, in three parts (tests/conftest.py, `--part`):
# - serial: the Ray files, then the library validation, in one process. Each uses both cores at
#   times (Ray's actors, the validation's two workers), and the Ray tests are latency-bound.
# - beside: short files that mostly wait (sandbox limits, restarts, MCP round trips) and the simulated
#   cluster (its raylets mostly wait on health checks), in a second process alongside serial, on the
#   CPU its Ray tests leave idle.
# - parallel: the rest, one core each, on two pytest-xdist workers, a file at a time.
# - the type check (mypy over the typed seams, pyproject.toml) beside them too.
# - last, the verifiers taskset's tests in .venv-verifiers (verifiers pins mcp==2.0.0: scripts/install.sh).
# All parts run; the exit status is the first failing part's; beside's and the type check's output
# follow serial's.
# Measured on 2 cores, 2026-12-06 (evening, newest): 13:32 and 14:34 (serial 9:14 / 10:01, beside 5:33 / 5:56,
# parallel 3:56 / 4:11, verifiers 0:08), all passing; the same code's serial part took 9:14 in one run and
# 10:10 in the next: the host moves a run by about a minute. From an empty cache (a fresh clone) the type
# check costs ~48 s of CPU more (3 s warm).
# Measured on 2 cores, 2026-12-06 (earlier): 12:24 and 13:08 (serial 8:30 / 9:05, beside 5:09 / 5:22,
# parallel 3:35 / 3:43, verifiers 0:07), all passing; the machine's busy CPU over each whole run 1,272
# and 1,352 core-s: 1.9 cores busy while serial and beside overlap, ~1.55 after. Beside under
# `nice -n 10`: 12:45, and the two niced-kernel tests failed (they assume a launcher at nice 0).
# Measured on 2 cores, 2026-12-06 (latest before): 12:35 and 12:29 (serial 8:44 / 8:39, beside 5:16 / 5:18, parallel
# 3:31, verifiers 0:08 / 0:07), all passing, after the torch learner ran a row per sequence on CPU and dropped
# its pi_old forward: each part alone, per test, serial 630 s of busy CPU (696 before), beside 260, parallel
# 308 (-n 0): ~1,200 s, so still at least 10 min on 2 cores in any layout. Moving three waiting files of
# parallel (the tool-bridge attacks, MCPMark postgres, the LOCA adapter) beside: 12:25 (serial 9:04, beside
# 8:06, parallel 3:03): within noise, not kept.
# Measured on 2 cores, 2026-12-06 (earlier): 14:48, 13:56 and 13:47 (serial 10:30 / 9:44 / 9:43, beside ~5:53, parallel 3:43-3:56,
# verifiers 0:08 / 0:07), all passing, with actors loading torch with the collector paused (~0.4-0.8 s of CPU
# less per torch actor: a few percent of the suite). Beside alone prints its summary (122 passed in 4:15); with
# serial alongside it ended without it once more (exit status 0, every test reached).
# Measured on 2 cores, 2026-12-06 (later): 13:50 with parallel started as soon as beside ended, alongside
# serial (serial took 12:29, and two tests failed under the contention): not kept. Each part alone, per
# test: 1,267 s of busy CPU (serial 686, beside 260, parallel 321), so at least 10.6 min on 2 cores in any
# layout; of serial's, 17 generator actors took 127 s, 11 learner ranks 94 s, 32 env workers 77 s, mostly
# imports (torch and transformers' model classes: ~3.4 s of CPU per process; `import transformers` alone
# 0.85 s, which every env worker pays for its tokenizer). This layout then: 14:29 (serial 10:23, beside 6:01, parallel
# 3:45, verifiers 0:08), all passing.
# Earlier: 12:32, 12:50 and 13:26 on 2026-12-06 (the host varies by ~1 min; fastest: serial 9:12, beside 5:28, parallel 3:02, verifiers 0:07; 1,290 s of busy
# CPU, so at least 10.8 min on 2 cores whatever the layout: most of it is the actor starts of end-to-end tests)
# once the shared Ray head ran without a log monitor; 13:38 before that day (1,415 s of busy CPU);
# 14:06 on 2026-12-05 (serial 10:25, beside 6:09, parallel 3:22, verifiers 0:08; 1,490 s of busy
# CPU: 765 s of it serial's, where Ray actors' imports dominate) after env workers stopped importing torch and the
# collective's deadline tests moved beside; 15:21 on 2026-12-05 with the MCPMark-postgres, MCP-Atlas and paper-table tests (serial 10:36,
# beside 5:33, parallel 4:01, verifiers 0:08); about 15:00 earlier that day with the learning-signal and postgres tests (serial 10:28,
# beside 5:29, parallel 2:40, verifiers 0:07); 13:06 before them, with the
# verl tests and the verifiers environment (serial 10:00,
# beside 5:32, parallel 2:47, verifiers 0:07); with the SmolLM2 test in beside, the Ray tests slowed to
# flaky (17:31), and in parallel 16:21: it is opt-in (PROGAGENT_SLOW=1).
# 12:00-12:37 on 2026-12-04 with the type check beside (serial 8:39-9:10),
# 11:09 before it (serial 8:28 with beside 5:46 alongside it, parallel
# 2:32; about 1,250 s of CPU: the suite is CPU-bound); with test_cluster in the parallel part, 12:02
# when it went first there (serial 7:08, parallel 4:54, 2:39 of it test_cluster on one worker) and
# 13:20 when it went last (parallel 6:00). Earlier: 9:03 on a quiet host (serial 6:20, beside 2:46
# alongside it, parallel 2:29; 949 s of CPU) and 11:39 on a slower one (the same work took 1215 s of
# CPU), where the two-part layout (no beside) took 12:44 and one process 13:01-17:23. Running all
# three parts at once took 12:54 (1445 s of CPU: contention costs more than it hides). A third xdist
# worker for the parallel files was slower than two (4:17 against 3:59).
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
types_log=$(mktemp)
"${PYTEST[@]}" -n 0 --part beside > "$beside_log" 2>&1 &
beside=$!
.venv/bin/python -m mypy > "$types_log" 2>&1 &  # the typed seams ([tool.mypy] in pyproject.toml)
types=$!
trap 'kill "$beside" "$types" 2>/dev/null; rm -f "$beside_log" "$types_log"' EXIT  # interrupted: nothing left behind
"${PYTEST[@]}" -n 0 --part serial || note $?
beside_status=0
wait "$beside" || { beside_status=$?; note $beside_status; }
wait "$types" || note $?
trap - EXIT  # reaped: their pids may belong to other processes now
cat "$beside_log" "$types_log"
# beside three times ended with status 0 after its last test but without pytest's summary line; once
# reproduced with tests/test_weight_collective.py alone under load (1 of ~30 runs), whose last test
# then left a thread inside gloo through the interpreter's exit (it is joined now; the cause is not
# proven): said here, so that a run whose summary never came is not read as a clean one
grep -Eq '[0-9]+ (passed|failed)' "$beside_log" ||
  echo "scripts/test.sh: beside's output ends without pytest's summary line (its exit status: $beside_status)"
rm -f "$beside_log" "$types_log"
"${PYTEST[@]}" -n 2 --part parallel || note $?
# ProgAgent's tasks through verifiers' own machinery, in the environment that holds verifiers (its
# mcp==2.0.0 pin cannot share .venv: scripts/install.sh); in .venv those tests skip
if [ -x .venv-verifiers/bin/python ]; then
  .venv-verifiers/bin/python -m pytest -q -p no:cacheprovider tests/test_verifiers_taskset.py || note $?
else
  echo "tests/test_verifiers_taskset.py: not run (no .venv-verifiers: PROGAGENT_VERIFIERS=0 at install)"
fi
exit "$status"
