"""``envfactory rollout``: groups of episodes of a policy, into a resumable trajectory store."""

from __future__ import annotations

import json as jsonlib
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer
from rich.table import Table

from envfactory.cli.common import console, fail, print_json, world_ids
from envfactory.cli.progress import with_progress
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import SPLITS, Split
from envfactory.credit.advantages import CreditConfig
from envfactory.credit.files import credit_folder, parse_credit
from envfactory.episode.seats import seated
from envfactory.harness.config import ContextConfig, HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.openai import OpenAIPolicy
from envfactory.policies.scripted import SCRIPTED
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.registry import list_envs, make
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.retry import RetryConfig
from envfactory.rollout.run import run_in
from envfactory.rollout.seating import ScriptedSeatPolicy, seat_specs
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef

if TYPE_CHECKING:
    from envfactory.curriculum.drive import Rounds

SEAT_HELP = "SEAT=WHO: learner, scripted, scripted:N or same:SEAT (repeatable; worlds with seats)."


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _context(value: str) -> ContextConfig:
    """``all``, ``recent:N`` or ``summary:N``."""
    strategy, _, window = value.partition(":")
    if strategy not in ("all", "recent", "summary"):
        raise fail(f"--context: {value!r} is not all, recent:N or summary:N")
    return ContextConfig(strategy=strategy, window=int(window or 8))


def _policy(
    name: str,
    base_url: str,
    model: str,
    api_key_env: str,
    sampling: dict[str, Any],
    token_ids: bool,
    call_timeout: float,
    concurrency: int,
    env_ids: list[str],
) -> RolloutPolicy:
    if name in SCRIPTED:
        return ScriptedPolicy(name)
    if name.startswith("scripted:"):
        return scripted_seats(name, env_ids)
    if name == "local":
        return local_policy(model, sampling)
    if name == "openai":
        return OpenAIPolicy(
            base_url,
            model,
            api_key_env=api_key_env,
            sampling=sampling,
            token_ids=token_ids,
            logprobs=token_ids,
            timeout_s=call_timeout,
            max_connections=concurrency,
        )
    raise fail(
        f"--policy: {name!r} is not local, openai, scripted:N or one of {', '.join(SCRIPTED)}"
    )


def scripted_seats(name: str, env_ids: list[str]) -> ScriptedSeatPolicy:
    """``scripted:N``: the scripted seats of level N of the one world with seats in the run."""
    level = name.partition(":")[2]
    worlds = [w for w in (seated(make(e)) for e in env_ids) if w is not None]
    if not level.isdigit() or len(worlds) != 1 or len(worlds) != len(env_ids):
        raise fail(f"--policy {name}: scripted:N plays the seats of one world with seats")
    try:
        return ScriptedSeatPolicy(worlds[0], int(level))
    except ValueError as exc:
        raise fail(f"--policy: {exc}") from None


def choose_worlds(envs: str, policy: str) -> list[str]:
    """The worlds of the run: those named, or every world the policy plays (a scripted agent:
    the worlds of one agent; a model: every world)."""
    if named := world_ids(_csv(envs)):
        return named
    if policy in SCRIPTED:
        return [e for e in list_envs() if not make(e).seats]
    return list_envs()


def local_policy(model: str, sampling: dict[str, Any]) -> RolloutPolicy:
    """The embedded model (``model`` "default") or the local model folder or ``.gguf`` file
    at ``model``, sampling at ``temperature`` (default 0.7) up to ``max_tokens`` (256)."""
    from envfactory.integrations.local_model import TransformersPolicy

    try:
        return TransformersPolicy.from_path(
            None if model == "default" else model,
            temperature=float(sampling.get("temperature", 0.7)),
            max_new_tokens=int(sampling.get("max_tokens", 256)),
        )
    except ImportError as exc:
        raise fail(f"--policy local needs torch and transformers (make setup): {exc}") from None
    except EnvFactoryError as exc:
        raise fail(str(exc)) from None


