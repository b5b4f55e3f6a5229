"""veRL: an agent loop that plays an envfactory episode through veRL's server manager.

:class:`EnvfactoryAgentLoop` is a veRL ``AgentLoopBase`` registered as ``envfactory_agent``:
a dataset row names its task (``extra_info.task_id``, see :func:`verl_rows`), the loop builds
the prompt with veRL's own token builder, generates token ids through the server manager, reads
the Hermes / Qwen ``<tool_call>`` blocks of each reply, steps the episode, and appends the tool
results (and the simulated user's replies) as context tokens. The output's ``response_mask`` is
1 on generated tokens and 0 on everything the environment wrote; ``reward_score`` is the
verifier's reward. Settings come from the trainer config's optional ``envfactory`` section
(any :class:`~envfactory.harness.config.HarnessConfig` field).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from envfactory.harness.config import HarnessConfig
from envfactory.integrations.local_model import reply_text
from envfactory.integrations.text import TextEpisode, task_openings
from envfactory.rollout.types import TaskRef

AGENT_NAME = "envfactory_agent"


def row_task(row: dict[str, Any]) -> str:
    """The task address of a veRL dataset row: ``extra_info.task_id`` (or ``task_id``)."""
    extra = row.get("extra_info") or {}
    task_id = extra.get("task_id") if isinstance(extra, dict) else None
    task_id = task_id or row.get("task_id")
    if not isinstance(task_id, str):
        raise ValueError("an envfactory row needs extra_info.task_id (env/split/difficulty/index)")
    return task_id


def verl_rows(
    tasks: Iterable[TaskRef | str], harness: HarnessConfig | None = None
) -> list[dict[str, Any]]:
    """Rows for veRL's RL dataset (write them to Parquet): the prompt, the agent loop to run,
    and the task in ``extra_info``."""
    harness = harness or HarnessConfig(tool_format="text")
    return [
        {
            "data_source": f"envfactory/{ref.env_id}",
            "prompt": messages,
            "agent_name": AGENT_NAME,
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"task_id": ref.task_id, "index": i},
        }
        for i, (ref, messages) in enumerate(task_openings(tasks, harness))
    ]


@register(AGENT_NAME)
class EnvfactoryAgentLoop(AgentLoopBase):  # type: ignore[misc]
    """One envfactory episode per dataset row; see the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_length = int(self.rollout_config.response_length)
        settings = dict(self.config.get("envfactory", None) or {})
        turns = self.rollout_config.get("multi_turn", {}).get("max_assistant_turns")
        if turns and "max_turns" not in settings:
            settings["max_turns"] = int(turns)
        self.harness = HarnessConfig(**{"tool_format": "text", **settings})

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        loop = asyncio.get_running_loop()
        episode = await loop.run_in_executor(None, TextEpisode, row_task(kwargs), self.harness)
        try:
            return await self._play(episode, sampling_params)
        finally:
            episode.close()

    async def _play(self, episode: TextEpisode, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        loop = asyncio.get_running_loop()
        request_id = uuid4().hex
        metrics: dict[str, float] = {"generate_sequences": 0.0, "tool_calls": 0.0}
        ids: list[int] = await self.ct_build_initial_tokens(list(episode.messages))
        prompt_len = len(ids)
        mask: list[int] = []
        logprobs: list[float] | None = []
        while not episode.done:
            t0 = loop.time()
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=ids, sampling_params=sampling_params
            )
            metrics["generate_sequences"] += loop.time() - t0
            if not out.log_probs:
                logprobs = None  # one call without logprobs: the episode has none
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                ids, out.token_ids, mask, logprobs, out.log_probs if logprobs is not None else None
            )
            ids = merged.token_ids
            if len(mask) >= self.response_length:
                break
            text = reply_text(self.tokenizer, out.token_ids)
            t0 = loop.time()
            replies = await loop.run_in_executor(None, episode.step, text)
            metrics["tool_calls"] += loop.time() - t0
            if episode.done or not replies:
                break
            before = episode.messages[: len(episode.messages) - len(replies)]
            merged, mask, logprobs = await self.ct_merge_context_msg(
                before, list(episode.messages), ids, mask, logprobs
            )
            ids = merged.token_ids
            if len(mask) >= self.response_length:
                break
        verdict = await loop.run_in_executor(None, episode.verdict)
        response = ids[prompt_len:]
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=ids[:prompt_len],
            response_ids=response[:n],
            response_mask=mask[:n],
            response_logprobs=logprobs[:n] if logprobs else None,
            reward_score=verdict.reward,
            num_turns=len(episode.messages) - 1,
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={
                "task_id": episode.ref.task_id,
                "status": verdict.status,
                "turn_scores": [],
                "tool_rewards": [],
            },
        )
