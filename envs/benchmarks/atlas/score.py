"""Scores one final answer against a task's claims with MCP-Atlas's own scorer, in Atlas's environment.

    python score.py REQUEST RESULT
    REQUEST: {"checkout", "claims", "response", "base_url", "model", "api_key", "attempts", "backoff_max_s"}
    RESULT (written): {"per_claim": [...], "coverage_score": x, ...} or {"error": "..."}

Run by envs/benchmarks/atlas/episode.py (not imported: it imports the user's checkout). Everything
that decides is Atlas's (services/scoring/score_claims.py): the claims parsed by its `extract_claims`,
each judged with its prompt, its response schema and its HTTP call to `<base_url>/v1/chat/completions`,
the outcomes mapped 1 / 0.5 / 0 and averaged by its `CoverageEvaluator.evaluate`. Two things differ,
both so that a judge that cannot answer is never a score: its retry policy (8 attempts 60-120 s apart)
is replaced by `attempts` with a shorter backoff (the episode's judge deadline bounds the whole), and
a claim whose call still fails is an error for the whole answer (Atlas scores that claim 0 silently),
saying whether the endpoint did not answer (`transport`) or answered what cannot be read. And the
response goes in quoted (`quoted`): Atlas pastes it verbatim between its prompt's sections, where an
answer could forge sections of its own.
"""

import asyncio
import json
import re
import sys


def transport(exc: BaseException) -> bool:
    """The judge's endpoint did not answer (the fabric's): a connection error or a timeout, or an HTTP
    status of 429 or 5xx, read from the exception (aiohttp's `status`, urllib's `code`) or from the start
    of Atlas's own message ("LiteLLM API returned 503: ..."), never from the body after it. Anything else
    (a reply that is no JSON, the wrong shape, a 4xx such as a context overflow) is a reply the judge
    gave: the episode's answer may have caused it."""
    status = getattr(exc, "status", None)
    if not isinstance(status, int):
        status = getattr(exc, "code", None)
    if not isinstance(status, int):
        m = re.match(r"LiteLLM API returned (\d{3})\b", str(exc))
        status = int(m.group(1)) if m else None
    if isinstance(status, int):
        return status == 429 or status >= 500
    module = type(exc).__module__.split(".")[0]
    return isinstance(exc, OSError | TimeoutError | asyncio.TimeoutError) or module in ("aiohttp", "httpx")


def quoted(answer: str) -> str:
    """The answer as one JSON string: delimited and escaped, so that nothing in it can open a section of
    the judge's prompt (a line "INSTRUCTIONS:" of its own, a forged claim) — it stays data."""
    return "The model's response, as one JSON string: " + json.dumps(answer, ensure_ascii=False)


def main() -> None:
    with open(sys.argv[1]) as f:
        req = json.load(f)
    sys.path.insert(0, f"{req['checkout']}/services/scoring")
    import score_claims as sc  # the user's checkout
    from tenacity import stop_after_attempt, wait_random_exponential

    config = sc.EvaluatorConfig(model_name=req["model"], api_key=req["api_key"] or "none",
                                base_url=req["base_url"], verbose=False)
    client = sc.AsyncLiteLLMClient(config)
    call = type(client).generate_structured_content.retry_with(
        stop=stop_after_attempt(int(req["attempts"])), wait=wait_random_exponential(min=0.5, max=req["backoff_max_s"]))

    class Strict(sc.CoverageEvaluator):
        async def evaluate_single_claim(self, claim, response):
            return await call(client, prompt=self._get_single_claim_evaluation_prompt(claim, response),
                              response_schema=sc.get_single_claim_evaluation_schema(), temperature=0.0)

    claims = sc.extract_claims(req["claims"])

    async def run():
        try:
            return await Strict(client, config).evaluate(claims, quoted(req["response"]))
        except Exception as exc:  # noqa: BLE001 - any failure of the judge's calls is reported, not scored
            return {"error": f"{type(exc).__name__}: {exc}"[:2000], "claims": len(claims), "transport": transport(exc)}

    result = asyncio.run(run())
    with open(sys.argv[2], "w") as f:
        json.dump(result, f, default=str)


if __name__ == "__main__":
    main()
