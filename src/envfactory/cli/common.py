"""Helpers shared by the commands."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, cast

import typer
from pydantic import BaseModel
from rich.console import Console

from envfactory.env import Environment
from envfactory.errors import UnknownEnvironment
from envfactory.registry import make
from envfactory.tasks.types import Split

console = Console()
err_console = Console(stderr=True)


def print_json(value: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, list):
        value = [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
    typer.echo(json.dumps(value, indent=2, default=str))


def load_env(env_id: str) -> Environment:
    try:
        return make(env_id)
    except UnknownEnvironment as exc:
        err_console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


class SplitName(StrEnum):
    train = "train"
    validation = "validation"
    test = "test"

    @property
    def as_split(self) -> Split:
        return cast(Split, str(self.value))
