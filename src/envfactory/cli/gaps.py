"""``envfactory gaps``: where an agent fails, by skill, and how far gap targeting steers."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from envfactory.cli.common import console, fail, print_json


def gaps(
    stores: list[Path] = typer.Argument(..., help="Trajectory stores (rollout --out folders)."),
    min_episodes: int = typer.Option(5, "--min-episodes", min=1, help="Skip rarer skills."),
    top: int = typer.Option(20, "--top", min=1, help="Rows shown (and plotted)."),
    weakest: int = typer.Option(5, "--weakest", min=1, help="Gaps the targeting aims at."),
    draws: int = typer.Option(200, "--draws", min=1, help="Tasks drawn to measure targeting."),
    plot: Path | None = typer.Option(None, "--plot", help="Write the weakest skills as a PNG."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Each skill's success (goal templates, write tools, rules, plan length, difficulty knobs)
    over the scored episodes of STORES, weakest first; and the share of drawn tasks that
    exercise the weakest gaps, plain beside gap-targeted (`rollout --curriculum --gaps`)."""
    from envfactory.curriculum.gaps import (
        GapTargeter,
        find_gaps,
        plot_gaps,
        store_records,
        targeting_share,
    )

    for store in stores:
        if not store.exists():
            raise fail(f"{store}: no such trajectory store")
    cells: set[tuple[str, int]] = set()
    records = []
    for rec in store_records(stores):
        records.append(rec)
        cells.add((rec.env_id, rec.difficulty))
    stats = find_gaps(records, min_episodes=min_episodes)
    band = [s for s in stats if s.in_band]
    if not band:
        raise fail("no skill is in the learnable band (every one always or never succeeds)")
    aimed = [s.skill for s in band[:weakest]]
    share = targeting_share(GapTargeter(stats, focus=weakest), sorted(cells), aimed, draws)
    if plot is not None:
        plot_gaps(stats, str(plot), top=top)
    result = {
        "episodes": len(records),
        "skills": [s.model_dump(mode="json") for s in stats[:top]],
        "weakest": aimed,
        "targeting": share,
    }
    if json:
        print_json(result)
        return
    table = Table(title=f"skills over {len(records)} episodes, weakest first")
    for col in ("skill", "episodes", "success (95% CI)", "in band"):
        table.add_column(col)
    for s in stats[:top]:
        ci = f"{s.success:.2f} ({s.ci95[0]:.2f}-{s.ci95[1]:.2f})"
        table.add_row(s.skill, str(s.episodes), ci, "yes" if s.in_band else "no")
    console.print(table)
    console.print(
        f"tasks exercising the {len(aimed)} weakest skills: {share['plain_share']:.0%} drawn "
        f"plainly, {share['targeted_share']:.0%} with gap targeting ({draws} draws)"
    )
