"""Advantages for a batch of episode records, written into the records.

Episode level (``method``): ``grpo`` (group mean and std), ``drgrpo`` (group mean, no std),
``erpo`` (a baseline per environment across the batch, for one or few samples per task), and
``atgrpo`` (groups per agent and per turn, for episodes with several agents: each actor's k-th
call is compared with the other rollouts' k-th calls of that actor, on that actor's reward,
``metrics["reward/<actor>"]`` when an episode records one).

Turn level (``step``): ``none`` (every call gets the episode advantage), ``gigpo`` (plus ω times
the anchor-state step advantage of discounted returns) or ``rewardflow`` (each step is given
the value of the state it reached; a call gains ω times the value it added, V(after) −
V(before), which telescopes like any potential, so loops earn nothing). With ``shaping``, progress
shaping fills in step rewards the environment did not give (replaying each episode) and the
returns use them.

Episodes that are not scored (timeouts, environment and infrastructure failures) never enter a
baseline and get no advantage. Groups where nothing differs (zero variance) can be dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.credit.gigpo import gigpo_step_advantages
from envfactory.credit.rewardflow import Flow, StateGraph, state_values
from envfactory.credit.shaping import replay_potentials, shaped
from envfactory.credit.stats import normalise
from envfactory.credit.turns import turns
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.trajectory.record import EpisodeRecord

Method = Literal["grpo", "drgrpo", "erpo", "atgrpo"]
StepCredit = Literal["none", "gigpo", "rewardflow"]
METHODS: tuple[Method, ...] = ("grpo", "drgrpo", "erpo", "atgrpo")
STEP_CREDITS: tuple[StepCredit, ...] = ("none", "gigpo", "rewardflow")
ZERO = 1e-9


@dataclass(frozen=True)
class CreditConfig:
    """How advantages are computed; see the module docstring."""

    method: Method = "grpo"
    step: StepCredit = "none"
    omega: float = 1.0
    gamma: float = 1.0
    flow: Flow = "bfs"
    flow_gamma: float = 0.9
    shaping: bool = False
    filter_zero_variance: bool = False
    episode_config: EpisodeConfig | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: one of {', '.join(METHODS)}")
        if self.step not in STEP_CREDITS:
            raise ValueError(f"step {self.step!r}: one of {', '.join(STEP_CREDITS)}")
        if self.method == "atgrpo" and self.step != "none":
            raise ValueError("atgrpo assigns per-turn advantages itself: use step='none'")


@dataclass
class CreditResult:
    """The annotated records (copies; filtered groups left out) and what happened."""

    records: list[EpisodeRecord]
    filtered: list[str] = field(default_factory=list)
    unscored: int = 0
    replay_failed: int = 0


EnvLookup = Callable[[str], Environment]


def assign(
    records: Sequence[EpisodeRecord],
    config: CreditConfig | None = None,
    envs: EnvLookup = make,
    initial: Mapping[str, str] | None = None,
) -> CreditResult:
    """Annotate copies of ``records`` (any mix of groups and environments). Step credit needs
    each task's initial state hash: from ``initial`` ({task_id: hash}) or the environment."""
    cfg = config or CreditConfig()
    recs = [r.model_copy(deep=True) for r in records]
    result = CreditResult(records=[])
    for r in recs:
        r.advantage = None
        for c in r.calls:
            c.advantage = None
        if not r.scored:
            result.unscored += 1
    if cfg.shaping:
        result.replay_failed = sum(not _shape(r, cfg, envs) for r in recs if r.scored)
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in recs:
        groups[r.group_id].append(r)
    if cfg.method == "erpo":
        _baseline_per_env([r for r in recs if r.scored])
    for gid, members in groups.items():
        scored = [r for r in members if r.scored]
        if cfg.method in ("grpo", "drgrpo"):
            adv = normalise([_reward(r) for r in scored], std=cfg.method == "grpo")
            for r, a in zip(scored, adv, strict=True):
                r.advantage = a
        if cfg.method == "atgrpo":
            _per_agent_turn(scored)
        else:
            _turn_level(scored, cfg, envs, initial or {})
        flat = all(
            abs(r.advantage or 0.0) < ZERO and all(abs(c.advantage or 0.0) < ZERO for c in r.calls)
            for r in scored
        )
        if cfg.filter_zero_variance and flat:
            result.filtered.append(gid)
            continue
        result.records.extend(members)
    return result


