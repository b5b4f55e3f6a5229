"""The ``envfactory`` command. Each subcommand's module is imported when that subcommand
runs (or when the help lists them all), so a command pays only for its own imports."""

from __future__ import annotations

import importlib
from functools import cache

import typer
from typer.core import TyperCommand, TyperGroup

# name -> (module under envfactory.cli, attribute: a command function or a Typer app,
# and the command class a function needs when it parses its own arguments)
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "envs": ("envs", "envs", None),
    "tasks": ("tasks", "tasks", None),
    "play": ("play", "play", None),
    "check": ("check", "check", None),
    "audit": ("audit", "audit_cmd", None),
    "demo": ("demo", "demo", None),
    "rollout": ("rollout", "rollout", None),
    "match": ("match", "match", None),
    "serve": ("serve", "serve", None),
    "bench-serve": ("serve", "bench_serve", None),
    "serve-model": ("serve_model", "serve_model", None),
    "proxy": ("proxy", "proxy", None),
    "train": ("train", "train", None),
    "export-sft": ("export_sft", "export_sft", None),
    "synth": ("synth", "synth", "SynthCommand"),
    "gaps": ("gaps", "gaps", None),
    "dashboard": ("dashboard", "dashboard", None),
    "init": ("packages", "init", None),
    "pack": ("packages", "pack", None),
    "install": ("packages", "install", None),
    "bench": ("bench", "app", None),
    "openapi": ("openapi", "app", None),
    "curriculum": ("curriculum", "app", None),
}


@cache
def load(name: str) -> TyperCommand | TyperGroup:
    """Subcommand ``name``, its module imported now."""
    module_name, attribute, command_class = COMMANDS[name]
    module = importlib.import_module(f"envfactory.cli.{module_name}")
    target = getattr(module, attribute)
    holder = typer.Typer(add_completion=False)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
        group = typer.main.get_command(holder)
        assert isinstance(group, TyperGroup)
        command = group.commands[name]
    else:
        cls = getattr(module, command_class) if command_class else TyperCommand
        holder.command(name, cls=cls)(target)
        command = typer.main.get_command(holder)
    assert isinstance(command, (TyperCommand, TyperGroup))
    return command


class LazyCommands(TyperGroup):
    """The subcommands of :data:`COMMANDS`, each loaded when asked for."""

    def list_commands(self, ctx: object) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: object, cmd_name: str) -> TyperCommand | TyperGroup | None:
        return load(cmd_name) if cmd_name in COMMANDS else None


app = typer.Typer(
    name="envfactory",
    cls=LazyCommands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """Verifiable, resettable tool-use worlds for agentic RL."""


if __name__ == "__main__":
    app()
