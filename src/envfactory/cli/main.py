"""The ``envfactory`` command."""

from __future__ import annotations

import typer

from envfactory.cli import (
    audit,
    bench,
    check,
    dashboard,
    demo,
    envs,
    export_sft,
    gaps,
    match,
    openapi,
    packages,
    play,
    rollout,
    serve,
    synth,
    tasks,
    train,
)
from envfactory.cli import curriculum as curriculum_cli
from envfactory.cli import proxy as proxy_cli
from envfactory.cli import serve_model as serve_model_cli

app = typer.Typer(
    name="envfactory",
    help="Verifiable, resettable tool-use worlds for agentic RL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("envs")(envs.envs)
app.command("tasks")(tasks.tasks)
app.command("play")(play.play)
app.command("check")(check.check)
app.command("audit")(audit.audit_cmd)
app.command("demo")(demo.demo)
app.command("rollout")(rollout.rollout)
app.command("match")(match.match)
app.command("serve")(serve.serve)
app.command("bench-serve")(serve.bench_serve)
app.command("serve-model")(serve_model_cli.serve_model)
app.command("proxy")(proxy_cli.proxy)
app.command("train")(train.train)
app.command("export-sft")(export_sft.export_sft)
app.command("synth", cls=synth.SynthCommand)(synth.synth)
app.command("gaps")(gaps.gaps)
app.command("dashboard")(dashboard.dashboard)
app.command("init")(packages.init)
app.command("pack")(packages.pack)
app.command("install")(packages.install)
app.add_typer(bench.app, name="bench")
app.add_typer(openapi.app, name="openapi")
app.add_typer(curriculum_cli.app, name="curriculum")


if __name__ == "__main__":
    app()
