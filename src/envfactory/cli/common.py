"""Helpers shared by the commands."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import Any, ClassVar, Protocol, TypeVar, cast

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envfactory.contract.environment import Environment
from envfactory.contract.errors import DomainError, UnknownEnvironment
from envfactory.contract.tasks import Split
from envfactory.registry import make
from envfactory.registry.sources import resolve_all

console = Console()
err_console = Console(stderr=True)


def print_json(value: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, list):
        value = [v.model_dump(mode="json") if isinstance(v, BaseModel) else v for v in value]
    typer.echo(json.dumps(value, indent=2, default=str))


@contextlib.contextmanager
def yield_bar(label: str, total: int, transient: bool) -> Iterator[Callable[[bool], None]]:
    """A progress bar on stderr counting items done and those that passed; yields the
    callback to call with each item's outcome."""
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("passed {task.fields[passed]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=transient) as bar:
        job = bar.add_task(label, total=total, passed=0)
        passed = 0

        def advance(ok: bool) -> None:
            nonlocal passed
            passed += ok
            bar.update(job, advance=1, passed=passed)

        yield advance


def print_yield(title: str, unit: str, passed: int, failures: dict[str, int]) -> None:
    """A batch's outcomes as a table: how many passed the audit, how many failed and why."""
    table = Table(title=title)
    table.add_column("outcome")
    table.add_column(unit, justify="right")
    table.add_row("[green]passed the audit[/green]", str(passed))
    for reason, count in failures.items():
        table.add_row(reason, str(count))
    console.print(table)


def fail(message: object) -> typer.Exit:
    """Print ``message`` in red on stderr; the exit (status 2) for the caller to raise."""
    err_console.print(f"[red]{message}[/red]")
    return typer.Exit(2)


def load_env(env_id: str) -> Environment:
    """The world an id, domain file or folder names; exit 2 with the reason otherwise."""
    try:
        return make(env_id)
    except (UnknownEnvironment, DomainError) as exc:
        raise fail(exc) from None


def world_ids(sources: Iterable[str]) -> list[str]:
    """The ids of the worlds that ids, domain files and folders name (see
    :mod:`envfactory.registry.sources`); exit 2 with the reason when a file does not load."""
    try:
        return resolve_all(sources)
    except DomainError as exc:
        raise fail(exc) from None


def require_safe_bind(host: str, token: str, extra: str) -> None:
    """Exit 2 with the reason when a server may not bind ``host`` without a token (or with
    ``extra``, the hint to install the 'serve' extra, when that is missing)."""
    try:
        from envfactory.serving.config import check_bind
    except ImportError:
        raise fail(extra) from None
    try:
        check_bind(host, token or None)
    except ValueError as exc:
        raise fail(exc) from None


class CheckOutcome(Protocol):
    SHOWN: ClassVar[tuple[str, ...]]  # the measures a table shows

    @property
    def passed(self) -> bool: ...


R = TypeVar("R", bound=CheckOutcome)


def report_check(name: str, total: int, run: Callable[[Callable[[int], None]], R], json: bool) -> R:
    """``envfactory check``'s frame: ``run(progress)`` under a bar of ``total`` steps, then the
    report as JSON or as a table of the fields it names in ``SHOWN`` (and the first five
    ``problems`` it lists, if any, in red); exits 1 unless the report passed."""
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(f"checking {name}", total=total)
        report = run(lambda k: bar.advance(job, k))
    if json:
        print_json(report)
    else:
        table = Table(title=f"check {name}: {'passed' if report.passed else 'FAILED'}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key in report.SHOWN:
            table.add_row(key, str(getattr(report, key)))
        console.print(table)
        for problem in getattr(report, "problems", [])[:5]:
            console.print(f"[red]{problem}[/red]")
    if not report.passed:
        raise typer.Exit(1)
    return report


class SplitName(StrEnum):
    train = "train"
    validation = "validation"
    test = "test"

    @property
    def as_split(self) -> Split:
        return cast(Split, str(self.value))
