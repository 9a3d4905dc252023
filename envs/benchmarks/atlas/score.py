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
a claim whose call still fails is an error for the whole answer (Atlas scores that claim 0 silently).
"""

import asyncio
import json
import sys


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
            return await Strict(client, config).evaluate(claims, req["response"])
        except Exception as exc:  # noqa: BLE001 - any failure of the judge's calls is reported, not scored
            return {"error": f"{type(exc).__name__}: {exc}"[:2000], "claims": len(claims)}

    result = asyncio.run(run())
    with open(sys.argv[2], "w") as f:
        json.dump(result, f, default=str)


if __name__ == "__main__":
    main()
