#!/usr/bin/env bash
# The one-shot GPU check (bench/gpu_check.py) on a lent GPU machine: its image's own Python (no network
# there), the project's tree as it travels, and the wheels scripts/gpu_wheels.sh put in .whl/ (carried:
# msgspec, megatron-core, mbridge, verl's loss code). Writes the JSON report to $OUT (or ./) and stops at
# 8 minutes. Without CUDA it stops at once, saying so (exit 2). Usage: bash scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}/gpu_check.json"
PY="$(command -v python3 || command -v python)"
if ls .whl/*.whl >/dev/null 2>&1; then
  site="${TMPDIR:-/tmp}/progagent-gpu-site"
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl; then
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "gpu_check: the carried wheels did not install (checks needing them are reported as not run)"
  fi
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false timeout 480 "$PY" -m bench.gpu_check --out "$out"
rc=$?
[ $rc -eq 124 ] && echo "gpu_check: stopped at its 8-minute limit; the checks done so far are above"
exit $rc
