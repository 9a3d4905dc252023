"""Benchmarks of the PTC runtime, printed as one JSON object (ratios computed in the same run).

    .venv/bin/python -m bench.runtime_bench [--calls 200] [--tool-calls 1000] [--episodes 24]

- cold sandboxed kernel start (wall, and the machine's busy CPU per start) vs warm-pool episode open
  (targets: warm open p50 <= 25 ms)
- trivial program round trip
- tool call from inside the kernel vs a direct MCP client call to the same server (target <= 1.2x),
  in alternating batches of 25 so that both see the same moments of a host whose speed varies;
  1000 calls each by default: with 200, the ratio of the medians moved between 1.08 and 1.29 from run
  to run on a 2-vCPU VM, more than any change to the path being measured
- episodes per minute with 8 concurrent episodes
- memory per idle sandboxed kernel (RSS and USS)
- a library task's episode (open, oracle, judge, close) with its tools in this process ("inprocess",
  the shipped tasks' transport) and in the sandboxed tool host ("sandboxed", every other task's):
  wall time and the whole machine's busy CPU per episode, from /proc/stat (kernels and tool hosts
  included)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from envs.runtime.episode import Runtime, Slot
from envs.runtime.upstream import Upstream, Upstreams, UpstreamSpec
from schema.config import RuntimeConfig

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "servers" / "fixture_server.py"
SPEC = UpstreamSpec("fx", [sys.executable, str(FIXTURE)])


def busy_cpu_s() -> float:
    """Busy CPU-seconds of the whole machine so far (user+nice+system+irq+softirq, from /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / __import__("os").sysconf("SC_CLK_TCK")


async def task_episodes(rt: Runtime, transport: str, n: int) -> dict:
    """n episodes of a library task, one after another: open, the oracle's cells, judge, close."""
    from envs.format.library import get_task, split_cells
    from envs.format.task_env import EnvironmentCache, judge, open_task_episode

    task = get_task("retail_clearance_markdown")
    cache = EnvironmentCache()
    cells = split_cells(task.oracle_source)
    try:
        ep = await open_task_episode(rt, task, "v0", cache, transport)  # builds the environment once
        await ep.close()
        opens, walls = [], []
        cpu0 = busy_cpu_s()
        for _ in range(n):
            while rt._pool.qsize() < 1:
                await asyncio.sleep(0.05)
            t0 = time.perf_counter()
            ep = await open_task_episode(rt, task, "v0", cache, transport)
            opens.append(time.perf_counter() - t0)
            for cell in cells:
                await ep.run_program(cell)
            if hasattr(ep, "stop"):
                await ep.stop()
            verdict = await asyncio.to_thread(judge, task, "v0", ep.final_state(), "", cache)
            await ep.close()
            walls.append(time.perf_counter() - t0)
            assert verdict.criteria, verdict
        cpu = busy_cpu_s() - cpu0
    finally:
        cache.cleanup()
    return {"open": ms(opens), "episode": ms(walls), "busy_cpu_s_per_episode": round(cpu / n, 3)}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(pct(values, 0.5) * 1000, 2), "p90_ms": round(pct(values, 0.9) * 1000, 2),
            "mean_ms": round(statistics.mean(values) * 1000, 2), "n": len(values)}


def memory_of(pids: list[int]) -> dict[str, float]:
    rss = uss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                key, _, rest = line.partition(":")
                if key == "Rss":
                    rss += int(rest.split()[0])
                elif key in ("Private_Clean", "Private_Dirty"):
                    uss += int(rest.split()[0])
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    return {"rss_mb": round(rss / 1024, 1), "uss_mb": round(uss / 1024, 1)}


