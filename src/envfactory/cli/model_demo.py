"""The end of ``envfactory demo``: a real language model acting in a few worlds.

The embedded model (or ``--model PATH``) runs a few starter (difficulty 0) train tasks of two
database worlds through the same rollout engine as the scripted policies: one tool shown, ids
given, and tool calls decoded under the grammar of that tool, the first reply a call. A small
model on two CPU cores, and honest numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli.common import console, err_console
from envfactory.harness.config import HarnessConfig
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord

WORLDS = ("hotel", "retail")
DIFFICULTY = 0
MAX_TURNS = 2  # the call, then the report
MAX_TOKENS = 64
HARNESS = HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=MAX_TURNS)


@dataclass
class ModelRow:
    """One world's episodes of the model."""

    env: str
    rewards: list[float] = field(default_factory=list)
    calls: int = 0  # tool calls the model made
    valid: int = 0  # of those, calls the world ran (a known tool, well-formed arguments)
    sample: str = ""  # the start of the model's first reply

    def add(self, rec: EpisodeRecord) -> None:
        self.rewards.append(rec.reward or 0.0)
        for step in rec.steps:
            if step.actor == "agent" and step.action.get("type") == "tool_call":
                self.calls += 1
                self.valid += step.kind != "tool_error"
        replies = [m.get("content") or "" for m in rec.messages if m.get("role") == "assistant"]
        if replies and not self.sample:
            self.sample = " ".join(str(replies[0]).split())[:70]


def run_model(model: str, tasks: int, worlds: list[str]) -> tuple[str, list[ModelRow]] | None:
    """The model's rows, or None (with a note) when it cannot be loaded here."""
    from envfactory.cli.rollout import local_policy

    try:
        policy = local_policy(model, {"temperature": 0.7, "max_tokens": MAX_TOKENS})
    except typer.Exit:  # why was printed
        err_console.print("[yellow]so the real-model run is skipped[/yellow]")
        return None
    refs = [TaskRef(w, "train", DIFFICULTY, i) for w in worlds for i in range(tasks)]
    rows = {w: ModelRow(w) for w in worlds}
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(f"{policy.info.name} episodes", total=len(refs))

        def done(rec: EpisodeRecord) -> None:
            bar.advance(job)
            rows[rec.env_id].add(rec)

        engine = RolloutEngine(
            policy,
            harness=HARNESS,
            config=EngineConfig(concurrency=len(refs)),
            on_episode=done,
            keep_records=False,
        )
        engine.run_sync(refs)
    return policy.info.name, list(rows.values())


def show(name: str, rows: list[ModelRow]) -> None:
    table = Table(
        title=f"a real model: {name}, difficulty {DIFFICULTY}, {MAX_TURNS} turns of at most "
        f"{MAX_TOKENS} tokens (tool calls under the tools' grammar)"
    )
    for col in ("env", "episodes", "reward", "tool calls valid", "first reply begins"):
        table.add_column(col, justify="left" if col in ("env", "first reply begins") else "right")
    for r in rows:
        table.add_row(
            r.env,
            str(len(r.rewards)),
            f"{fmean(r.rewards):.3f}" if r.rewards else "-",
            f"{r.valid}/{r.calls}",
            r.sample,
        )
    console.print(table)
