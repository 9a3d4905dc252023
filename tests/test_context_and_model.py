"""The DTC-vs-PTC context report and the self-built tiny model."""

import json
import subprocess

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from rollout.tiny_model import build_tiny
from tests.conftest import BIN


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


def test_tiny_model_is_deterministic_and_loadable(tmp_path):
    a, b = build_tiny(tmp_path / "a"), build_tiny(tmp_path / "b")
    assert (a / "tokenizer.json").read_bytes() == (b / "tokenizer.json").read_bytes()
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    model = AutoModelForCausalLM.from_pretrained(a)
    tok = AutoTokenizer.from_pretrained(a)
    n = sum(p.numel() for p in model.parameters())
    assert 0.5e6 <= n <= 5e6 and model.config.model_type == "qwen3"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {
        "name": "programmatic_tool_call", "parameters": {}}}], tokenize=False, add_generation_prompt=True)
    assert "<tools>" in text and text.endswith("<|im_start|>assistant\n")
    ids = tok.encode('tools["list_orders"](page_no=2)', add_special_tokens=False)
    assert tok.decode(ids) == 'tools["list_orders"](page_no=2)' and len(ids) < 20
    assert build_tiny(tmp_path / "a") == a  # cached: a second build reuses it
