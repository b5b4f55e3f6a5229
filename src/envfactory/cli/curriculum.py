"""``envfactory curriculum``: the frontier per environment and its history, and the
simulated-learner comparison. ``run_curriculum`` is what ``envfactory rollout --curriculum``
runs."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envfactory.cli.common import console, err_console, fail, print_json
from envfactory.cli.progress import with_progress
from envfactory.curriculum.controller import Curriculum, CurriculumConfig
from envfactory.curriculum.drive import Rounds, run_rounds
from envfactory.curriculum.learners import LearnerSpec
from envfactory.curriculum.simulate import SeedResult, SimulationSettings, simulate
from envfactory.curriculum.store import CurriculumError, CurriculumStore
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.registry import make
from envfactory.rollout.summary import RunSummary
from envfactory.rollout.types import EngineConfig

DEFAULT_DB = Path("runs/curriculum.sqlite")
DB_OPTION = typer.Option(
    DEFAULT_DB, "--db", envvar="ENVFACTORY_CURRICULUM", help="The curriculum's SQLite file."
)

app = typer.Typer(
    help="The curriculum: frontiers per environment, their history, and a simulation.",
    no_args_is_help=False,
)


def _open(db: Path) -> Curriculum:
    if not db.exists():
        raise fail(f"no curriculum at {db}; start one with envfactory rollout --curriculum {db}")
    try:
        return Curriculum(CurriculumStore(db))
    except CurriculumError as exc:
        raise fail(exc) from None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def show_state(cur: Curriculum) -> None:
    table = Table(title=f"curriculum {cur.store.path}")
    for col in (
        "env",
        "frontier",
        "window",
        "at frontier",
        "accuracy",
        "recent",
        "weight",
        "episodes",
    ):
        table.add_column(col, justify="left" if col == "env" else "right")
    for s in cur.state():
        table.add_row(
            s.env_id,
            f"{s.frontier} of {s.levels[-1]}",
            ",".join(map(str, s.window)),
            str(s.frontier_samples),
            _pct(s.frontier_accuracy),
            _pct(s.recent_success),
            f"{s.weight:.2f}",
            str(s.episodes),
        )
    console.print(table)


def show_history(cur: Curriculum, env: str | None) -> None:
    table = Table(title="frontier history")
    for col in ("when", "env", "event", "from", "to", "samples", "accuracy", "env episodes"):
        table.add_column(col, justify="left" if col in ("when", "env", "event") else "right")
    for e in cur.history(env):
        table.add_row(
            dt.datetime.fromtimestamp(e.at).strftime("%Y-%m-%d %H:%M:%S"),
            e.env_id,
            e.event,
            "-" if e.level_from is None else str(e.level_from),
            str(e.level_to),
            str(e.samples),
            _pct(e.accuracy),
            str(e.episodes),
        )
    console.print(table)


@app.callback(invoke_without_command=True)
def curriculum(ctx: typer.Context, db: Path = DB_OPTION) -> None:
    """Without a subcommand: the frontier per environment, then its history."""
    if ctx.invoked_subcommand is not None:
        return
    cur = _open(db)
    show_state(cur)
    show_history(cur, None)


@app.command("show")
def show(db: Path = DB_OPTION, json: bool = typer.Option(False, "--json")) -> None:
    """The frontier, window, accuracy and sampling weight of every environment."""
    cur = _open(db)
    if json:
        print_json(cur.state())
    else:
        show_state(cur)


@app.command("history")
def history(
    db: Path = DB_OPTION,
    env: str | None = typer.Option(None, "--env", help="One environment only."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Every frontier move: when, from which level to which, on how many samples."""
    cur = _open(db)
    if json:
        print_json([asdict(e) for e in cur.history(env)])
    else:
        show_history(cur, env)


@app.command("simulate")
def simulate_cmd(
    seeds: int = typer.Option(20, "--seeds", min=1),
    episodes: int = typer.Option(4000, "--episodes", min=100, help="Episode budget per arm."),
    envs: int = typer.Option(4, "--envs", min=1, help="Simulated environments."),
    levels: int = typer.Option(20, "--levels", min=2, help="Levels per environment."),
    two_way: bool = typer.Option(False, "--two-way", help="Also lower collapsed frontiers."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the plot to this PNG."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Curriculum vs fixed difficulty vs uniform sampling, with simulated learners."""
    config = CurriculumConfig(lower_at=0.2 if two_way else None)
    settings = SimulationSettings(
        seeds=seeds,
        episodes=episodes,
        envs=envs,
        levels=levels,
        curriculum=config,
        learner=LearnerSpec(),
    )
    columns = (TextColumn("seeds"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task("seeds", total=seeds)

        def advance(_: SeedResult) -> None:
            bar.advance(job)

        result = simulate(settings, on_seed=advance)
    if plot is not None:
        from envfactory.curriculum.plot import plot_simulation

        plot_simulation(result, plot, settings.trace_every)
    if json:
        print_json(result)
        return
    table = Table(title=f"final skill after {episodes} episodes, {seeds} seeds")
    for col in ("arm", "mean", "std", "min", "max"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm in ("curriculum", "fixed", "uniform"):
        s = result.spread[arm]
        name = f"fixed (level {result.fixed_level})" if arm == "fixed" else arm
        table.add_row(name, f"{s.mean:.2f}", f"{s.std:.2f}", f"{s.min:.2f}", f"{s.max:.2f}")
    console.print(table)
    console.print(
        f"frontier in [{result.band[0]}, {result.band[1]}]: "
        f"{100 * result.frontier_in_band_fraction:.1f}% of episodes; curriculum beats fixed on "
        f"{result.curriculum_beats_fixed}/{seeds} seeds, uniform on "
        f"{result.curriculum_beats_uniform}/{seeds}"
    )
    if plot is not None:
        console.print(f"plot: {plot}")


def run_curriculum(
    db: Path,
    folder: Path,
    env_ids: list[str],
    plan: Rounds,
    policy: RolloutPolicy,
    harness: HarnessConfig,
    config: EngineConfig,
    resume: bool,
) -> tuple[list[RunSummary], Curriculum]:
    """``envfactory rollout --curriculum``: rounds drawn from the curriculum in ``db``."""
    try:
        cur = Curriculum(CurriculumStore(db))
        for env_id in env_ids:
            cur.add(env_id, make(env_id).difficulties)
    except (CurriculumError, ValueError) as exc:
        raise fail(exc) from None
    total = plan.rounds * plan.groups * config.group_size
    summaries = with_progress(
        total,
        lambda done, stopping: run_rounds(
            folder,
            cur,
            policy,
            plan,
            harness=harness,
            config=config,
            resume=resume,
            on_episode=done,
            on_stop=stopping,
        ),
        note=lambda: "frontier " + ", ".join(f"{e} {cur.frontier(e)}" for e in env_ids),
    )
    return summaries, cur
