"""Loading a tokenizer without loading torch.

`AutoTokenizer.from_pretrained` reads the model's config through `AutoConfig`, whose import chain
(generation config, masking utils) imports torch: ~5 s of CPU in every process that only needs a
tokenizer (env workers, the CLI, the synthesis auditor). A local folder's `tokenizer_config.json`
names the tokenizer class; that class, taken from transformers directly, is the one AutoTokenizer
would pick, and loads in ~1.5 s without torch. Anything else (a hub id, no class named, a class
transformers does not export) goes through AutoTokenizer as before.

The model's chat template is third-party code every process that renders a prompt runs: it is
refused here, naming the folder, when it cannot render a probe conversation within
rollout/chat_template.py's deadline and size cap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_tokenizer(path: str | Path) -> Any:
    tok = _load(path)
    if getattr(tok, "chat_template", None):
        from rollout.chat_template import check_chat_template

        check_chat_template(tok, str(path))
    return tok


def _load(path: str | Path) -> Any:
    config = Path(path) / "tokenizer_config.json"
    name = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    if name:
        import transformers

        cls = getattr(transformers, name, None) or getattr(transformers, f"{name}Fast", None)
        if cls is not None and hasattr(cls, "from_pretrained"):
            return cls.from_pretrained(str(path))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))
