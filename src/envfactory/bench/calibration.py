"""Calibration: how a real model does in every single-agent world, at every difficulty.

The embedded model (or any local model) runs ``tasks`` validation tasks per (world,
difficulty) through the rollout engine, tools in the prompt. Each cell reports success with a
95% Wilson interval, mean reward, and how well-formed its tool calls were: the share of the
calls it attempted that the world ran (a known tool with valid arguments), the share refused
for their arguments, turns used and tokens. A ``<tool_call>`` block that does not parse is an
attempted call that is not valid.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split, Task
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.quality.stats import wilson
from envfactory.registry import list_envs, make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord

BAD_ARGUMENTS = frozenset({"invalid_arguments", "malformed_action"})
REFUSED = BAD_ARGUMENTS | {"unknown_tool"}  # calls the world did not run


class CalibrationCell(BaseModel):
    """One (world, difficulty): the model's results over ``tasks`` tasks."""

    env: str
    difficulty: int
    tasks: int
    success: float = Field(description="share of episodes with reward 1")
    ci95: tuple[float, float] = Field(description="Wilson 95% interval of success")
    mean_reward: float
    tool_call_valid_rate: float | None = Field(
        description="calls the world ran / calls attempted (None: no call attempted)"
    )
    invalid_argument_rate: float | None = Field(
        description="calls refused for their arguments / calls attempted"
    )
    calls_attempted: int
    turns_mean: float = Field(description="model calls per episode")
    prompt_tokens: int
    completion_tokens: int
    faults: int = Field(0, description="episodes not scored (infrastructure); not in success")
    fault_reasons: list[str] = Field(
        default_factory=list, description="why episodes were not scored, most frequent first"
    )
    tool_format: str = Field("text", description="how tool calls travelled (the harness's)")
    split: str = Field("validation", description="the split the tasks came from")
    max_turns: int | None = Field(None, description="the model calls each episode was allowed")
    reach: float | None = Field(
        None,
        description="the scripted oracle's success on the same tasks within max_turns: the "
        "most a perfect agent scores in the cell (below 1 only where the budget is too short)",
    )

    @property
    def whole(self) -> bool:
        """Measured within reach with every episode scored: what the page counts as measured,
        and what a resumed run keeps (under ``--fixed-turns``, out of reach too)."""
        return self.reach == 1.0 and self.faults == 0


class _Tally:
    def __init__(self) -> None:
        self.rewards: list[float] = []
        self.attempted = self.valid = self.bad_args = self.turns = self.faults = 0
        self.prompt = self.completion = 0
        self.fault_reasons: Counter[str] = Counter()

    def add(self, rec: EpisodeRecord) -> None:
        if not rec.scored or rec.reward is None:
            self.faults += 1
            self.fault_reasons[rec.error or rec.status] += 1
            return
        self.rewards.append(rec.reward)
        self.turns += len(rec.calls)
        for call in rec.calls:
            self.prompt += call.prompt_tokens or 0
            self.completion += call.completion_tokens or 0
        for step in rec.steps:
            if step.actor != "agent":
                continue
            kind = step.action.get("type")
            if kind == "tool_call":
                self.attempted += 1
                self.valid += step.error not in REFUSED
                self.bad_args += step.error in BAD_ARGUMENTS
            elif kind == "message" and "<tool_call>" in str(step.action.get("content")):
                self.attempted += 1  # a call the model meant to make, which did not parse

    def cell(
        self, env: str, difficulty: int, harness: HarnessConfig, split: str, reach: float | None
    ) -> CalibrationCell:
        n = len(self.rewards)
        wins = sum(r >= 1.0 for r in self.rewards)
        rate = (lambda k: round(k / self.attempted, 4)) if self.attempted else (lambda k: None)
        return CalibrationCell(
            env=env,
            difficulty=difficulty,
            tasks=n,
            success=round(wins / n, 4) if n else 0.0,
            ci95=wilson(wins, n),
            mean_reward=round(fmean(self.rewards), 4) if n else 0.0,
            tool_call_valid_rate=rate(self.valid),
            invalid_argument_rate=rate(self.bad_args),
            calls_attempted=self.attempted,
            turns_mean=round(self.turns / n, 2) if n else 0.0,
            prompt_tokens=self.prompt,
            completion_tokens=self.completion,
            faults=self.faults,
            fault_reasons=[reason for reason, _ in self.fault_reasons.most_common(3)],
            tool_format=harness.tool_format,
            split=split,
            max_turns=harness.max_turns,
            reach=reach,
        )


