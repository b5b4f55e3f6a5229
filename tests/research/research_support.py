"""Helpers the research worlds' tests share."""

from __future__ import annotations

from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import Task
from envfactory.research.hidden import ResearchHidden
from envfactory.research.world import ResearchWorld


def hidden(task: Task) -> ResearchHidden:
    assert isinstance(task.hidden, ResearchHidden)
    return task.hidden


def commit(env: ResearchWorld, task: Task, *values: Any) -> float:
    """Answer ``values`` in turn with the answer tool; the reward."""
    episode = env.episode()
    episode.reset(task)
    for value in values:
        episode.step(ToolCall(tool="answer", arguments={"value": value}))
    verdict = episode.evaluate()
    assert verdict.reward is not None
    return verdict.reward
