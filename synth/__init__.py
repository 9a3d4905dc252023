"""Task synthesis: LLM-written tasks in the library's format, repaired until they verify, independently
audited, and validated at all four scales (`progagent synth run`; stages in synth/pipeline.py)."""
