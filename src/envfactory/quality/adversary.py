"""The audit's attack: exploit policies over a sample of tasks, and the episodes agents void.

Each exploit plays through the episode API like any agent. An episode that ends ``env_error``
or whose ``step()`` / ``evaluate()`` raises was voided by what the agent sent: it is counted
(``voided_by_agent``), scored 0, and the attack goes on with a fresh episode. An exploit that
happens to make every call of the task's gold plan (a blind reader looking up the very record a
question names) did the work: its reward is not an exploit's, and it is counted apart
(``did_the_work``) and scored 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from contextlib import suppress
from statistics import fmean
from typing import Any

from pydantic import BaseModel

from envfactory.env import Environment
from envfactory.episode.base import Episode
from envfactory.episode.types import ToolCall
from envfactory.policies.dumps import dump_policies
from envfactory.policies.exploits import (
    LONG_REPLY,
    TRICKS,
    EnumerateThroughUser,
    FuzzArguments,
    MassWrites,
    ReplayTrain,
    Shotgun,
    TerminalTrick,
)
from envfactory.policies.scripted import Policy, write_tools
from envfactory.tasks.types import Task

EXPLOIT_MAX = 0.02


class ExploitStats(BaseModel):
    """What one exploit earned over its episodes."""

    mean: float
    max: float
    episodes: int
    did_the_work: int = 0  # episodes that made every gold call: their reward is not counted


class Attack(BaseModel):
    exploits: dict[str, ExploitStats]
    voided_by_agent: int
    voided: list[str]  # "exploit on task", the first few, for the problems list


def exploit_policies(env: Environment) -> list[Policy]:
    """The exploits that apply to ``env`` (terminal tricks where a shell is a tool; mass
    writes where there are write tools). Replay is separate: it runs on held-out tasks."""
    tools = {t["function"]["name"] for t in env.tools("openai")}
    writes = write_tools(env.tools("mcp"))
    out: list[Policy] = [
        EnumerateThroughUser(writes),
        Shotgun(),
        Shotgun(chars=LONG_REPLY),
        FuzzArguments(),
        *dump_policies(writes),
    ]
    if writes:
        out.append(MassWrites(writes))
    if "run_command" in tools:
        out += [TerminalTrick(t) for t in TRICKS]
    extra = getattr(env, "exploit_policies", None)  # a kind's own attacks (repository worlds)
    if callable(extra):
        out += extra()
    return out


def play(env: Environment, task: Task, policy: Policy, episode: Episode) -> float | None:
    """One episode of ``policy``: its reward, or None when the agent's input voided it
    (``env_error``, or an exception out of ``step()`` or ``evaluate()``). The policy's own
    errors are not caught: they are the audit's bugs."""
    return _play(env, task, policy, episode)[0]


def _play(
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
    return verdict.reward or 0.0, _made_gold_calls(task, calls)


def _made_gold_calls(task: Task, calls: list[tuple[str, Any]]) -> bool:
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


def attack(env: Environment, tasks: Sequence[Task], held_out: Sequence[Task]) -> Attack:
    """Every exploit on ``tasks``; the train-plan replay on ``held_out``."""
    rewards: dict[str, list[float]] = defaultdict(list)
    worked: Counter[str] = Counter()
    voided: list[str] = []
    runs: list[tuple[Policy, Sequence[Task]]] = [(p, tasks) for p in exploit_policies(env)]
    if held_out:
        runs.append((ReplayTrain(env), held_out))
    episode = env.episode()
    for policy, sample in runs:
        for task in sample:
            reward, did_the_work = _play(env, task, policy, episode)
            if reward is None:
                voided.append(f"{policy.name} on {task.task_id}")
                _close(episode)
                episode = env.episode()
            did_the_work &= policy.name != ReplayTrain.name  # a replayed plan is the leak
            did_the_work &= not getattr(policy, "uses_gold_reads", False)  # work by design
            worked[policy.name] += did_the_work
            rewards[policy.name].append(0.0 if did_the_work else reward or 0.0)
    _close(episode)
    return Attack(
        exploits={
            name: ExploitStats(
                mean=round(fmean(v), 6), max=max(v), episodes=len(v), did_the_work=worked[name]
            )
            for name, v in rewards.items()
        },
        voided_by_agent=len(voided),
        voided=voided[:5],
    )


def _close(episode: Episode) -> None:
    with suppress(Exception):  # an episode broken by a voiding input may not close cleanly
        episode.close()


def shortfalls(a: Attack) -> list[str]:
    """The attack's findings, as audit problems."""
    out = [
        f"exploit {name} earns {s.mean} > {EXPLOIT_MAX} (max {s.max} over {s.episodes} episodes)"
        for name, s in a.exploits.items()
        if s.mean > EXPLOIT_MAX
    ]
    if a.voided_by_agent:
        out.append(
            f"agent input voided {a.voided_by_agent} episodes (env_error or an exception), "
            f"e.g. {'; '.join(a.voided)}"
        )
    return out
