"""``envfactory demo``: the main job. Scripted policies over a sample of every environment."""

from __future__ import annotations

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli.common import console, err_console, print_json
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import scripted
from envfactory.quality.check import sample_cells
from envfactory.registry import list_envs, make

POLICIES = ("oracle", "noisy-oracle", "random", "noop")


def demo(
    n: int = typer.Option(30, "-n", help="Tasks per environment."),
    json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Run the scripted policies over a sample of every environment and summarise."""
    rows = []
    env_ids = list_envs()
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task("episodes", total=len(env_ids) * n * len(POLICIES))
        for env_id in env_ids:
            env = make(env_id)
            episode = env.episode()
            means = {}
            for name in POLICIES:
                total = 0.0
                for split, difficulty, index in sample_cells(env, n):
                    verdict = run_episode(
                        env, env.task(split, difficulty, index), scripted(name), episode
                    )
                    total += verdict.reward or 0.0
                    bar.advance(job)
                means[name] = round(total / n, 3)
            rows.append({"env": env_id, "tasks": n, **means})
    if json:
        print_json(rows)
        return
    table = Table(title="mean reward by policy (oracle must be 1, random and noop about 0)")
    table.add_column("env")
    for name in POLICIES:
        table.add_column(name, justify="right")
    for r in rows:
        table.add_row(str(r["env"]), *(f"{r[p]:.3f}" for p in POLICIES))
    console.print(table)
