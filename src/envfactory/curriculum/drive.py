"""Rollouts steered by the curriculum: rounds of groups drawn from it, outcomes fed back.

Round ``i`` of a run in ``out`` draws ``groups`` tasks (an environment by learnability, a level
of its frontier window, a fresh task index, or with a gap targeter one of a few fresh ones
drawn toward the agent's gaps) and runs them with the rollout engine into ``out/round-000i``;
every scored episode is reported to the curriculum as it finishes, so the next round is drawn
from the updated frontiers. The tasks of a round are saved in the curriculum store before it
starts, so a killed run resumes the same round (``resume=True``) and re-reports every episode
the round's store holds: the store counts each episode once, so nothing is lost and nothing is
counted twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envfactory.contract.tasks import Split
from envfactory.curriculum.controller import Curriculum
from envfactory.curriculum.gaps import GapTargeter
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.registry import make
from envfactory.rollout.engine import Listener
from envfactory.rollout.run import RunExists, run_in
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import EPISODES, read_records


@dataclass(frozen=True)
class Rounds:
    """How many rounds, of how many groups, from which split."""

    rounds: int
    groups: int
    split: Split = "train"
    envs: tuple[str, ...] = ()  # the environments to draw from (all the curriculum's: empty)
    targeter: GapTargeter | None = None  # picks among candidate tasks, toward an agent's gaps


def report(curriculum: Curriculum, rec: EpisodeRecord) -> None:
    """Count an episode (unscored ones are ignored by the curriculum)."""
    reward = rec.reward if rec.scored else None
    curriculum.record(rec.episode_id, rec.env_id, rec.difficulty, reward)


def draw_round(curriculum: Curriculum, plan: Rounds) -> list[TaskRef]:
    """A round's fresh tasks, drawn from the curriculum."""
    refs, split = [], plan.split
    for _ in range(plan.groups):
        d = curriculum.draw(among=plan.envs or None)
        capacity = make(d.env_id).capacity(split, d.difficulty)
        if plan.targeter is None:
            index = curriculum.take_index(d, split, capacity)
        else:
            fresh = [
                curriculum.take_index(d, split, capacity) for _ in range(plan.targeter.candidates)
            ]
            index = plan.targeter.choose(d.env_id, split, d.difficulty, fresh)
        refs.append(TaskRef(d.env_id, split, d.difficulty, index))
    return refs


async def run_rounds(
    out: Path,
    curriculum: Curriculum,
    policy: RolloutPolicy,
    plan: Rounds,
    *,
    harness: HarnessConfig | None = None,
    config: EngineConfig | None = None,
    resume: bool = False,
    on_episode: Listener | None = None,
    on_stop: Callable[[], None] | None = None,
) -> list[RunSummary]:
    """Run (or resume) ``plan`` into ``out``; returns the summary of each round run now."""
    store, run = curriculum.store, str(out.resolve())
    if not resume and store.round_refs(run, 0) is not None:
        raise RunExists(f"{out} already holds a curriculum run: pass --resume, or another --out")
    stopped = False

    def listener(rec: EpisodeRecord) -> None:
        report(curriculum, rec)
        if on_episode is not None:
            on_episode(rec)

    def stop() -> None:
        nonlocal stopped
        stopped = True
        if on_stop is not None:
            on_stop()

    summaries = []
    for i in range(plan.rounds):
        saved = store.round_refs(run, i)
        if saved is not None and saved[1]:
            continue
        if saved is None:
            refs = draw_round(curriculum, plan)
            with store.commit() as db:
                store.put_round(db, run, i, [r.task_id for r in refs], False)
        else:
            refs = [TaskRef.parse(t) for t in saved[0]]
        folder = out / f"round-{i:04d}"
        summary = await run_in(
            folder,
            refs,
            policy,
            harness=harness,
            config=config,
            resume=saved is not None,
            on_episode=listener,
            on_stop=stop,
        )
        for rec in read_records(folder / EPISODES):  # what a killed run recorded, unreported
            report(curriculum, rec)
        summaries.append(summary)
        if stopped or summary.groups.get("incomplete", 0):
            break
        with store.commit() as db:
            store.put_round(db, run, i, [r.task_id for r in refs], True)
    return summaries
