"""``envfactory match``: the older command for one world with seats: the rollout engine of
``envfactory rollout ENV --seat ...`` (without oversample or resume), with its own summary:
trajectories, statuses, reward and players by seat."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, cast

import typer
from rich.table import Table

from envfactory.cli.common import console, err_console, fail, load_env, print_json
from envfactory.cli.progress import with_progress
from envfactory.cli.rollout import SEAT_HELP, scripted_seats, trajectories
from envfactory.contract.tasks import Split
from envfactory.credit.files import credit_folder, parse_credit
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.openai import OpenAIPolicy
from envfactory.rollout.engine import Listener, RolloutEngine
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.run import run_and_close
from envfactory.rollout.seating import seat_specs
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import TrajectoryStore

Outcome = tuple[RunSummary, list[EpisodeRecord]]


def match(
    env_id: str = typer.Argument(..., metavar="ENV", help="A world with seats."),
    seat: list[str] = typer.Option([], "--seat", help=SEAT_HELP),
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
    """Episodes of a world with seats through the rollout engine: one trajectory per seat
    (``envfactory rollout ENV --seat ...`` has oversample and resume too)."""
    env = load_env(env_id)
    if not env.seats:
        raise fail(f"{env_id} is a world of one agent: run it with envfactory rollout")
    try:
        seats = seat_specs(seat)
        levels = [int(d) for d in difficulties.split(",") if d.strip()] or None
        credit_config = parse_credit(credit) if credit else None
        harness = HarnessConfig(tool_format=tool_format, max_turns=max_turns)
    except ValueError as exc:
        raise fail(str(exc)) from None
    learner = _learner(env.id, policy, base_url, model, api_key_env, temperature, max_tokens)
    split_list = [cast(Split, s.strip()) for s in splits.split(",") if s.strip()]
    refs = plan_tasks([env.id], n_tasks, split_list, levels)
    folder = out or Path("runs") / f"match-{env.id}-{time.strftime('%Y%m%d-%H%M%S')}"
    store = TrajectoryStore(folder)
    config = EngineConfig(group_size=group_size, concurrency=concurrency)

    def start(done: Listener, _: Callable[[], None]) -> Coroutine[Any, Any, Outcome]:
        engine = RolloutEngine(
            learner, harness=harness, config=config, store=store, on_episode=done, seats=seats
        )
        return run_and_close(engine, refs)

    summary, records = with_progress(trajectories(refs, group_size), start)
    store.close()
    seated = [r for r in records if r.actor is not None]
    rewards = {
        s: _mean([r.reward for r in seated if r.actor == s and r.reward is not None])
        for s in env.seats
    }
    result: dict[str, Any] = {
        "env": env.id,
        "trajectories": summary.episodes,
        "status_counts": summary.status_counts,
        "reward_by_seat": rewards,
        "players": {s: sorted({r.model.name for r in seated if r.actor == s}) for s in env.seats},
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
    for s in env.seats:
        table.add_row(s, ", ".join(result["players"][s]), f"{rewards[s]:.3f}")
    console.print(table)
    err_console.print(f"trajectories: {folder / 'episodes.jsonl'}")


def _learner(
    env_id: str,
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
    if not policy.startswith("scripted:"):
        raise fail(f"--policy: {policy!r} is not openai or scripted:N")
    return scripted_seats(policy, [env_id])


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0
