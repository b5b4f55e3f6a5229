"""The benchmarks as named sections: ``envfactory bench SECTION [options]``.

A :class:`Section` is data: a name, a one-line description, its options (keywords of its run
function), the ``"module:function"`` that runs it and returns its record, and what it needs
(modules, and a ``"module:function"`` that says why it cannot run here, or None). Nothing is
imported until a section runs, so listing them (``envfactory bench --help``) stays fast.
``envfactory bench --all`` (:mod:`envfactory.bench.all`) runs every section with ``in_all``
at its run function's defaults (the figures of its own command), or at its ``quick`` sizes.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any, Literal

from pydantic import BaseModel

from envfactory.contract.errors import EnvFactoryError

#: How an option is read from the command line: ``ints`` and ``strs`` are comma-separated.
Kind = Literal["int", "float", "str", "bool", "ints", "strs"]


class Unavailable(EnvFactoryError):
    """A section cannot run here: a runtime, a module or data is missing (the reason says)."""


@dataclass(frozen=True)
class Option:
    """One option of a section: ``name`` is its run function's keyword, ``flag`` its command
    line flag (default: ``--name`` with dashes)."""

    name: str
    kind: Kind
    help: str
    flag: str = ""
    choices: tuple[str, ...] = ()

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> tuple[int, ...] | tuple[str, ...]:
        """A comma-separated value of an ``ints`` or ``strs`` option."""
        items = [t.strip() for t in text.split(",") if t.strip()]
        return tuple(int(t) for t in items) if self.kind == "ints" else tuple(items)


@dataclass(frozen=True)
class Section:
    name: str
    description: str
    run: str  # "module:function" returning the record: a pydantic model or JSON values
    options: tuple[Option, ...] = ()
    check: str | None = None  # "module:function" returning why it cannot run here, or None
    requires: tuple[str, ...] = ()  # modules it imports
    extra: str = ""  # the envfactory extra that installs them
    quick: Mapping[str, Any] = field(default_factory=dict)  # --all --quick's arguments
    in_all: bool = True
    columns: tuple[str, ...] = ()  # a list record's columns in a human table

    def unavailable(self) -> str | None:
        """Why this section cannot run here, or None."""
        for module in self.requires:
            if find_spec(module) is None:
                return f"{module} is not installed (pip install 'envfactory[{self.extra}]')"
        return None if self.check is None else _load(self.check)()

    def defaults(self) -> dict[str, Any]:
        """The run function's own defaults (imports the section's module)."""
        params = inspect.signature(_load(self.run)).parameters.values()
        return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}

    def __call__(self, **arguments: Any) -> Any:
        """Run the section; its record as JSON values. Raises :class:`Unavailable` first when
        it cannot run here."""
        why = self.unavailable()
        if why:
            raise Unavailable(why)
        record = _load(self.run)(**arguments)
        if isinstance(record, list):
            return [_plain(r) for r in record]
        return _plain(record)


def _plain(record: Any) -> Any:
    return record.model_dump(mode="json") if isinstance(record, BaseModel) else record


def _load(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


_ENV = Option("env_id", "str", "The world to measure.", flag="--env")


_INTEGRATIONS = ("torch", "transformers")

SECTIONS: dict[str, Section] = {
    s.name: s
    for s in (
        Section(
            "world",
            "The episode API of a database world: reset, step, evaluate, synthesis, memory.",
            "envfactory.bench.world:bench_world",
            (
                _ENV,
                Option("episodes", "int", "Gold-plan episodes timed."),
                Option("live", "int", "Episodes held at once for the memory figure."),
            ),
            quick={"env_id": "retail", "episodes": 20, "live": 20},
        ),
        Section(
            "fork",
            "episode.fork() of a database world: its cost, and forks checked exact.",
            "envfactory.bench.fork:bench_fork",
            (
                _ENV,
                Option("n", "int", "Forks timed."),
                Option("tasks", "int", "Tasks whose every split point is checked."),
            ),
            quick={"env_id": "retail", "n": 200, "tasks": 2},
        ),
        Section(
            "rollout",
            "The rollout engine: live episodes, steps/s and event-loop lag per executor.",
            "envfactory.bench.rollout:bench_rollout",
            (
                _ENV,
                Option("live", "int", "Episodes held live at once."),
                Option("throughput_concurrency", "int", "Concurrency of the throughput phase."),
                Option("executors", "strs", "Executors to compare (sliced, worker, thread)."),
                Option("tasks", "int", "Distinct tasks the episodes cycle through."),
            ),
            quick={
                "env_id": "retail",
                "live": 100,
                "throughput_concurrency": 16,
                "tasks": 20,
                "executors": ("sliced",),
            },
        ),
        Section(
            "sandbox",
            "The terminal worlds' sandbox: start-up and episode costs, plain vs boxed.",
            "envfactory.bench.sandbox:bench_sandbox",
            (
                _ENV,
                Option("starts", "int", "Sandbox starts timed."),
                Option("episodes", "int", "Episodes timed."),
            ),
            check="envfactory.terminal.sandbox:unavailable_reason",
            quick={"starts": 5, "episodes": 10},
        ),
        Section(
            "research",
            "Research worlds: reset, each tool's step, the verdict, and search latency.",
            "envfactory.bench.research:bench_research",
            (
                Option("envs", "strs", "Research worlds to replay."),
                Option("episodes", "int", "Gold-plan episodes per world."),
                Option("sizes", "ints", "Corpus sizes (documents) for search latency."),
                Option("queries", "int", "Searches timed per size."),
            ),
            quick={"envs": ("research-wiki",), "episodes": 5, "sizes": (1000,), "queries": 20},
        ),
        Section(
            "repo",
            "Repository worlds: reset, step and verdict; the verified supply per level.",
            "envfactory.bench.repo:bench_repo",
            (
                _ENV,
                Option("tasks", "int", "Tasks replayed (real test runs)."),
                Option("sample", "int", "Random candidates verified for the supply (0: none)."),
                Option("level_sample", "int", "Candidates verified per level (0: none)."),
                Option("seed", "int", "Seed of the candidate sample."),
            ),
            check="envfactory.repo.projects:unavailable_reason",
            quick={"env_id": "repo-python", "tasks": 1},
        ),
        Section(
            "web",
            "Web worlds through a real headless browser: reset, action latency, held episodes.",
            "envfactory.bench.web:bench_web",
            (
                _ENV,
                Option("episodes", "int", "Oracle episodes timed."),
                Option("held", "ints", "Counts of episodes held at once."),
                Option("rounds", "int", "Oracle rounds per held count."),
            ),
            check="envfactory.web.browser:available",
            quick={"env_id": "web-retail", "episodes": 1, "held": (1,), "rounds": 1},
        ),
        Section(
            "decode",
            "Batched decoding of the embedded model: transformers' stock path vs envfactory's.",
            "envfactory.bench.decode:bench_decode",
            tuple(
                Option(name, "int", help)
                for name, help in (
                    ("batch", "Sequences decoded together."),
                    ("prefix", "Shared prompt tokens."),
                    ("own", "Tokens of each sequence's own."),
                    ("new", "Tokens generated per sequence."),
                    ("repeats", "Repeats of each timing."),
                    ("calls", "Model calls per episode (reuse)."),
                    ("observation", "Tokens of each observation (reuse)."),
                    ("waiting", "Waiting calls batched."),
                    ("ragged", "Requests of different lengths."),
                    ("reply", "Reply tokens of the longest ragged request."),
                )
            ),
            check="envfactory.bench.decode:unavailable",
            requires=_INTEGRATIONS,
            extra="integrations",
            quick={
                "batch": 2,
                "prefix": 32,
                "own": 8,
                "new": 2,
                "repeats": 1,
                "calls": 2,
                "observation": 8,
                "ragged": 2,
                "reply": 4,
            },
        ),
        Section(
            "tau2",
            "tau2-retail against tau2-bench's own approach, on its retail data.",
            "envfactory.peers.tau2.bench:bench_tau2",
            (
                Option("n", "int", "Tasks replayed (default: all)."),
                Option("passes", "int", "Timed passes over them."),
            ),
            check="envfactory.peers.tau2.data:missing_reason",
            quick={"n": 3, "passes": 1},
        ),
        Section(
            "ray",
            "Episodes/s through a Ray pool of 1 vs 2 rollout workers.",
            "envfactory.integrations.ray.bench:bench_ray",
            (
                _ENV,
                Option("groups", "int", "Task groups played."),
                Option("group_size", "int", "Episodes per group."),
                Option("worker_counts", "ints", "Pool sizes compared."),
                Option("repeats", "int", "Repeats of each pool size."),
            ),
            requires=("ray",),
            extra="integrations",
            quick={"env_id": "retail", "groups": 4, "group_size": 2, "repeats": 1},
        ),
        Section(
            "serve",
            "A server under load on loopback (sessions, latency, throughput) vs OpenEnv's.",
            "envfactory.bench.serve:bench_serve",
            (
                _ENV,
                Option("sessions", "int", "Live sessions to open and hold."),
                Option("concurrent", "int", "Sessions issuing tool calls."),
                Option("seconds", "float", "Duration of each load phase."),
                Option("think_ms", "float", "Mean pause of a session between calls."),
                Option("peer", "bool", "Also load OpenEnv's server."),
                Option("client_procs", "int", "Load client processes (default: the CPUs)."),
            ),
            requires=("fastapi", "uvicorn", "httpx"),
            extra="serve",
            quick={
                "sessions": 10,
                "concurrent": 4,
                "seconds": 0.3,
                "think_ms": 10.0,
                "peer": False,
            },
        ),
        Section(
            "multiagent",
            "Multi-agent worlds: scripted seats in process, and through the rollout engine.",
            "envfactory.bench.multiagent:bench_multiagent",
            (
                Option("envs", "strs", "Worlds with seats (default: all)."),
                Option("episodes", "int", "Episodes per world."),
            ),
            quick={"episodes": 2},
        ),
        Section(
            "calibration",
            "A real model over every single-agent world and level: success with 95% intervals.",
            "envfactory.bench.calibration_run:run_calibration",
            (
                Option("tasks", "int", "Tasks per cell."),
                Option("envs", "strs", "Worlds (default: every single-agent world)."),
                Option("difficulties", "ints", "Levels (default: each world's)."),
                Option("model", "str", "The embedded model (default), a folder or a .gguf."),
                Option(
                    "max_turns", "int", "Model calls per episode, at least (see --fixed-turns)."
                ),
                Option(
                    "fixed_turns", "bool", "Exactly --max-turns calls, even too few for a plan."
                ),
                Option("max_tokens", "int", "Tokens per model call."),
                Option("plot", "str", "Write a heat map PNG here."),
                Option("out", "str", "JSON-lines file of cells: appended as measured, resumed."),
                Option("jobs", "int", "Cells measured at once, one process each."),
                Option(
                    "tool_format",
                    "str",
                    "Free Hermes text or grammar-decoded calls.",
                    choices=("text", "grammar"),
                ),
            ),
            requires=_INTEGRATIONS,
            extra="integrations",
            in_all=False,  # hours: its own command
            columns=("env", "difficulty", "success", "ci95", "mean_reward", "turns_mean"),
        ),
        Section(
            "grpo-step",
            "A GRPO step of envfactory train, its time by part (generation to optimizer).",
            "envfactory.bench.grpo_step:bench_grpo_step",
            (
                Option("world", "str", "The world trained on (its starter train tasks)."),
                Option("steps", "int", "GRPO steps timed."),
                Option("prompts_per_step", "int", "Tasks a step."),
                Option("group_size", "int", "Episodes per task."),
                Option("lora_rank", "int", "LoRA adapters of this rank (0: all weights)."),
                Option("learning_rate", "float", "AdamW learning rate."),
                Option("max_new_tokens", "int", "Tokens per reply."),
                Option("threads", "int", "Torch threads (0: the idle cores)."),
            ),
            check="envfactory.bench.decode:unavailable",
            requires=(*_INTEGRATIONS, "trl"),
            extra="integrations",
            in_all=False,  # minutes a step: its own command
        ),
    )
}