#: How a cell's episodes run: with no limit of wall-clock time. They wait on one model
#: together, and 22 turns of ten long prompts on a shared CPU passed the engine's default of
#: 30 minutes an episode with nothing stuck: episodes cut off that way are faults, not scored
#: (hr at difficulty 4 kept 3 of its 10). A model behind a server has each call bounded, so a
#: hung server still ends the episode (an in-process model's calls are never timed out).
ENGINE = EngineConfig(concurrency=16, call_timeout_s=1800.0, episode_timeout_s=None)

#: The harness a small local model is measured under: calls decoded under the tools' grammar,
#: the first reply a call.
GRAMMAR_HARNESS = HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=4)


class ModelBand(BaseModel):
    """Where a real model stands in one world: success by difficulty, and its band, the
    levels it solves sometimes but not always (where RL on it has signal)."""

    model: str
    tool_format: str
    tasks: int = Field(description="tasks per difficulty")
    success: dict[int, float]
    reach: dict[int, float | None] = Field(
        description="per difficulty, the oracle's success within the same model calls"
    )
    band: list[int] = Field(description="difficulties with 0 < success < 1")


def model_bands(
    cells: Sequence[CalibrationCell], model: str, tool_format: str
) -> dict[str, ModelBand]:
    """Each world's :class:`ModelBand` from its calibration cells."""
    by_env: dict[str, list[CalibrationCell]] = defaultdict(list)
    for c in cells:
        by_env[c.env].append(c)
    return {
        env: ModelBand(
            model=model,
            tool_format=tool_format,
            tasks=min(c.tasks for c in got),
            success={c.difficulty: c.success for c in got},
            reach={c.difficulty: c.reach for c in got},
            band=[c.difficulty for c in got if 0 < c.success < 1],
        )
        for env, got in by_env.items()
    }


def single_agent_worlds() -> list[str]:
    return [e for e in list_envs() if not make(e).seats]


def calibrate(
    policy: RolloutPolicy,
    envs: Sequence[str],
    tasks: int,
    difficulties: Sequence[int] | None = None,
    split: Split = "validation",
    max_turns: int = 4,
    harness: HarnessConfig | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    on_world: Callable[[list[CalibrationCell]], None] | None = None,
    skip: Container[tuple[str, int]] = (),
    fit_plan: bool = True,
) -> list[CalibrationCell]:
    """``tasks`` episodes of ``policy`` per (world, difficulty) of ``split`` (every level of
    each world by default), one task each, under ``harness`` (default: tools in the prompt,
    ``max_turns`` calls). With ``fit_plan`` a cell's episodes get at least the model calls its
    longest gold plan needs (:func:`fewest_turns`), so no cell is out of reach for want of
    turns. Worlds run one after another; ``on_world`` gets each world's cells as soon as they
    are measured, so a long run can be kept as it goes and resumed with ``skip`` (cells already
    measured)."""
    harness = harness or HarnessConfig(tool_format="text", max_turns=max_turns)
    cells: list[CalibrationCell] = []
    for env in envs:
        got = _calibrate_world(
            policy, env, tasks, difficulties, split, harness, on_episode, skip, fit_plan
        )
        if got and on_world is not None:
            on_world(got)
        cells += got
    return cells


def _calibrate_world(
    policy: RolloutPolicy,
    env: str,
    tasks: int,
    difficulties: Sequence[int] | None,
    split: Split,
    harness: HarnessConfig,
    on_episode: Callable[[EpisodeRecord], None] | None,
    skip: Container[tuple[str, int]],
    fit_plan: bool,
) -> list[CalibrationCell]:
    world = make(env)
    cells = []
    for d in levels_to_measure(world, difficulties, skip):
        split_d = split_for(world, split, d)
        refs = [TaskRef(env, split_d, d, i) for i in range(tasks)]
        refs = refs[: world.tasks_up_to(split_d, d, tasks)]
        needs = [fewest_turns(world.task(split_d, d, i)) for i in range(len(refs))]
        budget = max([harness.max_turns, *needs]) if fit_plan else harness.max_turns
        cell_harness = harness.model_copy(update={"max_turns": budget})
        tally = _run(policy, cell_harness, refs, on_episode)
        reach = reach_within(world, refs, cell_harness, needs)
        cells.append(tally.cell(env, d, cell_harness, split_d, reach))
    return cells


