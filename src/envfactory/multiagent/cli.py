"""The multi-agent parts of the command line: ``envfactory check`` on a multi-agent world,
and ``envfactory match`` (multi-seat episodes through the rollout engine)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, cast

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli.common import console, err_console, fail, load_env, print_json, report_check
from envfactory.contract.tasks import Split
from envfactory.credit.files import credit_folder, parse_credit
from envfactory.harness.config import HarnessConfig
from envfactory.multiagent.check import check
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.rollout import MultiAgentEngine
from envfactory.multiagent.seats import ScriptedSeatPolicy, Seating
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.openai import OpenAIPolicy
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.store import TrajectoryStore

SHOWN = (
    "episodes",
    "weak",
    "strong",
    "strong_reward_mean",
    "weak_reward_mean",
    "pairs_won",
    "pairs_lost",
    "pairs_tied",
    "p_value",
    "strong_beats_weak",
    "invalid_outcomes",
    "duplicate_tasks",
    "split_overlap",
    "seconds",
)


def check_command(env: MultiAgentEnvironment, n: int, seed: int, json: bool) -> None:
    """Scripted seats of two strengths over about ``n`` episodes; exits 1 unless it passes."""
    total = 2 * max(1, n // 2)
    report_check(env.id, total, lambda progress: check(env, n, seed, progress), SHOWN, json)


def match(
    env_id: str = typer.Argument(..., metavar="ENV", help="A multi-agent world."),
    seat: list[str] = typer.Option(
        [], "--seat", help="SEAT=WHO: learner, scripted, scripted:N or same:SEAT (repeatable)."
    ),
    policy: str = typer.Option("scripted:3", "--policy", help="The learner: openai or scripted:N."),
    base_url: str = typer.Option("http://127.0.0.1:8000/v1", "--base-url"),
    model: str = typer.Option("default", "--model", help="Model name for --policy openai."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env"),
    temperature: float | None = typer.Option(None, "--temperature"),
    max_tokens: int | None = typer.Option(None, "--max-tokens"),
    splits: str = typer.Option("train", "--splits", help="Comma-separated splits."),
    difficulties: str = typer.Option("", "--difficulties", help="Comma-separated levels."),
    n_tasks: int = typer.Option(10, "--n-tasks", min=1, help="Tasks (groups)."),
    group_size: int = typer.Option(1, "--group-size", min=1, help="Episodes per task."),
    concurrency: int = typer.Option(32, "--concurrency", min=1, help="Live episodes at once."),
    max_turns: int = typer.Option(30, "--max-turns", min=1, help="Model calls per seat."),
    tool_format: str = typer.Option("native", "--tool-format", help="native or text."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (episodes.jsonl)."),
    credit: str | None = typer.Option(
        None, "--credit", help="Write credited.jsonl, e.g. atgrpo (per-agent per-turn groups)."
    ),
    json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Multi-seat episodes through the rollout engine: one trajectory per seat."""
    env = load_env(env_id)
    if not isinstance(env, MultiAgentEnvironment):
        raise fail(f"{env_id} is a {env.kind} world: run it with envfactory rollout")
    try:
        seating = Seating(
            _learner(env, policy, base_url, model, api_key_env, temperature, max_tokens),
            dict(_pair(s) for s in seat),
        )
        levels = [int(d) for d in difficulties.split(",") if d.strip()] or None
        credit_config = parse_credit(credit) if credit else None
        harness = HarnessConfig(tool_format=tool_format, max_turns=max_turns)
    except ValueError as exc:
        raise fail(str(exc)) from None
    split_list = [cast(Split, s.strip()) for s in splits.split(",") if s.strip()]
    refs = plan_tasks([env.id], n_tasks, split_list, levels)
    folder = out or Path("runs") / f"match-{env.id}-{time.strftime('%Y%m%d-%H%M%S')}"
    store = TrajectoryStore(folder)
    config = EngineConfig(group_size=group_size, concurrency=concurrency)
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(
            f"{env.id}: trajectories", total=len(refs) * group_size * len(env.agents)
        )
        engine = MultiAgentEngine(
            seating,
            harness=harness,
            config=config,
            store=store,
            on_episode=lambda _: bar.advance(job),
        )
        summary = asyncio.run(_run(engine, refs))
    store.close()
    seats = {
        s: _mean([r.reward for r in engine.records if r.actor == s and r.reward is not None])
        for s in env.agents
    }
    result: dict[str, Any] = {
        "env": env.id,
        "trajectories": summary.episodes,
        "status_counts": summary.status_counts,
        "reward_by_seat": seats,
        "players": {
            s: sorted({r.model.name for r in engine.records if r.actor == s}) for s in env.agents
        },
        "errors": summary.errors,
        "out": str(folder),
    }
    if credit_config is not None:
        result["credited"] = str(credit_folder(folder, credit_config)[0])
    if json:
        print_json(result)
        return
    table = Table(title=f"{env.id}: reward by seat")
    for col in ("seat", "played by", "reward"):
        table.add_column(col)
    for s in env.agents:
        table.add_row(s, ", ".join(result["players"][s]), f"{seats[s]:.3f}")
    console.print(table)
    err_console.print(f"trajectories: {folder / 'episodes.jsonl'}")


async def _run(engine: MultiAgentEngine, refs: list[TaskRef]) -> RunSummary:
    try:
        return await engine.run(refs)
    finally:
        await engine.aclose()


def _learner(
    env: MultiAgentEnvironment,
    policy: str,
    base_url: str,
    model: str,
    api_key_env: str,
    temperature: float | None,
    max_tokens: int | None,
) -> RolloutPolicy:
    if policy == "openai":
        sampling = {
            k: v
            for k, v in {"temperature": temperature, "max_tokens": max_tokens}.items()
            if v is not None
        }
        return OpenAIPolicy(base_url, model, api_key_env=api_key_env, sampling=sampling)
    kind, _, level = policy.partition(":")
    if kind != "scripted" or not level.isdigit():
        raise ValueError(f"--policy: {policy!r} is not openai or scripted:N")
    return ScriptedSeatPolicy(env, int(level))


def _pair(text: str) -> tuple[str, str]:
    name, sep, who = text.partition("=")
    if not sep or not name or not who:
        raise ValueError(f"--seat: {text!r} is not SEAT=WHO")
    return name.strip(), who.strip()


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0
