"""A task family: a generator of terminal tasks from a seed and a difficulty."""

from __future__ import annotations

import random
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pydantic import Field

from envfactory.contract.tasks import HiddenTask, PlanStep
from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.fs import FileSpec

STARTER = 0  # the level where a small model can start: one call, spelled out
DIFFICULTIES = [STARTER, 1, 2, 3, 4, 5]


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
    tools: list[str] | None = None  # the tools the task shows (None: all three)

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

    def starter(self, rng: random.Random) -> Draft:
        """A task at difficulty 0, where a small model can start: one call, spelled out in the
        request, with only that call's tool shown, in the tree of a difficulty-1 task. Either
        one of its text files is backed up by a given ``cp`` command, or a given line is
        written to a new file beside it; the file it came from must stay as it was."""
        tree = self.generate(rng, 1).initial_files()
        texts = [f for f in tree if f.text is not None and ".git/" not in f.path]
        source = rng.choice(texts or tree)
        tests = []
        if source.text is not None and rng.random() < 0.5:
            target, text = f"{source.path}.bak", source.text
            command = f"cp {q(source.path)} {q(target)}"
            instruction = f"Back up /work/{source.path}: run the command `{command}` in /work."
            gold = run(command)
        else:
            target = str(PurePosixPath(source.path).parent / "NOTES.txt")
            text = f"checked by {rng.choice(WORDS)} {rng.choice(WORDS)}\n"
            instruction = (
                f"Write a new file /work/{target} whose whole content is this line: {text.strip()}"
            )
            gold = write(target, text)
        tests.append(CompletionTest(name="file_made", kind="files", args={"files": {target: text}}))
        if source.text is not None:
            kept = {"files": {source.path: source.text}}
            tests.append(CompletionTest(name="source_kept", kind="files", args=kept, gate=True))
        return Draft(instruction, tree, [gold], tests, knobs={"starter": 1}, tools=[gold.tool])


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
