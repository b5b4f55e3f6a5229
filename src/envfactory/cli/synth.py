"""``envfactory synth``: compose new worlds from reusable parts, keep those the audit passes."""

from __future__ import annotations

import json as jsonlib
import os
from pathlib import Path

import typer

from envfactory.cli.common import console, fail, print_json, print_yield, yield_bar
from envfactory.synth.pipeline import SynthSettings, WorldResult, run_synth


def synth(
    n: int = typer.Option(100, "--n", min=1, help="Worlds wanted (that pass the audit)."),
    out: Path = typer.Option(Path("worlds/synth"), "--out", help="Where passing worlds go."),
    seed: int = typer.Option(0, "--seed", help="Which library: the same seed, the same worlds."),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", min=1, help="Processes."),
    audit_n: int = typer.Option(100, "--audit-n", min=10, help="Audit tasks per world."),
    diversity: int = typer.Option(150, "--diversity", min=10, help="Diversity sample per world."),
    json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
    writer: str | None = typer.Option(
        None,
        "--writer",
        help="Have a model write the domains instead: 'local' (the embedded model, served on "
        "loopback) or an OpenAI-compatible base URL.",
    ),
    writer_model: str = typer.Option("default", "--writer-model", help="The model's name."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="--writer: repair rounds per seed."),
    max_tokens: int = typer.Option(1024, "--max-tokens", min=16, help="--writer: reply length."),
    constrained: bool = typer.Option(
        False, "--constrained", help="--writer: ask for JSON under the domain schema."
    ),
) -> None:
    """Compose domains (a theme, the people archetype and two or more action patterns), build
    and audit each, until N have passed (at most 2N tried); save them to OUT, report the
    yield. OUT is a world library: `envfactory envs --library OUT` lists its worlds, and
    ENVFACTORY_LIBRARY=OUT makes them available to every command."""
    out.mkdir(parents=True, exist_ok=True)
    if writer is not None:
        _written(n, out, seed, writer, writer_model, rounds, max_tokens, constrained, json)
        return
    settings = SynthSettings(seed=seed, out=out, n=audit_n, diversity=diversity)
    with yield_bar("worlds passed", n, transient=json) as advance:

        def passed(r: WorldResult) -> None:
            if r.passed:
                advance(True)

        report = run_synth(n, settings, jobs=jobs, progress=passed)
    path = out / "report.json"
    path.write_text(jsonlib.dumps(report.model_dump(mode="json"), indent=1))
    summary = {**report.summary(), "out": str(out), "report": str(path)}
    if json:
        print_json(summary)
        return
    print_yield("envfactory synth", "worlds", report.passed_audit, report.failures)
    console.print(
        f"{report.generated} composed, {report.passed_audit} kept in {out} "
        f"({report.seconds_per_world:.2f} s per world); report: {path}"
    )


def _written(
    n: int,
    out: Path,
    seed: int,
    writer: str,
    model: str,
    rounds: int,
    max_tokens: int,
    constrained: bool,
    json: bool,
) -> None:
    """``synth --writer``: a model writes the domains, repaired over ``rounds``."""
    from envfactory.synth.writer import WriterSettings, seed_names, write_domains

    seeds = seed_names(n, seed)

    def run(base_url: str, name: str) -> None:
        s = WriterSettings(base_url, name, rounds, max_tokens, constrained=constrained)
        with yield_bar("writing", n, transient=json) as advance:
            report = write_domains(seeds, s, out, progress=advance)
        path = out / "writer-report.json"
        path.write_text(jsonlib.dumps(report.model_dump(mode="json"), indent=1))
        summary = report.model_dump(mode="json", exclude={"results"}) | {"report": str(path)}
        if json:
            print_json(summary)
            return
        console.print(
            f"{report.generated} seeds, {report.passed_audit} written worlds passed the audit; "
            f"yield by round {report.yield_per_round}; stages {report.stages_per_round}; "
            f"report: {path}"
        )

    if writer != "local":
        run(writer, model)
        return
    try:
        from envfactory.serving.model_server import ModelPool, running_model
    except ImportError as exc:
        raise fail(f"--writer local needs the serve and integrations extras: {exc}") from None
    pool = ModelPool.load(max_tokens=max_tokens)
    with running_model(pool) as served:
        run(served.base_url, pool.name)
