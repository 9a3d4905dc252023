"""A benchmark checkout's configuration files (Toolathlon's task_config.json and server YAML, MCP-Atlas's
server template, LOCA's task configurations) are third-party data: read without following a link (a
file or a folder), as a regular file with one name, under a size cap (envs/benchmarks/checkout_files.py).
A link to a host file read as a task's configuration would choose what servers the host starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envs.benchmarks.atlas.checkout import TEMPLATE, AtlasCheckout, AtlasError
from envs.benchmarks.loca.checkout import LocaCheckout, LocaError
from envs.benchmarks.toolathlon.checkout import ToolathlonCheckout, ToolathlonError

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _linked(tmp_path: Path, target: Path) -> Path:
    """`target` replaced by a link to a host file holding a JSON document of the attacker's choosing."""
    secret = tmp_path / "host-secret.json"
    secret.write_text(target.read_text())
    target.unlink()
    target.symlink_to(secret)
    return secret


def _deep(target: Path) -> None:
    target.write_text("[" * 100_000 + "]" * 100_000)


def test_a_linked_or_deep_toolathlon_task_config_is_refused_naming_it(tmp_path):
    co = shutil.copytree(FIXTURES / "toolathlon_checkout", tmp_path / "co", symlinks=True)
    name = sorted(p.name for p in (co / "tasks" / "finalpool").iterdir() if p.is_dir())[0]
    config = co / "tasks" / "finalpool" / name / "task_config.json"
    ToolathlonCheckout(co).task(name)  # the honest file reads
    _linked(tmp_path, config)
    with pytest.raises(ToolathlonError, match="task_config.json"):
        ToolathlonCheckout(co).task(name)
    config.unlink()
    _deep(config)
    with pytest.raises(ToolathlonError, match="task_config.json is not Toolathlon's format"):
        ToolathlonCheckout(co).task(name)


def test_a_linked_atlas_server_template_is_refused_naming_it(tmp_path):
    co = shutil.copytree(FIXTURES / "atlas_checkout", tmp_path / "co", symlinks=True)
    AtlasCheckout(co)
    _linked(tmp_path, co / TEMPLATE)
    with pytest.raises(AtlasError, match="mcp_server_template.json"):
        AtlasCheckout(co)
    (co / TEMPLATE).unlink()
    _deep(co / TEMPLATE)
    with pytest.raises(AtlasError, match="not MCP-Atlas's server template"):
        AtlasCheckout(co)


def test_a_linked_or_hard_linked_loca_task_configuration_is_refused_naming_it(tmp_path):
    co = shutil.copytree(FIXTURES / "loca_checkout", tmp_path / "co", symlinks=True)
    preset = LocaCheckout(co).presets()[0]
    config = co / "task-configs" / f"final_{preset}_set_config.json"
    assert LocaCheckout(co).configurations(preset)
    secret = _linked(tmp_path, config)
    with pytest.raises(LocaError, match=f"final_{preset}_set_config.json"):
        LocaCheckout(co).configurations(preset)
    config.unlink()
    config.hardlink_to(secret)
    with pytest.raises(LocaError, match="hard links"):
        LocaCheckout(co).configurations(preset)
