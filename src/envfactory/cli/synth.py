"""``envfactory synth``: compose new worlds from reusable parts, keep those the audit passes."""

from __future__ import annotations

import json as jsonlib
import os
from pathlib import Path

import typer
from rich.table import Table

from envfactory.cli.common import console, print_json, yield_bar
from envfactory.synth.pipeline import SynthSettings, run_synth


def synth(
    n: int = typer.Option(100, "--n", min=1, help="Worlds to compose (indices 0 .. N-1)."),
    out: Path = typer.Option(Path("worlds/synth"), "--out", help="Where passing worlds go."),
    seed: int = typer.Option(0, "--seed", help="Which library: the same seed, the same worlds."),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", min=1, help="Processes."),
    audit_n: int = typer.Option(100, "--audit-n", min=10, help="Audit tasks per world."),
    diversity: int = typer.Option(150, "--diversity", min=10, help="Diversity sample per world."),
    json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
) -> None:
    """Compose N domains (a theme, the people archetype and two or more action patterns),
    build and audit each, save those that pass to OUT, and report the yield. OUT is a world
    library: `envfactory envs --library OUT` lists its worlds, ENVFACTORY_LIBRARY=OUT makes
    them available to every command."""
    settings = SynthSettings(seed=seed, out=out, n=audit_n, diversity=diversity)
    out.mkdir(parents=True, exist_ok=True)
    with yield_bar("synthesising", n, transient=json) as advance:
        report = run_synth(n, settings, jobs=jobs, progress=lambda r: advance(r.passed))
    path = out / "report.json"
    path.write_text(jsonlib.dumps(report.model_dump(mode="json"), indent=1))
    summary = {**report.summary(), "out": str(out), "report": str(path)}
    if json:
        print_json(summary)
        return
    table = Table(title="envfactory synth")
    table.add_column("outcome")
    table.add_column("worlds", justify="right")
    table.add_row("[green]passed the audit[/green]", str(report.passed_audit))
    for reason, count in report.failures.items():
        table.add_row(reason, str(count))
    console.print(table)
    console.print(
        f"{report.generated} composed, {report.passed_audit} kept in {out} "
        f"({report.seconds_per_world:.2f} s per world); report: {path}"
    )
