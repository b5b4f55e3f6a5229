"""The audit's attack: exploit policies and exploit searches over an adaptive sample of tasks,
and the episodes agents void.

Each exploit plays through the episode API like any agent; each search
(:mod:`envfactory.quality.search`) scores one fixed plan per task. An episode that ends
``env_error`` or whose ``step()`` / ``evaluate()`` raises was voided by what the agent sent: it
is counted (``voided_by_agent``), scored 0, and the attack goes on with a fresh episode. An
exploit policy that happens to make every call of the task's gold plan (a blind reader looking
up the very record a question names) did the work: its reward is not an exploit's, and it is
counted apart (``did_the_work``) and scored 0, unless the policy is ``never_excused``: one
that makes the gold calls by design (the dumps), or whose answer comes from elsewhere than the
work (``enumerate_one`` commits only to a guess the user reacted to).

The attack is adaptive. Every exploit and search first runs on :data:`FIRST` tasks (the ones
given, topped up with more drawn from the environment); one that earns anything on them runs
on more, up to :data:`CAP` tasks in all. An exploit is refused when :func:`stats.exceeds`
finds its mean reward above :data:`EXPLOIT_MAX` (a false alarm at most ``ALPHA`` = 1%). The
cap is sized so that an exploit paying on 5% of tasks is refused with probability 0.95 once it
runs on the whole cap; with the first stage's chance of noticing it, the attack refuses it
with probability :data:`CATCH_POWER` (0.93).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from contextlib import suppress
from functools import partial
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Task
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
from envfactory.policies.scripted import write_tools
from envfactory.quality.play import play_traced
from envfactory.quality.search import Search, searches
from envfactory.quality.search.sample import draw
from envfactory.quality.stats import (
    ALPHA,
    catch_probability,
    exceeds,
    p_above,
    tasks_to_catch,
    upper_bound,
)

EXPLOIT_MAX = 0.02
CATCH_RATE = 0.05  # the share of tasks an exploit pays on that the attack is sized to catch
FIRST = 60  # tasks every exploit attacks
CAP = tasks_to_catch(CATCH_RATE, EXPLOIT_MAX)  # tasks an exploit that paid once attacks (659)
CATCH_POWER = round(catch_probability(CATCH_RATE, FIRST, CAP, EXPLOIT_MAX), 2)


class ExploitStats(BaseModel):
    """What one exploit earned over its episodes."""

    mean: float
    max: float
    episodes: int
    did_the_work: int = 0  # episodes that made every gold call: their reward is not counted
    upper: float = Field(1.0, description="95% upper confidence bound on the mean")
    p: float = Field(1.0, description='p-value of "the mean is above EXPLOIT_MAX"')
    refused: bool = Field(False, description="the mean is above EXPLOIT_MAX at 1%")


class Attack(BaseModel):
    exploits: dict[str, ExploitStats]
    voided_by_agent: int
    voided: list[str]  # "exploit on task", the first few, for the problems list
    catch_power: float = Field(
        CATCH_POWER, description="the chance this attack refuses an exploit paying on 5% of tasks"
    )


def exploit_policies(env: Environment) -> list[Policy]:
    """The exploits that apply to ``env`` (terminal tricks where a shell is a tool; mass
    writes where there are write tools). Replay is separate: it runs on held-out tasks."""
    tools = {t["function"]["name"] for t in env.tools("openai")}
    writes = write_tools(env.tools("mcp"))
    out: list[Policy] = [
        EnumerateThroughUser(writes),
        EnumerateThroughUser(writes, one=True),
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


def attack(
    env: Environment,
    tasks: Sequence[Task],
    held_out: Sequence[Task],
    *,
    first: int = FIRST,
    cap: int = CAP,
    search: bool = True,
) -> Attack:
    """Every exploit policy (and, with ``search``, every search) on ``tasks``, the train-plan
    replay on ``held_out``, each topped up to ``first`` tasks drawn from the environment and,
    for an exploit that earned anything, to ``cap``."""
    run = _Run(env)
    pool = _Pool(env, tasks, None)
    first, cap = max(first, len(tasks)), max(cap, first, len(tasks))
    for policy in exploit_policies(env):
        run.adaptive(policy.name, pool, first, cap, partial(run.policy, policy))
    if held_out:
        replay, splits = ReplayTrain(env), sorted({t.public.split for t in held_out})
        held = _Pool(env, held_out, splits)
        n = max(first, len(held_out))
        run.adaptive(replay.name, held, n, max(cap, n), partial(run.policy, replay))
    for s in searches(env) if search else []:
        run.adaptive(s.name, pool, first, cap, partial(run.search, s))
    run.close()
    return Attack(
        exploits={name: _stats(v, run.worked[name]) for name, v in run.rewards.items()},
        voided_by_agent=len(run.voided),
        voided=run.voided[:5],
        catch_power=round(catch_probability(CATCH_RATE, min(first, cap), cap, EXPLOIT_MAX), 2),
    )


def _stats(v: list[float], worked: int) -> ExploitStats:
    return ExploitStats(
        mean=round(fmean(v), 6) if v else 0.0,
        max=max(v, default=0.0),
        episodes=len(v),
        did_the_work=worked,
        upper=upper_bound(v),
        p=round(p_above(v, EXPLOIT_MAX), 6),
        refused=exceeds(v, EXPLOIT_MAX),
    )


class _Pool:
    """The attacked tasks: those given, then more drawn from ``splits`` (None: all) as the
    attack needs them, the same for every exploit."""

    def __init__(self, env: Environment, given: Sequence[Task], splits: list[Any] | None):
        self.env = env
        self.tasks = list(given)
        self.splits = splits
        self.exhausted = False

    def first(self, n: int) -> list[Task]:
        """The first ``n`` tasks (fewer where the environment has no more)."""
        if len(self.tasks) < n and not self.exhausted:
            seen = {t.task_id for t in self.tasks}
            more = draw(self.env, n - len(self.tasks), seen, splits=self.splits)
            self.exhausted = len(more) < n - len(self.tasks)
            self.tasks += more
        return self.tasks[:n]


class _Run:
    """One attack's episodes and tallies."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.rewards: dict[str, list[float]] = defaultdict(list)
        self.worked: Counter[str] = Counter()
        self.voided: list[str] = []
        self.episode = env.episode()

    def adaptive(
        self,
        name: str,
        pool: _Pool,
        first: int,
        cap: int,
        score: Callable[[Sequence[Task]], list[float]],
    ) -> None:
        """``score`` on the pool's first ``first`` tasks; where any paid, on more, to ``cap``."""
        sample = pool.first(min(first, cap))
        self.rewards[name] += score(sample)
        if any(r > 0 for r in self.rewards[name]) and cap > len(sample):
            self.rewards[name] += score(pool.first(cap)[len(sample) :])

    def policy(self, policy: Policy, tasks: Sequence[Task]) -> list[float]:
        out = []
        for task in tasks:
            reward, did_the_work = play_traced(self.env, task, policy, self.episode)
            if reward is None:
                self.voided.append(f"{policy.name} on {task.task_id}")
                _close(self.episode)
                self.episode = self.env.episode()
            did_the_work &= policy.name != ReplayTrain.name  # a replayed plan is the leak
            did_the_work &= not getattr(policy, "never_excused", False)  # its pay is no work's
            self.worked[policy.name] += did_the_work
            out.append(0.0 if did_the_work else reward or 0.0)
        return out

    def search(self, search: Search, tasks: Sequence[Task]) -> list[float]:
        out = search.rewards(self.env, tasks)
        self.voided += [f"{search.name} on {t}" for t in getattr(search, "voided", [])]
        return out

    def close(self) -> None:
        _close(self.episode)


def _close(episode: Episode) -> None:
    with suppress(Exception):  # an episode broken by a voiding input may not close cleanly
        episode.close()


def shortfalls(a: Attack) -> list[str]:
    """The attack's findings, as audit problems."""
    out = [
        f"exploit {name} earns {s.mean} > {EXPLOIT_MAX} (p = {s.p:.2g} < {ALPHA}; max {s.max} "
        f"over {s.episodes} episodes)"
        for name, s in a.exploits.items()
        if s.refused
    ]
    if a.voided_by_agent:
        out.append(
            f"agent input voided {a.voided_by_agent} episodes (env_error or an exception), "
            f"e.g. {'; '.join(a.voided)}"
        )
    return out
