"""A progress bar over a run's episodes (``envfactory rollout``, ``match``, ``curriculum``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envfactory.cli.common import err_console, fail
from envfactory.contract.errors import EnvFactoryError
from envfactory.rollout.engine import Listener
from envfactory.trajectory.record import EpisodeRecord

T = TypeVar("T")


def with_progress(
    total: int,
    start: Callable[[Listener, Callable[[], None]], Coroutine[Any, Any, T]],
    note: Callable[[], str] | None = None,
) -> T:
    """Run ``start(on_episode, on_stop)`` under a progress bar of ``total`` episodes;
    ``note`` adds a few words to the bar after each episode."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task("episodes", total=total)
        faults = 0

        def done(rec: EpisodeRecord) -> None:
            nonlocal faults
            if rec.status == "infra_error":
                faults += 1
            else:
                bar.advance(job)
            words = [f"[red]{faults} infra errors[/red]"] if faults else []
            words += [note()] if note is not None else []
            bar.update(job, description=f"episodes ({', '.join(words)})" if words else "episodes")

        def stopping() -> None:
            bar.update(job, description="stopping: checkpointing live episodes (Ctrl-C aborts)")

        try:
            return asyncio.run(start(done, stopping))
        except EnvFactoryError as exc:
            raise fail(str(exc)) from None