async def bench(args: argparse.Namespace) -> dict:
    out: dict = {"host": {"cpus": __import__("os").cpu_count()}}
    async with Runtime(RuntimeConfig(warm_pool=2)) as rt:
        out["limits_mode"] = rt.limits_mode
        router = Upstreams([Upstream(SPEC)])
        await router.start()
        try:
            # cold start: a new sandboxed kernel, ready to run a program
            cold = []
            cpu0 = busy_cpu_s()  # the pool is full (Runtime.start waits for it): only these starts run
            for _ in range(args.cold):
                t0 = time.perf_counter()
                slot = await Slot(rt.root, rt.config, rt.limits).start()
                cold.append(time.perf_counter() - t0)
                await slot.destroy()
            cold_cpu_s = (busy_cpu_s() - cpu0) / args.cold
            # warm open: take a pooled kernel and attach the (already running) tool servers
            warm = []
            for _ in range(args.warm):
                while rt._pool.qsize() < 1:  # measure the warm path only: wait for the refill
                    await asyncio.sleep(0.05)
                t0 = time.perf_counter()
                ep = await rt.open_episode(router=router)
                warm.append(time.perf_counter() - t0)
                await ep.close()
            # the machine's busy CPU per start (the kernel's imports are most of it): a start's cost in
            # CPU, which bounds how many episodes a core opens per minute, besides its wall time
            out["cold_kernel_start"] = {**ms(cold), "busy_cpu_ms_per_start": round(cold_cpu_s * 1000)}
            out["warm_episode_open"] = ms(warm)
            out["cold_over_warm_p50"] = round(pct(cold, 0.5) / pct(warm, 0.5), 1)

            while rt._pool.qsize() < 1:
                await asyncio.sleep(0.05)
            ep = await rt.open_episode(router=router)
            trips = []
            for _ in range(args.calls):
                t0 = time.perf_counter()
                await ep.run_program("print(1)")
                trips.append(time.perf_counter() - t0)
            out["trivial_program_round_trip"] = ms(trips)

            # in-kernel tool calls (timed inside the kernel) against direct MCP client calls to another
            # process of the same server, in alternating batches: the host's speed changes by the second
            # here, and alternating puts both sides in the same moments
            params = StdioServerParameters(command=SPEC.command[0], args=SPEC.command[1:])
            kernel_ts: list[float] = []
            direct: list[float] = []
            batch = 25
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("add", {"a": 0, "b": 0})
                await ep.run_program("import time, json\ntools['add'](a=0, b=0)")
                for _ in range(max(1, args.tool_calls // batch)):
                    r = await ep.run_program(
                        f"ts = []\nfor i in range({batch}):\n    t = time.perf_counter(); tools['add'](a=i, b=1)\n"
                        "    ts.append(time.perf_counter() - t)\nprint(json.dumps(ts))")
                    kernel_ts += json.loads(r.text)
                    for i in range(batch):
                        t0 = time.perf_counter()
                        await session.call_tool("add", {"a": i, "b": 1})
                        direct.append(time.perf_counter() - t0)
            kernel_p50, kernel_mean = pct(kernel_ts, 0.5), statistics.mean(kernel_ts)
            pids = ep.slot.kernel.limits.pids() if ep.slot.kernel.limits else []
            out["idle_kernel_memory"] = memory_of(pids) | {"processes": len(pids)}
            await ep.close()
        finally:
            await router.close()

        out["tool_call"] = {"in_kernel_p50_ms": round(kernel_p50 * 1000, 3),
                            "in_kernel_mean_ms": round(kernel_mean * 1000, 3),
                            "direct_client_p50_ms": round(pct(direct, 0.5) * 1000, 3),
                            "in_kernel_over_direct_p50": round(kernel_p50 / pct(direct, 0.5), 2),
                            "calls_each": len(direct)}

        # throughput: 8 concurrent episodes (own tool server each), 3 programs each
        sem = asyncio.Semaphore(8)

        async def one(i: int) -> None:
            async with sem:
                async with await rt.open_episode([SPEC]) as e:
                    await e.run_program("rows = tools['rows'](n=50)")
                    await e.run_program("total = sum(r['sq'] for r in rows)")
                    await e.run_program("print(total, tools['add'](a=total, b=1))")

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(args.episodes)))
        elapsed = time.perf_counter() - t0
        out["episodes_8_concurrent"] = {"episodes": args.episodes, "seconds": round(elapsed, 2),
                                        "episodes_per_minute": round(args.episodes / elapsed * 60, 1),
                                        "note": "each episode starts its own stdio tool server process"}
        if args.task_episodes:
            inproc = await task_episodes(rt, "inprocess", args.task_episodes)
            sandboxed = await task_episodes(rt, "sandboxed", args.task_episodes)
            out["library_task_episode"] = {
                "inprocess": inproc, "sandboxed": sandboxed,
                "sandboxed_over_inprocess_cpu": round(sandboxed["busy_cpu_s_per_episode"]
                                                      / inproc["busy_cpu_s_per_episode"], 2),
                "sandboxed_over_inprocess_wall_p50": round(sandboxed["episode"]["p50_ms"]
                                                           / inproc["episode"]["p50_ms"], 2)}
    out["targets"] = {"warm_open_p50_le_25ms": out["warm_episode_open"]["p50_ms"] <= 25,
                      "in_kernel_call_le_1.2x_direct": out["tool_call"]["in_kernel_over_direct_p50"] <= 1.2}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="trivial programs timed")
    parser.add_argument("--tool-calls", type=int, default=1000, help="tool calls timed, in the kernel and direct, each")
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--task-episodes", type=int, default=12, help="per transport (0: skip)")
    args = parser.parse_args()
    import uvloop

    print(json.dumps(uvloop.run(bench(args)), indent=2))


if __name__ == "__main__":
    main()