def rollout(
    envs: str = typer.Option(
        "", "--envs", help="Comma-separated ids, domain files or folders of worlds (default: all)."
    ),
    splits: str = typer.Option("train", "--splits", help="Comma-separated splits."),
    difficulties: str = typer.Option("", "--difficulties", help="Comma-separated levels."),
    n_tasks: int = typer.Option(10, "--n-tasks", min=1, help="Tasks per environment."),
    group_size: int = typer.Option(1, "--group-size", min=1, help="Episodes kept per task."),
    oversample: int = typer.Option(0, "--oversample", min=0, help="Extra episodes per group."),
    prefix_steps: int = typer.Option(
        0,
        "--prefix-steps",
        min=0,
        help="Play each task's first N oracle actions once and fork that episode for every "
        "sample of its group (worlds that can fork).",
    ),
    concurrency: int = typer.Option(64, "--concurrency", min=1, help="Live episodes at once."),
    policy: str = typer.Option(
        "oracle",
        "--policy",
        help="local (the embedded model), openai, a scripted policy, or scripted:N (the "
        "scripted seats of level N of a world with seats).",
    ),
    base_url: str = typer.Option("http://127.0.0.1:8000/v1", "--base-url"),
    model: str = typer.Option(
        "default",
        "--model",
        help="--policy openai: the model's name; local: a model folder or .gguf file "
        "(default: the embedded model).",
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the API key."
    ),
    tool_format: str = typer.Option(
        "native",
        "--tool-format",
        help="native, text or grammar (calls decoded under the tools' grammar: local models; "
        "--policy local turns native into text).",
    ),
    tool_choice: str = typer.Option(
        "auto", "--tool-choice", help="auto, required, or first (the first reply calls a tool)."
    ),
    temperature: float | None = typer.Option(None, "--temperature"),
    max_tokens: int | None = typer.Option(None, "--max-tokens"),
    sampling: str = typer.Option("{}", "--sampling", help="More sampling arguments, as JSON."),
    token_ids: bool = typer.Option(
        True, "--token-ids/--no-token-ids", help="Ask for token ids and logprobs (vLLM)."
    ),
    max_turns: int = typer.Option(30, "--max-turns", min=1),
    context: str = typer.Option("all", "--context", help="all, recent:N or summary:N."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", help="Seconds per model call."),
    episode_timeout: float = typer.Option(1800.0, "--episode-timeout"),
    retries: int = typer.Option(4, "--retries", min=1, help="Attempts per model call."),
    checkpoint_every: int | None = typer.Option(
        None,
        "--checkpoint-every",
        help="Checkpoint live episodes every N calls (default: 1 for openai, 0 for scripted).",
    ),
    out: Path | None = typer.Option(None, "--out", help="Output folder."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out."),
    parquet: bool = typer.Option(False, "--parquet", help="Also write episodes.parquet."),
    json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    curriculum: Path | None = typer.Option(
        None,
        "--curriculum",
        help="Draw tasks from this curriculum (SQLite file) in rounds of --n-tasks groups, "
        "and update it with every outcome.",
    ),
    rounds: int = typer.Option(10, "--rounds", min=1, help="With --curriculum: rounds to run."),
    gaps: list[Path] | None = typer.Option(
        None,
        "--gaps",
        help="With --curriculum: favour tasks exercising the weak skills that the episodes of "
        "this trajectory store show (repeatable; see `envfactory gaps`).",
    ),
    credit: str | None = typer.Option(
        None,
        "--credit",
        help="Write credited.jsonl with advantages: method[+step][+shaping][+filter], e.g. "
        "grpo, drgrpo+gigpo+shaping (methods grpo drgrpo erpo atgrpo; steps gigpo rewardflow).",
    ),
    seat: list[str] = typer.Option([], "--seat", help=SEAT_HELP),
    worlds: list[str] | None = typer.Argument(
        None, metavar="ENV", help="Worlds to run, as --envs (both may be given)."
    ),
) -> None:
    """Run groups of episodes through the async engine and record every trajectory (a world
    with seats: one per seat, each seat played as --seat says)."""
    env_ids = choose_worlds(",".join([envs, *(worlds or [])]), policy)
    known = set(list_envs())
    if unknown := [e for e in env_ids if e not in known]:
        raise fail(f"no environment {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    with_seats = [e for e in env_ids if make(e).seats]
    if policy in SCRIPTED and with_seats:
        raise fail(
            f"{', '.join(with_seats)}: worlds with seats; their learner is --policy scripted:N, "
            f"openai or local, not {policy} (see --seat)"
        )
    try:
        seats = seat_specs(seat)
    except ValueError as exc:
        raise fail(f"--seat: {exc}") from None
    if seats and not with_seats:
        raise fail("--seat: none of these worlds has seats")
    if unknown := sorted(set(seats) - {s for e in with_seats for s in make(e).seats}):
        raise fail(f"--seat: no seat {unknown[0]!r} in {', '.join(with_seats)}")
    split_list = _csv(splits)
    if bad := [s for s in split_list if s not in SPLITS]:
        raise fail(f"--splits: {', '.join(bad)} is not one of {', '.join(SPLITS)}")
    try:
        levels = [int(d) for d in _csv(difficulties)] or None
        extra = jsonlib.loads(sampling)
    except ValueError as exc:
        raise fail(f"--difficulties / --sampling: {exc}") from None
    if tool_format not in ("native", "text", "grammar"):
        raise fail("--tool-format is native, text or grammar")
    if tool_format == "grammar" and policy != "local":
        raise fail("--tool-format grammar constrains a local model's decoding: --policy local")
    if tool_choice not in ("auto", "required", "first"):
        raise fail("--tool-choice is auto, required or first")
    args = {"temperature": temperature, "max_tokens": max_tokens}
    sampling_args = {**{k: v for k, v in args.items() if v is not None}, **extra}
    chosen = _policy(
        policy,
        base_url,
        model,
        api_key_env,
        sampling_args,
        token_ids,
        call_timeout,
        concurrency,
        env_ids,
    )
    refs = plan_tasks(env_ids, n_tasks, cast(list[Split], split_list), levels)
    harness = HarnessConfig(
        tool_format="text" if policy == "local" and tool_format == "native" else tool_format,
        tool_choice=tool_choice,
        max_turns=max_turns,
        context=_context(context),
    )
    config = EngineConfig(
        group_size=group_size,
        oversample=oversample,
        prefix_steps=prefix_steps,
        concurrency=concurrency,
        call_timeout_s=call_timeout,
        episode_timeout_s=episode_timeout,
        retry=RetryConfig(attempts=retries),
        checkpoint_every=checkpoint_every
        if checkpoint_every is not None
        else int(isinstance(chosen, OpenAIPolicy)),
    )
    folder = out or Path("runs") / f"rollout-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        credit_config = parse_credit(credit) if credit else None
    except ValueError as exc:
        raise fail(f"--credit: {exc}") from None
    for env_id in env_ids:
        make(env_id)  # build the worlds before the clock starts
    if gaps and curriculum is None:
        raise fail("--gaps steers a curriculum's draws: give --curriculum too")
    if curriculum is not None and seats:
        raise fail("--seat: a curriculum's rounds seat the learner as each world does by default")
    if curriculum is not None:
        from envfactory.curriculum.drive import Rounds
        from envfactory.curriculum.gaps import GapTargeter, find_gaps, store_records

        plan = Rounds(rounds, n_tasks, cast(Split, split_list[0]), tuple(env_ids))
        if gaps:
            plan = replace(plan, targeter=GapTargeter(find_gaps(store_records(gaps))))
        _with_curriculum(
            curriculum, folder, env_ids, plan, json, chosen, harness, config, resume, credit_config
        )
        return
    summary = _run(folder, refs, chosen, harness, config, resume, parquet, seats)
    if credit_config is not None:
        summary.files.append(str(credit_folder(folder, credit_config)[0]))
    if json:
        print_json(summary)
    else:
        show(summary)


def _with_curriculum(
    db: Path,
    folder: Path,
    env_ids: list[str],
    plan: Rounds,
    json: bool,
    policy: RolloutPolicy,
    harness: HarnessConfig,
    config: EngineConfig,
    resume: bool,
    credit: CreditConfig | None,
) -> None:
    from envfactory.cli.curriculum import run_curriculum, show_state

    summaries, cur = run_curriculum(db, folder, env_ids, plan, policy, harness, config, resume)
    for summary in summaries:
        if credit is not None and summary.out is not None:
            summary.files.append(str(credit_folder(Path(summary.out).parent, credit)[0]))
    if json:
        print_json(
            {
                "rounds": [s.model_dump(mode="json") for s in summaries],
                "curriculum": [s.model_dump(mode="json") for s in cur.state()],
            }
        )
        return
    for summary in summaries[-1:]:
        show(summary)
    show_state(cur)


def _run(
    folder: Path,
    refs: list[TaskRef],
    policy: RolloutPolicy,
    harness: HarnessConfig,
    config: EngineConfig,
    resume: bool,
    parquet: bool,
    seats: dict[str, str],
) -> RunSummary:
    return with_progress(
        trajectories(refs, config.group_size),
        lambda done, stopping: run_in(
            folder,
            refs,
            policy,
            harness=harness,
            config=config,
            resume=resume,
            parquet=parquet,
            on_episode=done,
            on_stop=stopping,
            seats=seats,
        ),
    )


def trajectories(refs: list[TaskRef], group_size: int) -> int:
    """The trajectories a run of ``refs`` records: one an episode, one a seat in a world with
    seats."""
    return sum(group_size * max(1, len(make(r.env_id).seats)) for r in refs)


def _num(v: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def show(summary: RunSummary) -> None:
    """The summary as tables: reward by environment and difficulty, statuses, costs."""
    table = Table(title="reward by environment and difficulty (faults are not scored)")
    for col in ("env", "difficulty", "episodes", "scored", "reward", "success"):
        table.add_column(col, justify="left" if col == "env" else "right")
    for c in summary.by_env_difficulty:
        table.add_row(
            c.env,
            str(c.difficulty),
            str(c.episodes),
            str(c.scored),
            _num(c.reward_mean),
            _num(c.success_rate),
        )
    table.add_row(
        "all",
        "",
        str(summary.episodes),
        "",
        _num(summary.reward_mean),
        _num(summary.success_rate),
        style="bold",
    )
    console.print(table)
    lat = summary.latency_s
    facts = Table(show_header=False, box=None)
    facts.add_row("statuses", ", ".join(f"{k} {v}" for k, v in summary.status_counts.items()))
    facts.add_row("groups", ", ".join(f"{k} {v}" for k, v in summary.groups.items()))
    facts.add_row(
        "tokens",
        f"prompt {summary.tokens['prompt']:,}, completion {summary.tokens['completion']:,}",
    )
    facts.add_row(
        "call latency",
        f"p50 {_num(lat['call_p50'])} s, p90 {_num(lat['call_p90'])} "
        f"s, p99 {_num(lat['call_p99'])} s",
    )
    facts.add_row(
        "episode time", f"p50 {_num(lat['episode_p50'])} s, p99 {_num(lat['episode_p99'])} s"
    )
    facts.add_row(
        "throughput",
        f"{summary.steps_per_s:,.0f} env steps/s, retries "
        f"{summary.retries}, loop lag p99 {_num(summary.loop_lag_ms_p99, '{:.1f}')} ms",
    )
    for error in summary.errors[:5]:
        facts.add_row("[red]error[/red]", error)
    console.print(facts)
    for path in summary.files:
        console.print(f" file          {path}", soft_wrap=True, highlight=False)
