"""A user's LOCA-bench checkout, read as data: its presets and the task configurations in each.

    co = LocaCheckout("~/LOCA-bench")
    co.presets()                                   # ["8k", "16k", "32k", "64k", ...] (task-configs/final_<p>_set_config.json)
    co.tasks("64k", names=["CanvasListTestS2LEnv"])  # [LocaTask(name, seed, preset)], one per configuration

A preset is one environment-state size (LOCA's scale axis: the same 15 task types, each with 5 seeds,
generated larger); a configuration names its environment class, the generator's parameters (the
seed among them) and its MCP servers. ProgAgent never vendors LOCA: the checkout is the user's, and
nothing of it is imported into this process (its code runs in its own Python: driver.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

from envs.benchmarks.checkout_files import read_text

#: where a preset's configurations are, relative to the checkout
PRESET_GLOB = "task-configs/final_*_set_config.json"
_PRESET = re.compile(r"^final_(?P<preset>[A-Za-z0-9]+)_set_config\.json$")
#: the most a configuration file may hold (LOCA's are about 60 KB)
MAX_CONFIG_BYTES = 16 * 2**20


class LocaError(ValueError):
    """A checkout, preset or task that is not there or not in LOCA's format (the message says which)."""


class LocaTask(msgspec.Struct, frozen=True):
    name: str  # the configuration's name (its environment class), e.g. "CanvasListTestS2LEnv"
    seed: int
    preset: str

    @property
    def task_id(self) -> str:
        return task_id(self.name, self.seed)


def task_id(name: str, seed: int) -> str:
    """The name a LOCA configuration goes by in ProgAgent's tables and cache: `<name>.s<seed>`."""
    return f"{name}.s{seed}"


class LocaCheckout:
    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().resolve()
        if not (self.path / "gem" / "envs").is_dir() or not (self.path / "task-configs").is_dir():
            raise LocaError(f"{self.path}: not a LOCA-bench checkout (no gem/envs/ and task-configs/; "
                            "git clone https://github.com/hkust-nlp/LOCA-bench)")

    def presets(self) -> list[str]:
        found = [m["preset"] for p in self.path.glob(PRESET_GLOB) if (m := _PRESET.match(p.name))]
        return sorted(found, key=lambda p: (int(re.sub(r"\D", "", p) or 0), p))

    def configurations(self, preset: str) -> list[dict[str, Any]]:
        path = self.path / "task-configs" / f"final_{preset}_set_config.json"
        if not path.is_file():
            raise LocaError(f"preset {preset!r}: no {path.relative_to(self.path)} (presets here: "
                            f"{', '.join(self.presets()) or 'none'})")
        data = read_text(self.path, path, LocaError, MAX_CONFIG_BYTES)
        try:
            configs = json.loads(data)["configurations"]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise LocaError(f"{path}: not a LOCA task configuration file ({exc})") from None
        for i, c in enumerate(configs):
            if not isinstance(c, dict) or not {"name", "env_class", "env_params", "mcp_servers"} <= c.keys():
                raise LocaError(f"{path}: configuration {i} lacks name, env_class, env_params or mcp_servers")
        return configs

    def tasks(self, preset: str, names: list[str] | None = None, seeds: list[int] | None = None) -> list[LocaTask]:
        configs = self.configurations(preset)
        known = sorted({c["name"] for c in configs})
        unknown = sorted(set(names or []) - set(known))
        if unknown:
            raise LocaError(f"preset {preset}: no task type {', '.join(unknown)} (known: {', '.join(known)})")
        out = [LocaTask(c["name"], int(c["env_params"].get("seed", 0)), preset) for c in configs
               if (not names or c["name"] in names) and (not seeds or c["env_params"].get("seed") in seeds)]
        if len({t.task_id for t in out}) != len(out):
            raise LocaError(f"preset {preset}: two configurations share a name and seed")
        return out

    def configuration(self, preset: str, name: str, seed: int) -> dict[str, Any]:
        for c in self.configurations(preset):
            if c["name"] == name and int(c["env_params"].get("seed", 0)) == seed:
                return c
        raise LocaError(f"preset {preset}: no configuration {task_id(name, seed)}")