def levels_to_measure(
    world: Environment, difficulties: Sequence[int] | None, skip: Container[tuple[str, int]]
) -> list[int]:
    """The levels of ``world`` among ``difficulties`` (all: None) not in ``skip``."""
    chosen = difficulties or world.difficulties
    return [d for d in chosen if d in world.difficulties and (world.id, d) not in skip]


_WORKER_POLICY: list[RolloutPolicy] = []  # the model of a calibration worker process


def _load_worker_policy(model: str | None, sampling: dict[str, Any], threads: int) -> None:
    import torch

    from envfactory.integrations.local_model import TransformersPolicy

    _WORKER_POLICY.append(TransformersPolicy.from_path(model, **sampling))
    torch.set_num_threads(threads)  # the cores shared among the workers


def _measure_cell(
    env: str, difficulty: int, tasks: int, split: Split, harness: dict[str, Any], fit_plan: bool
) -> list[dict[str, Any]]:
    config = HarnessConfig.model_validate(harness)
    got = _calibrate_world(
        _WORKER_POLICY[0], env, tasks, [difficulty], split, config, None, (), fit_plan
    )
    return [c.model_dump(mode="json") for c in got]


def calibrate_in_processes(
    model: str | None,
    sampling: dict[str, Any],
    cells: Sequence[tuple[str, int]],
    tasks: int,
    harness: HarnessConfig,
    jobs: int,
    split: Split = "validation",
    fit_plan: bool = True,
    on_cell: Callable[[list[CalibrationCell]], None] | None = None,
) -> list[CalibrationCell]:
    """:func:`calibrate` of the (world, difficulty) ``cells``, ``jobs`` at a time, each in a
    worker process holding its own copy of the local model at ``model`` (None: the embedded
    one; ``sampling``: :class:`TransformersPolicy` options). The cores are shared among the
    workers (one torch thread each on 2 cores and 2 jobs), so N processes measure about N times
    as many cells an hour as one process on one core.
    ``on_cell`` gets each cell's row as soon as it is measured (in this process: one writer)."""
    out: list[CalibrationCell] = []
    workers = max(1, min(jobs, len(cells)))
    threads = max(1, (os.cpu_count() or 1) // workers)
    context = multiprocessing.get_context("spawn")  # no copy of this process's threads
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_load_worker_policy,
        initargs=(model, sampling, threads),
    ) as pool:
        config = harness.model_dump(mode="json")
        futures = [
            pool.submit(_measure_cell, env, d, tasks, split, config, fit_plan) for env, d in cells
        ]
        for done in as_completed(futures):
            got = [CalibrationCell.model_validate(c) for c in done.result()]
            if got and on_cell is not None:
                on_cell(got)
            out += got
    return sorted(out, key=lambda c: (c.env, c.difficulty))


def reach_within(
    world: Environment,
    refs: list[TaskRef],
    harness: HarnessConfig,
    needs: list[int] | None = None,
) -> float | None:
    """The scripted oracle's success on ``refs`` within ``harness.max_turns`` model calls: 1.0
    without playing where every gold plan fits (the audit holds the oracle to 1.0), else played
    (None when no episode could be scored). ``needs``: the refs' :func:`fewest_turns`, where
    already known."""
    if needs is None:
        needs = [fewest_turns(world.task(r.split, r.difficulty, r.index)) for r in refs]
    if max(needs, default=0) <= harness.max_turns:
        return 1.0
    rewards = _run(ScriptedPolicy("oracle"), harness, refs, None).rewards
    return round(sum(r >= 1.0 for r in rewards) / len(rewards), 4) if rewards else None


def _run(
    policy: RolloutPolicy,
    harness: HarnessConfig,
    refs: list[TaskRef],
    on_episode: Callable[[EpisodeRecord], None] | None,
) -> _Tally:
    tally = _Tally()

    def done(rec: EpisodeRecord) -> None:
        tally.add(rec)
        if on_episode is not None:
            on_episode(rec)

    engine = RolloutEngine(
        policy,
        harness=harness,
        config=ENGINE,
        on_episode=done,
        keep_records=False,
    )
    engine.run_sync(refs)
    return tally


