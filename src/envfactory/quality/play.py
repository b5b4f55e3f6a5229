"""One episode of an exploit, as the audit plays it: its reward, or None where what the agent
sent voided it, and whether it made every call of the task's gold plan (the work, not an
exploit). The adversary, the searches and the self-test's exploits all play through here."""

from __future__ import annotations

from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Task


def play(env: Environment, task: Task, policy: Policy, episode: Episode) -> float | None:
    """One episode of ``policy``: its reward, or None when the agent's input voided it
    (``env_error``, or an exception out of ``step()`` or ``evaluate()``). The policy's own
    errors are not caught: they are the audit's bugs."""
    return play_traced(env, task, policy, episode)[0]


def play_traced(
    env: Environment, task: Task, policy: Policy, episode: Episode
) -> tuple[float | None, bool]:
    """:func:`play`'s reward, and whether the episode made every call of the gold plan."""
    obs = episode.reset(task)
    policy.start(task, env.tools("openai"))
    calls: list[tuple[str, Any]] = []
    while not obs.done:
        action = policy.act(obs)
        if isinstance(action, ToolCall):
            calls.append((action.tool, action.arguments))
        try:
            obs = episode.step(action)
        except Exception:
            return None, False
    try:
        verdict = episode.evaluate()
    except Exception:
        return None, False
    if verdict.status == "env_error":
        return None, False
    return verdict.reward or 0.0, made_gold_calls(task, calls)


def made_gold_calls(task: Task, calls: list[tuple[str, Any]]) -> bool:
    """Whether ``calls`` hold every call of the task's gold plan (a plan of at least one call
    whose arguments need nothing from the user): a call of the step's tool with each of the
    step's arguments (an optional extra one changes nothing the check reads)."""
    plan = getattr(task.hidden, "gold_plan", None) or []
    if not plan or any(step.from_user for step in plan):
        return False
    return all(
        any(
            tool == step.tool
            and isinstance(args, dict)
            and all(k in args and args[k] == v for k, v in step.arguments.items())
            for tool, args in calls
        )
        for step in plan
    )
