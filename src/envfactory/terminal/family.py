"""A task family: a generator of terminal tasks from a seed and a difficulty."""

from __future__ import annotations

import random
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import Field

from envfactory.tasks.types import HiddenTask, PlanStep
from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.fs import FileSpec

DIFFICULTIES = [1, 2, 3, 4, 5]


class TerminalHidden(HiddenTask):
    """What only the verifier knows of a terminal task: its initial files and its tests."""

    files: list[FileSpec]
    tests: list[CompletionTest]
    shape: list[str] = Field(default_factory=list)


@dataclass
class Draft:
    """A generated task before it is checked and given an id. ``files`` may be a function
    that lays them out (with no draws of the family's random generator): most drafts are
    drawn for a split they miss and never need their files."""

    instruction: str
    files: list[FileSpec] | Callable[[], list[FileSpec]]
    gold: list[PlanStep]
    tests: list[CompletionTest]
    knobs: dict[str, int] = field(default_factory=dict)
    goals: list[str] = field(default_factory=list)
    shape: list[str] = field(default_factory=list)  # what the solution does, beyond its tools

    def initial_files(self) -> list[FileSpec]:
        """The task's initial files, laid out on first use."""
        if callable(self.files):
            self.files = self.files()
        return self.files


class Family(ABC):
    """One kind of terminal task, registered as environment ``id``."""

    id: str
    name: str
    description: str

    @abstractmethod
    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        """A task at ``difficulty`` (1..5) drawn from ``rng``; every test must fail on the
        initial files and pass after the gold plan."""


def run(command: str) -> PlanStep:
    return PlanStep(tool="run_command", arguments={"command": command})


def read(path: str) -> PlanStep:
    return PlanStep(tool="read_file", arguments={"path": path})


def write(path: str, content: str) -> PlanStep:
    return PlanStep(tool="write_file", arguments={"path": path, "content": content})


def python(script: str) -> PlanStep:
    """A gold step that runs a Python script (system python3) given inline. The braces make
    bash read the whole step before running any of it, so a mangled step runs nothing."""
    return run(f"{{ python3 - <<'PYEOF'\n{script.strip()}\nPYEOF\n}}")


def q(text: str) -> str:
    return shlex.quote(text)


WORDS = [
    "alpha",
    "bravo",
    "cedar",
    "delta",
    "ember",
    "falcon",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pebble",
    "quartz",
    "raven",
    "sierra",
    "tango",
    "umber",
    "velvet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
    "amber",
    "birch",
    "cobalt",
    "dune",
    "fjord",
    "glacier",
    "heron",
    "iris",
    "jade",
    "kelp",
    "lotus",
    "meadow",
    "north",
    "ocean",
    "prism",
    "quill",
    "river",
    "stone",
    "tidal",
    "umbra",
    "vista",
    "wren",
]