def fewest_turns(task: Task) -> int:
    """The model calls a perfect agent needs for ``task``, one action a call: each call of the
    gold plan, each question it must ask the user, and a reply where the task asks for
    answers (a task of changes alone is judged on the state it leaves, reply or not)."""
    h = task.hidden
    return max(1, len(h.gold_plan) + len(h.asks) + bool(h.answers))


def load_cells(path: Path) -> list[CalibrationCell]:
    """The cells kept in a JSON-lines file (none when it does not exist)."""
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [CalibrationCell.model_validate_json(line) for line in lines if line.strip()]


def store_cells(path: Path, cells: Sequence[CalibrationCell]) -> None:
    """Keep ``cells`` in the JSON-lines file at ``path``, each in place of an older row of the
    same world, difficulty and tool format (one row per cell); written whole, then renamed."""
    new = {(c.env, c.difficulty, c.tool_format) for c in cells}
    old = [c for c in load_cells(path) if (c.env, c.difficulty, c.tool_format) not in new]
    part = path.with_name(path.name + ".part")
    part.write_text("".join(c.model_dump_json() + "\n" for c in [*old, *cells]))
    part.replace(path)


def split_for(world: Environment, split: Split, difficulty: int) -> Split:
    """``split``, or the test split where the world has no ``split`` tasks at ``difficulty``
    (a fixed task list such as tau2's has train and test only): held out either way."""
    return "test" if split != "test" and world.tasks_up_to(split, difficulty, 1) == 0 else split


def plot_calibration(cells: Sequence[CalibrationCell], path: str) -> str:
    """A heat map of success by world (rows) and difficulty (columns), each cell annotated
    with its success and, below, its share of valid tool calls."""
    from matplotlib.figure import Figure

    envs = sorted({c.env for c in cells})
    levels = sorted({c.difficulty for c in cells})
    at = {(c.env, c.difficulty): c for c in cells}
    grid = [
        [at[(e, d)].success if (e, d) in at and at[(e, d)].tasks else math.nan for d in levels]
        for e in envs
    ]
    fig = Figure(figsize=(max(7.0, 1.4 * len(levels) + 3), 0.42 * len(envs) + 1.6), dpi=110)
    ax = fig.subplots()
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(levels)), [str(d) for d in levels])
    ax.set_yticks(range(len(envs)), envs)
    ax.set_xlabel("difficulty")
    for i, e in enumerate(envs):
        for j, d in enumerate(levels):
            c = at.get((e, d))
            if c is None:
                continue
            rate = c.tool_call_valid_rate
            valid = "no calls" if rate is None else f"{rate:.0%} valid"
            text = f"{c.success:.2f}\n{valid}"
            if c.reach is not None and c.reach < 1:
                text += f"\nreach {c.reach:.1f}"  # too few calls for some gold plans
            if c.faults:
                text += f"\n{c.faults} not scored"
            colour = "white" if c.success < 0.5 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=colour)
    fig.colorbar(image, ax=ax, label="success (reward 1)")
    n = max((c.tasks for c in cells), default=0)
    ax.set_title(f"calibration: success per world and difficulty ({n} tasks per cell)")
    fig.tight_layout()
    fig.savefig(path)
    return path


def markdown_table(cells: Sequence[CalibrationCell]) -> str:
    """The cells as the Markdown table of docs/calibration.md."""
    rows = [
        "| world | difficulty | tasks | success (95% CI) | mean reward | calls attempted | valid "
        "| bad arguments | turns | calls allowed | within reach |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in sorted(cells, key=lambda c: (c.env, c.difficulty)):
        valid = "-" if c.tool_call_valid_rate is None else f"{c.tool_call_valid_rate:.2f}"
        bad = "-" if c.invalid_argument_rate is None else f"{c.invalid_argument_rate:.2f}"
        tasks = f"{c.tasks} (+{c.faults} not scored)" if c.faults else str(c.tasks)
        rows.append(
            f"| {c.env} | {c.difficulty} | {tasks} | {c.success:.2f} "
            f"({c.ci95[0]:.2f}-{c.ci95[1]:.2f}) | {c.mean_reward:.3f} | {c.calls_attempted} "
            f"| {valid} | {bad} | {c.turns_mean:.1f} | {_or_dash(c.max_turns)} "
            f"| {_or_dash(c.reach)} |"
        )
    return "\n".join(rows)


def _or_dash(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
