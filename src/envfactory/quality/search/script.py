"""Fixed exploit plans, played as ordinary episodes: the searches' way of scoring a plan.

A plan is a list of tool calls (each tagged with the gold step it stands for, so the user's
held-back facts are still asked for before the step that needs them) and a final reply. It
runs through :class:`~envfactory.policies.scripted.Oracle` on the public episode API, like any
agent; an episode the agent's input voided scores 0 (the adversary counts voiding itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import PlanStep, Task
from envfactory.policies.scripted import Oracle
from envfactory.quality.play import play

Step = tuple[int, PlanStep]
"""A plan step and the index of the gold step it stands for (-1: none, a step of its own)."""


class Plan(Oracle):
    """The oracle, playing a given plan and reply instead of the task's gold ones."""

    def __init__(self, steps: Sequence[Step], answers: Sequence[Any]) -> None:
        super().__init__()
        self.steps = list(steps)
        self.given = list(answers)

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        super().start(task, tools)
        self.plan = [step for _, step in self.steps]
        self.answers = list(self.given)
        gold = [index for index, _ in self.steps]
        self.asks = {
            next((p for p, g in enumerate(gold) if g >= a.before_step), len(gold)): list(a.facts)
            for a in task.hidden.asks
        }


class Player:
    """Plays plans on one environment, reusing an episode while no input voids it."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.episode: Episode | None = None
        self.voided: list[str] = []  # the tasks whose episode the agent's input voided

    def reward(self, task: Task, steps: Sequence[Step], answers: Sequence[Any] = ()) -> float:
        """What ``steps`` then a reply giving ``answers`` earn on ``task``."""

        if self.episode is None:
            self.episode = self.env.episode()
        reward = play(self.env, task, Plan(steps, answers), self.episode)
        if reward is None:
            self.voided.append(task.task_id)
            self.close()
        return reward or 0.0

    def observe(self, task: Task, calls: Sequence[PlanStep]) -> list[str]:
        """What ``calls``, made at the start of ``task``, show (the text a model reads)."""
        if self.episode is None:
            self.episode = self.env.episode()
        shown = []
        try:
            self.episode.reset(task)
            for call in calls:
                shown.append(
                    self.episode.step(ToolCall(tool=call.tool, arguments=call.arguments)).content
                )
        except Exception:  # the agent's input voided the episode: it shows nothing more
            self.close()
        return shown

    def close(self) -> None:
        if self.episode is not None:
            with suppress(Exception):  # a voided episode may not close cleanly
                self.episode.close()
        self.episode = None


def gold_steps(task: Task) -> list[Step]:
    """The task's gold plan, each step tagged with its own index."""
    return list(enumerate(task.hidden.gold_plan))


def commit_tool(env: Environment) -> tuple[str, str] | None:
    """The tool an answer is committed with (``answer`` and its one required parameter), in
    worlds that have one; elsewhere the final reply is the answer."""
    for tool in env.tools("mcp"):
        required = tool.get("inputSchema", {}).get("required", [])
        if tool["name"] == "answer" and len(required) == 1:
            return "answer", str(required[0])
    return None


def reply_steps(env: Environment, values: Sequence[Any]) -> list[Step]:
    """The calls that commit ``values`` as the answer (none where the reply is the answer)."""
    commit = commit_tool(env)
    if commit is None or not values:
        return []
    tool, param = commit
    return [(-1, PlanStep(tool=tool, arguments={param: str(values[0])}))]
