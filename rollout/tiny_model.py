"""The tiny model the project builds itself: a BPE tokenizer trained on the shipped tasks and a
randomly initialised Qwen3 model, saved as a Hugging Face folder (no hub download, ever).

    progagent model build-tiny OUT        # or: build_tiny(out) / project_tokenizer()

The corpus is made from what the model will read and write: task instructions, tool schemas,
oracle and wrong programs, workspace files and database rows of the v0 environments, and the
chat-format scaffolding. Same library ⇒ same corpus ⇒ same tokenizer and weights (seeded), and the
result is cached by a hash of its inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import msgspec

TEMPLATE = Path(__file__).with_name("chat_template.jinja")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>", "<think>", "</think>"]
DEFAULT_CACHE = Path(os.environ.get("PROGAGENT_CACHE", Path.home() / ".cache" / "progagent"))


class TinyConfig(msgspec.Struct, frozen=True):
    vocab_size: int = 4096
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 32
    intermediate_size: int = 384
    max_position_embeddings: int = 32768
    seed: int = 0


def corpus_texts(task_root: Path | None = None) -> list[str]:
    """Texts of the shipped library, in a fixed order."""
    from envs.format.library import LIBRARY_DIR, load_library

    tasks, _ = load_library(task_root or LIBRARY_DIR)
    texts = []
    with tempfile.TemporaryDirectory() as tmp:
        for task_id in sorted(tasks):
            task = tasks[task_id]
            texts.append(task.instruction)
            texts.append(task.oracle_source)
            texts.extend(task.wrong_solutions().values())
            texts.append((task.dir / "tools.py").read_text())
            try:
                env = task.build(Path(tmp) / task_id, "v0")
            except Exception:  # noqa: BLE001 - a broken task only loses its data from the corpus
                continue
            for p in sorted(env.workspace.rglob("*")):
                if p.is_file():
                    texts.append(p.read_text(errors="replace")[:20_000])
            con = sqlite3.connect(env.db_path)
            con.row_factory = sqlite3.Row
            for (table,) in con.execute("select name from sqlite_master where type='table' order by name").fetchall():
                rows = con.execute(f'select * from "{table}" limit 200').fetchall()
                texts.append(json.dumps([dict(r) for r in rows]))
            con.close()
    return texts


def _fingerprint(texts: list[str], cfg: TinyConfig) -> str:
    h = hashlib.sha256(msgspec.json.encode(cfg))
    h.update(TEMPLATE.read_bytes())
    for t in texts:
        h.update(hashlib.sha256(t.encode()).digest())
    return h.hexdigest()[:16]


def train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = TEMPLATE.read_text()
    return fast


def build_tiny(out: str | Path | None = None, cfg: TinyConfig | None = None, with_model: bool = True) -> Path:
    """Build (or reuse) the tokenizer and model; returns the Hugging Face folder."""
    cfg = cfg or TinyConfig()
    texts = corpus_texts()
    fp = _fingerprint(texts, cfg)
    out = Path(out) if out else DEFAULT_CACHE / f"tiny-{fp}"
    stamp = out / "progagent-tiny.json"

    def complete() -> bool:
        return stamp.exists() and json.loads(stamp.read_text()).get("fingerprint") == fp and \
            (not with_model or (out / "config.json").exists())

    if complete():
        return out
    # built in a sibling folder and renamed into place: processes starting at once (Ray actors, test
    # workers) never read a half-written model, and a crash leaves no stamped partial folder
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tokenizer = train_tokenizer(texts, cfg.vocab_size)
        tokenizer.save_pretrained(tmp)
        if with_model:
            import torch
            from transformers import Qwen3Config, Qwen3ForCausalLM

            torch.manual_seed(cfg.seed)
            config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=cfg.hidden_size,
                                 num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
                                 num_key_value_heads=cfg.num_kv_heads, head_dim=cfg.head_dim,
                                 intermediate_size=cfg.intermediate_size,
                                 max_position_embeddings=cfg.max_position_embeddings, tie_word_embeddings=True,
                                 eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                 pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
                                 bos_token_id=None, torch_dtype="float32")
            model = Qwen3ForCausalLM(config)
            model.save_pretrained(tmp, safe_serialization=True)
            model.generation_config.save_pretrained(tmp)
        (tmp / stamp.name).write_text(json.dumps({"fingerprint": fp, "config": msgspec.to_builtins(cfg)}))
        if out.exists() and not complete():
            shutil.rmtree(out, ignore_errors=True)  # a stale, partial or tokenizer-only earlier build
        try:
            os.rename(tmp, out)
        except OSError:  # another process renamed its identical build first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


_TOKENIZER = None


def project_tokenizer():
    """The project's tokenizer (built on first use and cached on disk)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from rollout.tokenizer import load_tokenizer

        _TOKENIZER = load_tokenizer(build_tiny(with_model=False))
    return _TOKENIZER
