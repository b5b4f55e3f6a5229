"""``envfactory synth``: compose new worlds from reusable parts, keep those the audit passes."""

from __future__ import annotations

import contextlib
import json as jsonlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from envfactory.cli.common import console, fail, print_json, print_yield, yield_bar
from envfactory.journal import JournalError
from envfactory.quality.audit import SHAPES_MIN
from envfactory.synth.pipeline import SynthSettings, WorldResult, run_synth

LOCAL = "local"  # --ray without an address: a Ray instance started here


class SynthCommand(TyperCommand):
    """``synth``, whose ``--ray`` takes an optional ADDRESS: given alone (last, or before
    another option) it means a local Ray instance. Typer's parser has no optional values."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        fixed: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                fixed += args[i:]
                break
            following = args[i + 1] if i + 1 < len(args) else "-"
            bare = arg == "--ray" and following.startswith("-")
            fixed.append(f"--ray={LOCAL}" if bare else arg)
        return super().parse_args(ctx, fixed)


def synth(
    n: int = typer.Option(100, "--n", min=1, help="Worlds wanted (that pass the audit)."),
    out: Path = typer.Option(Path("worlds/synth"), "--out", help="Where passing worlds go."),
    seed: int = typer.Option(0, "--seed", help="Which library: the same seed, the same worlds."),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", min=1, help="Processes."),
    audit_n: int = typer.Option(100, "--audit-n", min=10, help="Audit tasks per world."),
    diversity: int = typer.Option(
        150,
        "--diversity",
        min=SHAPES_MIN,
        help=f"Diversity sample per world (a world needs "
        f"{SHAPES_MIN} plan shapes among them, so fewer would refuse every world).",
    ),
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
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Run the candidates as Ray tasks: alone, on a local Ray instance of --jobs CPUs; "
        "with ADDRESS (host:port, ray://host:port, auto), on that cluster.",
    ),
    fresh: bool = typer.Option(
        False, "--fresh", help="Start over: forget OUT's journal and the worlds it saved."
    ),
) -> None:
    """Compose domains (a theme, the people archetype and two or more action patterns), build
    and audit each, until N have passed (at most 2N tried); save them to OUT, report the
    yield. OUT is a world library: `envfactory envs --library OUT` lists its worlds, and
    ENVFACTORY_LIBRARY=OUT makes them available to every command. A run journals each
    candidate in OUT as it finishes: run the same command again and a stopped run goes on."""
    out.mkdir(parents=True, exist_ok=True)
    if writer is not None:
        _written(n, out, seed, writer, writer_model, rounds, max_tokens, constrained, json)
        return
    settings = SynthSettings(seed=seed, out=out, audit_n=audit_n, diversity=diversity)
    with yield_bar("worlds passed", n, transient=json) as advance:

        def passed(r: WorldResult) -> None:
            if r.passed:
                advance(True)

        try:
            with _ray(ray, jobs):
                report = run_synth(
                    n, settings, jobs=jobs, progress=passed, ray=ray is not None, fresh=fresh
                )
        except JournalError as exc:
            raise fail(exc) from None
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


@contextlib.contextmanager
def _ray(address: str | None, jobs: int) -> Iterator[None]:
    """Connected to Ray for the block: a local instance of ``jobs`` CPUs, or the cluster at
    ``address``; nothing when ``address`` is None."""
    if address is None:
        yield
        return
    try:
        import ray
    except ImportError:
        raise fail("--ray needs Ray: install envfactory's integrations extra") from None
    from envfactory.integrations.ray.cluster import init_local

    if address == LOCAL:
        init_local(num_cpus=jobs)
    else:
        ray.init(address=address, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


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
