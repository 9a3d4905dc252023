"""The DTC-vs-PTC context report and the self-built tiny model."""

import json
import subprocess

from transformers import AutoModelForCausalLM, AutoTokenizer

from rollout.tiny_model import build_tiny
from tests.conftest import BIN
from tests.test_rollout import tiny_path  # noqa: F401


def test_context_report_dtc_grows_ptc_flat(tmp_path):
    out = tmp_path / "ctx"
    r = subprocess.run([str(BIN / "progagent"), "tasks", "context-report", "retail_clearance_markdown",
                        "support_sla_escalation", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads((out / "context_report.json").read_text())
    s = report["summary"]
    assert s["dtc_growth_v0_to_v3"] >= 4 and s["ptc_growth_v0_to_v3"] <= 1.2 and s["ptc_over_dtc_at_v3"] <= 0.10
    assert all(row["reward"] == 1.0 for row in report["rows"]) and len(report["rows"]) == 8
    assert (out / "context_report.png").stat().st_size > 10_000
    assert "| scale | mean DTC tokens | mean PTC tokens |" in (out / "context_report.md").read_text()


def test_tiny_model_is_loadable(tiny_path):  # noqa: F811 - built once per session (tests/test_rollout.py)
    """The self-built model and tokenizer load as a Qwen3 model and its chat template. (That a build is
    byte-for-byte reproducible is tested where `progagent model build-tiny` runs in another process:
    tests/test_rollout.py::test_collect_and_build_tiny_commands.)"""
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tok = AutoTokenizer.from_pretrained(tiny_path)
    n = sum(p.numel() for p in model.parameters())
    assert 0.5e6 <= n <= 5e6 and model.config.model_type == "qwen3"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {
        "name": "programmatic_tool_call", "parameters": {}}}], tokenize=False, add_generation_prompt=True)
    assert "<tools>" in text and text.endswith("<|im_start|>assistant\n")
    ids = tok.encode('tools["list_orders"](page_no=2)', add_special_tokens=False)
    assert tok.decode(ids) == 'tools["list_orders"](page_no=2)' and len(ids) < 20
    assert build_tiny(tiny_path) == tiny_path  # cached: a second build reuses it


def test_load_tokenizer_is_autotokenizers_choice_without_torch():
    """Env workers and the CLI load only a tokenizer: the same class, ids and template as AutoTokenizer,
    without importing torch (AutoTokenizer's config import does: seconds of CPU per process)."""
    tiny = build_tiny(with_model=False)  # the project tokenizer, cached on disk
    probe = (
        "import json, sys\n"
        "from rollout.tokenizer import load_tokenizer\n"
        f"tok = load_tokenizer({str(tiny)!r})\n"
        "msgs = [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'h\u00e9llo tools[\"x\"]()'}]\n"
        "text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)\n"
        "print(json.dumps([type(tok).__name__, text, tok.encode(text, add_special_tokens=False),"
        " tok.eos_token_id, 'torch' in sys.modules]))\n")
    out = subprocess.run([str(BIN / "python"), "-c", probe], capture_output=True, text=True, check=True)
    name, text, ids, eos, torch_loaded = json.loads(out.stdout.splitlines()[-1])
    auto = AutoTokenizer.from_pretrained(tiny)
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": 'h\u00e9llo tools["x"]()'}]
    assert name == type(auto).__name__ and not torch_loaded
    assert text == auto.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert ids == auto.encode(text, add_special_tokens=False) and eos == auto.eos_token_id
