"""``envfactory bench``: the episode API's costs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel
from rich.table import Table

from envfactory.bench.world import bench_world
from envfactory.cli.common import console, err_console, fail, load_env, print_json, world_ids
from envfactory.harness.config import HarnessConfig

if TYPE_CHECKING:
    from envfactory.bench.calibration import CalibrationCell


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
    research: bool = typer.Option(
        False,
        "--research",
        help="Research worlds: reset, each tool's step and the verdict, and search latency "
        "over 10,000 and 100,000 documents.",
    ),
    repo: bool = typer.Option(
        False,
        "--repo",
        help="Repository worlds (--env, default repo-python): reset, step and verdict; with "
        "--sample N, the verified supply from N candidates drawn at random at every level.",
    ),
    sample: int = typer.Option(0, "--sample", min=0, help="--repo: candidates to verify."),
    web: bool = typer.Option(
        False,
        "--web",
        help="Web worlds (--env, default web-retail) through a real headless browser: reset "
        "and action latency, and episodes held at once.",
    ),
    decode: bool = typer.Option(
        False,
        "--decode",
        help="Batched decoding of the embedded model: transformers' stock path against "
        "envfactory's (cache written in place, grouped attention), in one run.",
    ),
    calibration: bool = typer.Option(
        False,
        "--calibration",
        help="A real model (the embedded one, or --model) over every single-agent world and "
        "difficulty: success with a 95%% interval, mean reward, valid tool calls.",
    ),
    tasks: int = typer.Option(20, "--tasks", min=1, help="--calibration: tasks per cell."),
    envs: str = typer.Option("", "--envs", help="--calibration: worlds (default: all)."),
    difficulties: str = typer.Option("", "--difficulties", help="--calibration: levels."),
    model: str = typer.Option("default", "--model", help="--calibration: a folder or .gguf."),
    max_turns: int = typer.Option(
        4,
        "--max-turns",
        min=1,
        help="--calibration: model calls per episode, at least; a cell whose gold plans need "
        "more (their calls, questions and report) gets what its longest plan needs.",
    ),
    fixed_turns: bool = typer.Option(
        False, "--fixed-turns", help="--calibration: exactly --max-turns calls, even too few."
    ),
    max_tokens: int = typer.Option(128, "--max-tokens", min=1, help="--calibration: per call."),
    plot: str | None = typer.Option(None, "--plot", help="--calibration: write a heat map PNG."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="--calibration: a JSON-lines file; each world's cells are appended as they are "
        "measured, and cells already in it are kept and not measured again (resume).",
    ),
    jobs: int = typer.Option(
        1,
        "--jobs",
        min=1,
        help="--calibration: cells measured at once, each in a process with its own copy of "
        "the model and its share of the cores (up to one per core).",
    ),
    tool_format: str = typer.Option(
        "grammar",
        "--tool-format",
        help="--calibration: text (free Hermes text) or grammar (calls decoded under the "
        "tools' grammar, the first reply a call).",
    ),
    every: bool = typer.Option(
        False,
        "--all",
        help="Every benchmark that runs here (world, rollout, sandbox, research, repo, web, "
        "decode, tau2, ray, serve) as one JSON document, the load average beside each "
        "section; about 10-15 minutes on a quiet 2-core machine. Not calibration.",
    ),
    only: str = typer.Option("", "--only", help="--all: these sections (comma-separated)."),
    quick: bool = typer.Option(
        False, "--quick", help="--all: tiny sizes, seconds per section (the shape, not figures)."
    ),
) -> None:
    """Measure reset, step, evaluate, synthesis and memory per live episode (medians)."""
    if every:
        _all(only, quick)
        return
    if calibration:
        if tool_format not in ("text", "grammar"):
            raise fail("--tool-format is text or grammar")
        harness = HarnessConfig(
            tool_format=tool_format,
            tool_choice="first" if tool_format == "grammar" else "auto",
            max_turns=max_turns,
        )
        _calibration(
            tasks,
            envs,
            difficulties,
            model,
            harness,
            not fixed_turns,
            max_tokens,
            plot,
            out,
            json,
            jobs,
        )
        return
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
    elif research:
        from envfactory.bench.research import bench_research

        with err_console.status("benchmarking the research worlds (corpora of up to 100,000)"):
            result = bench_research()
    elif repo:
        from envfactory.bench.repo import bench_repo

        repo_env = env_id if env_id.startswith("repo-") else "repo-python"
        load_env(repo_env)  # an unavailable world says why
        with err_console.status(f"benchmarking {repo_env} (verified tasks, real test runs)"):
            result = bench_repo(repo_env, sample=sample, level_sample=sample)
    elif web:
        from envfactory.bench.web import bench_web

        web_env = env_id if env_id.startswith("web-") else "web-retail"
        load_env(web_env)  # an unavailable world says why
        with err_console.status(f"benchmarking {web_env} through the browser"):
            result = bench_web(web_env)
    elif decode:
        from envfactory.bench.decode import bench_decode

        with err_console.status("benchmarking batched decoding (stock vs envfactory)"):
            result = bench_decode()
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


def _all(only: str, quick: bool) -> None:
    """``--all``: the document goes to stdout (always JSON); the exit status is 1 when a
    section failed (skipped ones are not failures)."""
    from envfactory.bench.all import SECTIONS, run_all

    sections = [s.strip() for s in only.split(",") if s.strip()] or None
    unknown = [s for s in sections or [] if s not in SECTIONS]
    if unknown:
        raise fail(f"unknown sections {', '.join(unknown)}; sections are {', '.join(SECTIONS)}")
    with err_console.status("benchmarking") as status:
        doc = run_all(sections, quick, lambda name: status.update(f"benchmarking: {name}"))
    print_json(doc)
    if any(s["status"] == "failed" for s in doc["sections"].values()):
        raise typer.Exit(1)


def _runnable(worlds: list[str]) -> list[str]:
    """The ``worlds`` whose episodes can run on this machine, told before the model loads:
    each one left out is named with why (its episodes would all fail, and not be scored), and
    none left is an error."""
    from envfactory.registry import make

    runnable = []
    for world in worlds:
        why = make(world).available()
        if why is None:
            runnable.append(world)
        else:
            err_console.print(f"[yellow]warning:[/] {world} is not measured here: {why}")
    if worlds and not runnable:
        raise fail("no world to measure on this machine (see the warnings above)")
    return runnable


def _calibration(
    tasks: int,
    envs: str,
    difficulties: str,
    model: str,
    harness: HarnessConfig,
    fit_plan: bool,
    max_tokens: int,
    plot: str | None,
    out: Path | None,
    json: bool,
    jobs: int,
) -> None:
    from rich.progress import Progress

    from envfactory.bench.calibration import (
        calibrate,
        calibrate_in_processes,
        levels_to_measure,
        load_cells,
        plot_calibration,
        single_agent_worlds,
        store_cells,
    )
    from envfactory.cli.rollout import local_policy
    from envfactory.registry import make

    worlds = world_ids(e.strip() for e in envs.split(",") if e.strip()) or single_agent_worlds()
    levels = [int(d) for d in difficulties.split(",") if d.strip()] or None
    kept = [
        c
        for c in (load_cells(out) if out is not None else [])
        if c.tool_format == harness.tool_format
        and c.faults == 0
        and (not fit_plan or c.reach == 1.0)
    ]
    runnable = _runnable(worlds)
    policy = local_policy(model, {"temperature": 0.7, "max_tokens": max_tokens})
    skip = {(c.env, c.difficulty) for c in kept}

    def keep(cells: list[CalibrationCell]) -> None:
        if out is not None:
            store_cells(out, cells)

    with Progress(console=err_console, transient=True) as bar:
        if jobs > 1:
            todo = [(w, d) for w in runnable for d in levels_to_measure(make(w), levels, skip)]
            job = bar.add_task(f"{policy.info.name} cells, {jobs} at once", total=len(todo))

            def kept_cell(cells: list[CalibrationCell]) -> None:
                keep(cells)
                bar.advance(job)

            sampling = {"temperature": 0.7, "max_new_tokens": max_tokens}
            path = None if model == "default" else model
            cells = calibrate_in_processes(
                path, sampling, todo, tasks, harness, jobs, fit_plan=fit_plan, on_cell=kept_cell
            )
        else:
            job = bar.add_task(f"{policy.info.name} episodes", total=None)
            cells = calibrate(
                policy,
                runnable,
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
            err_console.print(
                f"[yellow]{c.env} {c.difficulty}: {c.faults} episode(s) not scored "
                f"({'; '.join(c.fault_reasons) or 'no reason recorded'}); the cell is measured "
                "again by the next run with --out[/yellow]"
            )
    if plot:
        plot_calibration(cells, plot)
    if json:
        print_json([c.model_dump(mode="json") for c in cells])
        return
    table = Table(
        title=f"calibration of {policy.info.name} ({tasks} validation tasks per cell, "
        f"tool format {harness.tool_format})"
    )
    for col in ("env", "difficulty", "success", "95% CI", "reward", "valid calls", "turns"):
        table.add_column(col, justify="left" if col == "env" else "right")
    for c in cells:
        valid = "-" if c.tool_call_valid_rate is None else f"{c.tool_call_valid_rate:.2f}"
        table.add_row(
            c.env,
            str(c.difficulty),
            f"{c.success:.2f}",
            f"{c.ci95[0]:.2f}-{c.ci95[1]:.2f}",
            f"{c.mean_reward:.3f}",
            valid,
            f"{c.turns_mean:.1f}",
        )
    console.print(table)
