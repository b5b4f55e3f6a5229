"""``envfactory bench``: the episode API's costs."""

from __future__ import annotations

import typer
from pydantic import BaseModel
from rich.table import Table

from envfactory.bench.world import bench_world
from envfactory.cli.common import console, err_console, fail, load_env, print_json


def _bench_sandbox() -> BaseModel:
    from envfactory.bench.sandbox import bench_sandbox
    from envfactory.terminal.sandbox import unavailable_reason

    reason = unavailable_reason()
    if reason:
        raise fail(reason)
    with err_console.status("benchmarking the terminal sandbox (1,000 episodes)"):
        return bench_sandbox()


def bench(
    env_id: str = typer.Option("retail", "--env", help="Environment to measure."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    sandbox: bool = typer.Option(
        False, "--sandbox", help="Measure the terminal worlds' sandbox instead."
    ),
    rollout: bool = typer.Option(
        False, "--rollout", help="Measure the rollout engine: live episodes, steps/s, loop lag."
    ),
    tau2: bool = typer.Option(
        False, "--tau2", help="Compare with tau2-bench's approach on its retail data."
    ),
    ray: bool = typer.Option(
        False, "--ray", help="Episodes/s through a Ray pool of 1 vs 2 rollout workers."
    ),
) -> None:
    """Measure reset, step, evaluate, synthesis and memory per live episode (medians)."""
    result: BaseModel
    if sandbox:
        result = _bench_sandbox()
    elif rollout:
        from envfactory.bench.rollout import bench_rollout

        with err_console.status("benchmarking the rollout engine (10,000 live episodes)"):
            result = bench_rollout(env_id)
    elif ray:
        from envfactory.integrations.ray.bench import bench_ray

        with err_console.status("benchmarking Ray rollout workers (1 vs 2)"):
            result = bench_ray(env_id)
    elif tau2:
        from envfactory.peers.tau2.bench import bench_tau2

        env = load_env("tau2-retail")
        with err_console.status("benchmarking tau2-retail against tau2-bench's approach"):
            result = bench_tau2(env)
    else:
        with err_console.status(f"benchmarking {env_id}"):
            result = bench_world(env_id)
    if json:
        print_json(result)
        return
    table = Table(title=f"bench {env_id}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.model_dump().items():
        table.add_row(key, str(value))
    console.print(table)
