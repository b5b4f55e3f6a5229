"""``envfactory export-sft``: gold plans as chat-format SFT data (JSONL and Parquet)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import cast

import typer
from rich.table import Table

from envfactory.cli.common import (
    console,
    err_console,
    fail,
    load_env,
    print_json,
    world_ids,
    yield_bar,
)
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import SPLITS, Split
from envfactory.training.export import ExportSummary, export, task_refs

TEST_WARNING = (
    "the test split is included: these rows are the held-out tasks' solutions, and a model "
    "trained on them has no honest test score on these worlds"
)


class SftFormat(StrEnum):
    native = "native"
    hermes = "hermes"


def _items(values: list[str]) -> list[str]:
    """Repeated options and comma lists, flattened, in order, without repeats."""
    items = (v.strip() for value in values for v in value.split(","))
    return list(dict.fromkeys(v for v in items if v))


def _splits(values: list[str], allow_test: bool) -> list[Split]:
    splits = _items(values) or ["train"]
    if bad := [s for s in splits if s not in SPLITS]:
        raise fail(f"--split: {', '.join(bad)} is not one of {', '.join(SPLITS)}")
    if "test" in splits and not allow_test:
        raise fail(
            "--split test: the test split is held out for evaluation; training on it "
            "contaminates every test score. Add --allow-test to export it anyway."
        )
    return cast(list[Split], splits)


def _levels(env_ids: list[str], difficulties: list[str]) -> tuple[dict[str, list[int]], list[str]]:
    """Each world's difficulties to export (those asked for that it has), and notes on the
    ones it lacks."""
    try:
        asked = [int(d) for d in _items(difficulties)]
    except ValueError as exc:
        raise fail(f"--difficulties: {exc}") from None
    levels: dict[str, list[int]] = {}
    notes: list[str] = []
    for env_id in env_ids:
        env = load_env(env_id)
        if env.seats:
            raise fail(f"{env_id}: a world with seats has no single gold transcript")
        has = list(env.difficulties)
        chosen = [d for d in asked if d in has] if asked else has
        if not chosen:
            raise fail(f"{env_id} has none of difficulties {asked}; it has {has}")
        if missing := [d for d in asked if d not in has]:
            notes.append(f"{env.id} has no difficulty {', '.join(map(str, missing))}")
        levels[env.id] = chosen
    return levels, notes


def export_sft(
    envs: list[str] = typer.Option(
        ..., "--envs", help="Worlds (ids, domain files, folders): a comma list, or repeated."
    ),
    out: Path = typer.Option(
        ..., "--out", help="Folder for jsonl/SPLIT.jsonl and parquet/SPLIT.parquet."
    ),
    split: list[str] = typer.Option(
        ["train"],
        "--split",
        help="train, validation or test (a comma list, or repeated). test needs --allow-test.",
    ),
    difficulties: list[str] = typer.Option(
        [], "--difficulties", help="Levels, e.g. 0,1,2 (default: every level of each world)."
    ),
    tasks: int = typer.Option(20, "--tasks", min=1, help="Tasks per world × split × level."),
    fmt: SftFormat = typer.Option(
        SftFormat.native,
        "--format",
        help="native: assistant tool_calls, tool messages and a tools column; hermes: "
        "<tool_call> text, as the harness renders it, for any chat template.",
    ),
    allow_test: bool = typer.Option(
        False, "--allow-test", help="Allow --split test (it is held out for evaluation)."
    ),
    json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Play the scripted oracle through the harness on each task and write the episodes it
    solved (reward 1.0) as chat-format SFT data, loadable by datasets and TRL's SFTTrainer."""
    env_ids = world_ids(_items(envs))
    if not env_ids:
        raise fail("--envs: name at least one world")
    splits = _splits(split, allow_test)
    levels, notes = _levels(env_ids, difficulties)
    if "test" in splits:
        err_console.print(f"[bold red]WARNING: {TEST_WARNING}[/bold red]")
        notes.append(TEST_WARNING)
    refs = task_refs(levels, splits, tasks)
    try:
        with yield_bar("oracle episodes", len(refs), transient=True) as advance:
            summary = export(refs, out, fmt.value, lambda r: advance(r.reward == 1.0))
    except (EnvFactoryError, ImportError) as exc:
        raise fail(exc) from None
    summary.warnings = notes
    if json:
        print_json(summary)
    else:
        show(summary)
    if not summary.rows:
        err_console.print("[red]the oracle solved none of these tasks: nothing to train on[/red]")
        raise typer.Exit(1)


def show(summary: ExportSummary) -> None:
    table = Table(title=f"{summary.format} rows by world")
    table.add_column("world")
    table.add_column("rows", justify="right")
    for world, rows in summary.per_world.items():
        table.add_row(world, str(rows))
    console.print(table)
    console.print(
        f"{summary.rows} rows of {summary.episodes} episodes in {summary.seconds:.1f} s "
        f"({summary.rows_per_s} rows/s); {summary.unsolved} tasks without a row"
    )
    for path in summary.files:
        console.print(f"  {path}")
    for note in summary.warnings:
        err_console.print(f"[yellow]{note}[/yellow]")
