"""``envfactory demo``: the main job. Scripted policies over a sample of every environment,
run through the rollout engine (the same engine that runs a model)."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli import model_demo
from envfactory.cli.common import console, err_console, print_json
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.quality.cells import sample_cells
from envfactory.registry import list_envs, make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord

POLICIES = ("oracle", "noisy-oracle", "random", "noop")


def demo(
    n: int = typer.Option(10, "-n", help="Tasks per environment (`check` and `audit` take more)."),
    json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    model_tasks: int = typer.Option(
        2, "--model-tasks", min=0, help="Tasks per world for the real model at the end (0: none)."
    ),
    model: str = typer.Option(
        "default", "--model", help="The real model: a folder or .gguf file (default: embedded)."
    ),
) -> None:
    """Run the scripted policies over a sample of every environment and summarise; then a
    real model (the embedded one by default) on a few tasks of two worlds."""
    # Worlds with seats have no single agent to score: `envfactory check ENV` plays their
    # scripted seats against each other, and `envfactory rollout ENV --seat ...` runs them.
    multi = [e for e in list_envs() if make(e).seats]
    # Worlds that serve another's tasks again through a slower door (web worlds: a browser
    # tab, seconds an episode) are left to `envfactory check web-retail`.
    again = [e for e in list_envs() if make(e).same_tasks_as]
    env_ids = [e for e in list_envs() if e not in multi and e not in again]
    refs = [
        TaskRef(env_id, split, difficulty, index)
        for env_id in env_ids
        for split, difficulty, index in sample_cells(make(env_id), n)
    ]
    rewards: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    unscored: dict[str, int] = defaultdict(int)
    errors: list[str] = []
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task("episodes", total=len(refs) * len(POLICIES))
        for name in POLICIES:

            def done(rec: EpisodeRecord, name: str = name) -> None:
                bar.advance(job)
                if rec.scored and rec.reward is not None:
                    rewards[rec.env_id][name].append(rec.reward)
                else:
                    unscored[f"{rec.env_id} {rec.status}"] += 1

            engine = RolloutEngine(
                ScriptedPolicy(name),
                config=EngineConfig(concurrency=64),
                on_episode=done,
                keep_records=False,
            )
            errors += engine.run_sync(refs).errors
    rows = [
        {
            "env": env_id,
            "tasks": n,
            **{
                p: round(fmean(rewards[env_id][p]), 3) if rewards[env_id][p] else None
                for p in POLICIES
            },
        }
        for env_id in env_ids
    ]
    worlds = [w for w in model_demo.WORLDS if w in env_ids]
    ran = model_demo.run_model(model, model_tasks, worlds) if model_tasks and worlds else None
    if json:
        by_env = {r.env: r for r in ran[1]} if ran else {}
        for row in rows:  # the model's mean reward beside the scripted ones, where it ran
            played = by_env.get(str(row["env"]))
            row["local"] = round(fmean(played.rewards), 3) if played and played.rewards else None
        print_json(rows)
        return
    table = Table(title="mean reward by policy (oracle must be 1, random and noop about 0)")
    table.add_column("env")
    for name in POLICIES:
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(str(r["env"]), *("-" if r[p] is None else f"{r[p]:.3f}" for p in POLICIES))
    console.print(table)
    if multi:
        console.print(
            f"multi-agent worlds left out (seats, not one agent; try `envfactory check ENV`): "
            f"{', '.join(multi)}"
        )
    if again:
        console.print(
            "worlds that serve another's tasks through a browser left out (seconds an episode; "
            f"try `envfactory check {again[0]}`): {len(again)} ({again[0]} ...)"
        )
    for what, count in sorted(unscored.items()):
        console.print(f"[yellow]{count} episodes not scored: {what}[/yellow]")
    for error in sorted(set(errors))[:10]:
        console.print(f"[red]{error}[/red]")
    if ran:
        model_demo.show(*ran)
