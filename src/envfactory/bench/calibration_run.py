"""``envfactory bench calibration``: a real model over worlds and levels, with its progress on
stderr, cells kept in a JSON-lines file as they are measured (and not measured again), and a
heat map. The measure itself is :mod:`envfactory.bench.calibration`.

A scripted policy (``--model scripted:noisy-oracle``, ``scripted:oracle``, ...) runs through
the same harness instead of a model, in this process: the yardstick a model's cells are read
against (the audit's noisy oracle has the skill 0.8 it has there)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import Progress

from envfactory.bench.calibration import (
    CalibrationCell,
    calibrate,
    calibrate_in_processes,
    levels_to_measure,
    load_cells,
    plot_calibration,
    single_agent_worlds,
    store_cells,
)
from envfactory.bench.sections import Unavailable
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.registry import make
from envfactory.registry.sources import resolve_all


def runnable(worlds: Sequence[str]) -> list[str]:
    """The ``worlds`` whose episodes can run on this machine, told before the model loads:
    each one left out is named with why on stderr (its episodes would all fail, and not be
    scored); none left is :class:`Unavailable`."""
    kept = []
    for world in worlds:
        why = make(world).available()
        if why is None:
            kept.append(world)
        else:
            print(f"warning: {world} is not measured here: {why}", file=sys.stderr)
    if worlds and not kept:
        raise Unavailable("no world to measure on this machine (see the warnings above)")
    return kept


SCRIPTED = "scripted:"  # --model scripted:NAME: a scripted policy, not a model


def calibration_policy(model: str, max_tokens: int) -> RolloutPolicy:
    """The policy ``model`` names: ``scripted:NAME`` (a scripted policy), ``default`` (the
    embedded model) or a model folder or ``.gguf`` file, sampled at temperature 0.7."""
    if model.startswith(SCRIPTED):
        return ScriptedPolicy(model.removeprefix(SCRIPTED))
    from envfactory.integrations.local_model import TransformersPolicy

    return TransformersPolicy.from_path(
        _model_path(model), temperature=0.7, max_new_tokens=max_tokens
    )


def _model_path(model: str) -> str | None:
    return None if model == "default" else model


def run_calibration(
    tasks: int = 20,
    envs: Sequence[str] = (),
    difficulties: Sequence[int] = (),
    model: str = "default",
    max_turns: int = 4,
    fixed_turns: bool = False,
    max_tokens: int = 128,
    plot: str | None = None,
    out: str | None = None,
    jobs: int = 1,
    tool_format: Literal["text", "grammar"] = "grammar",
) -> list[CalibrationCell]:
    """``tasks`` validation tasks per cell of ``envs`` (ids, domain files or folders; default:
    every single-agent world) at ``difficulties`` (default: each world's), the model at
    ``model`` ("default": the embedded one; ``scripted:NAME``: a scripted policy, in this
    process) making at least ``max_turns`` calls per episode (as many as a cell's longest gold
    plan needs, unless ``fixed_turns``) of ``max_tokens`` each, ``jobs`` cells at once (a
    process each). Cells already in ``out`` (same tool format, nothing unscored) are kept; the
    cells, sorted by world and level."""
    harness = HarnessConfig(
        tool_format=tool_format,
        tool_choice="first" if tool_format == "grammar" else "auto",
        max_turns=max_turns,
    )
    fit_plan = not fixed_turns
    worlds = resolve_all(envs) or single_agent_worlds()
    levels = list(difficulties) or None
    path = Path(out) if out else None
    kept = [
        c
        for c in (load_cells(path) if path is not None else [])
        if c.tool_format == tool_format and c.faults == 0 and (not fit_plan or c.reach == 1.0)
    ]
    todo_worlds = runnable(worlds)
    policy = calibration_policy(model, max_tokens)
    skip = {(c.env, c.difficulty) for c in kept}

    def keep(cells: list[CalibrationCell]) -> None:
        if path is not None:
            store_cells(path, cells)

    with Progress(console=Console(stderr=True), transient=True) as bar:
        if jobs > 1 and not model.startswith(SCRIPTED):
            todo = [(w, d) for w in todo_worlds for d in levels_to_measure(make(w), levels, skip)]
            job = bar.add_task(f"{policy.info.name} cells, {jobs} at once", total=len(todo))

            def kept_cell(cells: list[CalibrationCell]) -> None:
                keep(cells)
                bar.advance(job)

            sampling: dict[str, Any] = {"temperature": 0.7, "max_new_tokens": max_tokens}
            cells = calibrate_in_processes(
                _model_path(model), sampling, todo, tasks, harness, jobs, fit_plan=fit_plan,
                on_cell=kept_cell,
            )  # fmt: skip
        else:
            job = bar.add_task(f"{policy.info.name} episodes", total=None)
            cells = calibrate(
                policy,
                todo_worlds,
                tasks,
                levels,
                harness=harness,
                on_episode=lambda _: bar.advance(job),
                on_world=keep,
                skip=skip,
                fit_plan=fit_plan,
            )
    cells = sorted(
        [c for c in kept if c.env in worlds and (levels is None or c.difficulty in levels)] + cells,
        key=lambda c: (c.env, c.difficulty),
    )
    for c in cells:
        if c.faults:
            reasons = "; ".join(c.fault_reasons) or "no reason recorded"
            print(
                f"warning: {c.env} {c.difficulty}: {c.faults} episode(s) not scored ({reasons}); "
                "the cell is measured again by the next run with --out",
                file=sys.stderr,
            )
    if plot:
        plot_calibration(cells, plot)
    return cells
