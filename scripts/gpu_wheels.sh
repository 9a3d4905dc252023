#!/usr/bin/env bash
# The wheels the GPU check carries to the lent GPU machine (Python 3.12, x86-64, no network there; its
# image has torch, transformers, numpy, cloudpickle, packaging, psutil): msgspec (our records), megatron-core
# and mbridge (the megatron learner), verl 0.9.1 with what its loss module imports (tensordict, omegaconf,
# ...), into .whl/ (git-ignored; about 6 MB of the 64 MiB a call may carry). Run here, where PyPI answers.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qxF "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
mkdir -p .whl
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -d .whl msgspec==0.23.0 megatron-core==0.16.1 mbridge==0.15.1 verl==0.9.1 tensordict==0.10.0 omegaconf==2.3.1 \
  codetiming==1.4.0 pyvers==0.1.0 orjson==3.13.0 importlib_metadata==10.2.0 dill==0.4.1
# omegaconf's parser runtime is published as a source archive only: built here into a (pure Python) wheel
python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
du -sh .whl
