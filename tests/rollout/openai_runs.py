"""Running the engine against the test server: shared by the rollout tests (a module of its
own, not the conftest, so that no test imports a conftest by name)."""

from __future__ import annotations

import asyncio

from chat_server import ChatServer

from envfactory.harness import HarnessConfig
from envfactory.policies.openai import OpenAIPolicy
from envfactory.rollout import EngineConfig, RetryConfig, RolloutEngine, RunSummary, TaskRef
from envfactory.trajectory import EpisodeRecord, TrajectoryStore

FAST_RETRY = RetryConfig(attempts=3, base_s=0.01, max_s=2.0)


def run_openai(
    server: ChatServer,
    refs: list[TaskRef],
    *,
    harness: HarnessConfig | None = None,
    config: EngineConfig | None = None,
    store: TrajectoryStore | None = None,
    **policy: object,
) -> tuple[RunSummary, list[EpisodeRecord]]:
    """Run ``refs`` through the engine with a policy behind the test server."""
    engine = RolloutEngine(
        OpenAIPolicy(server.base_url, "scripted-brain", api_key="test-key", **policy),  # type: ignore[arg-type]
        harness=harness,
        config=config or EngineConfig(concurrency=8, retry=FAST_RETRY, call_timeout_s=10),
        store=store,
    )

    async def main() -> RunSummary:
        try:
            return await engine.run(refs)
        finally:
            await engine.aclose()

    return asyncio.run(main()), engine.records