def _reward(r: EpisodeRecord) -> float:
    assert r.reward is not None
    return r.reward


def _baseline_per_env(scored: list[EpisodeRecord]) -> None:
    by_env: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in scored:
        by_env[r.env_id].append(r)
    for members in by_env.values():
        for r, a in zip(members, normalise([_reward(r) for r in members]), strict=True):
            r.advantage = a


def _per_agent_turn(scored: list[EpisodeRecord]) -> None:
    cells: dict[tuple[str, int], list[tuple[EpisodeRecord, int]]] = defaultdict(list)
    for r in scored:
        seen: dict[str, int] = defaultdict(int)
        for i, c in enumerate(r.calls):
            cells[(c.actor, seen[c.actor])].append((r, i))
            seen[c.actor] += 1
    for (actor, _), members in cells.items():
        values = [r.metrics.get(f"reward/{actor}", _reward(r)) for r, _ in members]
        adv = normalise(values) if len(members) > 1 else [0.0]
        for (r, i), a in zip(members, adv, strict=True):
            r.calls[i].advantage = a
    for r in scored:
        who = r.actor or "agent"  # a seat's own record of a multi-agent episode: its calls
        mine = [c.advantage for c in r.calls if c.actor == who and c.advantage is not None]
        r.advantage = sum(mine) / len(mine) if mine else 0.0


def _initial(record: EpisodeRecord, envs: EnvLookup, known: Mapping[str, str]) -> str:
    """The hash of the task's initial state (a stand-in when the world cannot be made)."""
    if record.task_id in known:
        return known[record.task_id]
    ref = TaskRef.parse(record.task_id)
    try:
        return envs(ref.env_id).task(ref.split, ref.difficulty, ref.index).initial_hash
    except Exception:  # an environment gone since the run: anchors still group by task
        return f"start:{record.task_id}"


def _turn_level(
    scored: list[EpisodeRecord], cfg: CreditConfig, envs: EnvLookup, known: Mapping[str, str]
) -> None:
    if not scored:
        return
    if cfg.step == "none":
        for r in scored:
            for c in r.calls:
                c.advantage = r.advantage
        return
    initial = _initial(scored[0], envs, known)
    episodes = [turns(r, i, initial) for i, r in enumerate(scored)]
    rewards = [_reward(r) for r in scored]
    if cfg.step == "gigpo":
        step_adv = gigpo_step_advantages(episodes, rewards, gamma=cfg.gamma)
    else:
        finals = [ts[-1].after if ts else initial for ts in episodes]
        graph = StateGraph.build(list(zip(episodes, finals, rewards, strict=True)))
        values = state_values(graph, cfg.flow, cfg.flow_gamma)
        for r in scored:
            for s in r.steps:
                s.value = values.get(s.state_hash, 0.0)
        step_adv = {
            (t.episode, t.call): values[t.after] - values[t.before] for ts in episodes for t in ts
        }
    for i, r in enumerate(scored):
        base = r.advantage or 0.0
        for c in r.calls:
            c.advantage = base + cfg.omega * step_adv.get((i, c.index), 0.0)


def _shape(record: EpisodeRecord, cfg: CreditConfig, envs: EnvLookup) -> bool:
    """Fill missing step rewards with progress shaping; False when the replay failed."""
    try:
        env = envs(record.env_id)
    except Exception:
        return False
    phis = replay_potentials(env, record, cfg.episode_config)
    if phis is None:
        return False
    for i, (step, f) in enumerate(zip(record.steps, shaped(phis, cfg.gamma), strict=True)):
        if step.reward is None:
            step.reward = f
            if i < len(record.step_rewards):
                record.step_rewards[i] = f
    record.metrics["progress"] = phis[-1]
    return True
