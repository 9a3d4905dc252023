#!/usr/bin/env bash
# The one-shot GPU check (bench/gpu_check.py) on a lent GPU machine: its image's own Python packages
# (no network there), the project's tree as it travels. Writes the JSON report to $OUT (or ./) and
# stops at 8 minutes. Usage: bash scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-.}/gpu_check.json"
PY="$(command -v python3 || command -v python)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false timeout 480 "$PY" -m bench.gpu_check --out "$out"
rc=$?
[ $rc -eq 124 ] && echo "gpu_check: stopped at its 8-minute limit; the checks done so far are above"
exit $rc
