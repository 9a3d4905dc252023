"""MCP-Atlas on a real checkout with a scripted program and answer, its claims judged by the checkout's
own scorer (services/scoring/score_claims.py) against a replayed judge.

    .venv/bin/python bench/atlas_scripted.py ~/mcp-atlas TASKS.{parquet,csv} TASK_ID \
        --program 'print(tools["git_git_log"](repo_path="/data/repos/storyteller", max_count=3))' \
        --answer "The merge commit ..." --outcomes fulfilled,partially_fulfilled,not_fulfilled

The judge's LLM is the one boundary replaced: an endpoint on loopback answers each claim with the
next recorded outcome, as a chat completion in the OpenAI format; everything else (which tools the
model is offered, the servers on the /data copy, the prompt and schema sent per claim, the scoring
and averaging) is the checkout's and the adapter's. Prints one JSON object: the offline count of the
file, the tools offered, what the program printed, and the verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def replay_judge(outcomes: list[str]) -> tuple[ThreadingHTTPServer, str, list[str]]:
    seen: list[str] = []
    nxt = itertools.cycle(outcomes)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][0]["content"]
            claim = prompt.split("CLAIM TO EVALUATE:")[-1].split("MODEL RESPONSE TO ANALYZE:")[0].strip()
            seen.append(claim)
            content = {"claim_text": claim, "coverage_outcome": next(nxt), "justification": "replayed",
                       "confidence_level": 0.9}
            data = json.dumps({"id": "chatcmpl-replay", "object": "chat.completion", "created": int(time.time()),
                               "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                   "role": "assistant", "content": json.dumps(content)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", seen


async def main() -> int:
    import msgspec

    from envs.benchmarks.atlas.episode import AtlasTaskEnv
    from envs.benchmarks.atlas.kind import AtlasArgs
    from envs.kinds import ListContext, kind_named
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    p = argparse.ArgumentParser()
    p.add_argument("checkout")
    p.add_argument("tasks_file")
    p.add_argument("task")
    p.add_argument("--program", required=True)
    p.add_argument("--answer", required=True)
    p.add_argument("--outcomes", default="fulfilled")
    a = p.parse_args()
    said: list[str] = []
    server, url, seen = replay_judge(a.outcomes.split(","))
    try:
        refs = kind_named("mcp_atlas").refs(AtlasArgs(checkout=a.checkout, tasks_file=a.tasks_file, judge_base_url=url,
                                                      tasks=[a.task]), ListContext("atlas", said.append))
        everything = kind_named("mcp_atlas").refs(AtlasArgs(checkout=a.checkout, tasks_file=a.tasks_file,
                                                            judge_base_url=url), ListContext("atlas", said.append))
        env = AtlasTaskEnv(msgspec.structs.replace(refs[0], judge_base_url=url))
        async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
            t0 = time.monotonic()
            ep = await env.open(runtime)
            t1 = time.monotonic()
            offered = await ep.run_program("print(sorted(tools))")
            r = await ep.run_program(a.program)
            await ep.close()
        t2 = time.monotonic()
        verdict = await asyncio.to_thread(env.judge_shipped, b"", a.answer)
        t3 = time.monotonic()
    finally:
        server.shutdown()
    print(json.dumps({"said": said, "runnable_in_file": len(everything), "offered": offered.text.strip(),
                      "printed": r.text[:1500], "claims_judged": len(seen), "verdict": msgspec.to_builtins(verdict),
                      "open_s": round(t1 - t0, 2), "run_s": round(t2 - t1, 2), "judge_s": round(t3 - t2, 2)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
