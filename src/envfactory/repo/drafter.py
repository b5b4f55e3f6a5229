"""The repository world's part of the task supply (:mod:`envfactory.tasks.supply`): a cell's
candidate mutations in a seeded order, verified batch by batch, and the task of each bug
group a level keeps (its issue text and gold plan).

Splits are disjoint by project file: a file's hash puts it, and every bug in it, in one split
(a group's other bugs are drawn from its first bug's split, so its files agree). Every task is
verified and solvable (reverting the mutations is its gold plan), and led by a bug that leads
no other task of its cell.
"""

from __future__ import annotations

import hashlib
import random
import shlex
from collections.abc import Iterator
from typing import Any, Protocol

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import PlanStep, Split, Task
from envfactory.repo import projects
from envfactory.repo.mutate import Mutation
from envfactory.repo.projects import Project
from envfactory.repo.tasks import Bug, RepoHidden, source_hash
from envfactory.repo.tools import TOOLS
from envfactory.repo.verify import verify
from envfactory.tasks.seeds import stable_hash
from envfactory.tasks.supply import Address

STARTER = 0
DIFFICULTIES = [STARTER, 1, 2, 3, 4, 5]
BATCH = 12  # candidates verified together (one sandbox run per project in them)
WRITE_MAX = TOOLS["write_file"][1]["content"].max_length or 0  # the most a gold write_file holds
PERSONA = "You are a careful software engineer fixing a bug in a Python project."
RULES = [
    "The project is in /work; pytest is installed (run `python3 -m pytest`). There is no network.",
    "Fix the library's source; do not change the tests: they are run from a pristine copy.",
    "Keep your edits inside the faulty functions: a change to other functions, module-level "
    "code or other files earns nothing.",
    "When you are done, reply with a short final message.",
]

Candidates = list[tuple[Project, Mutation]]  # candidate bugs, each with its project
Kept = tuple[Candidates, dict[str, Any]]  # a group a level keeps, and its verdict


class RepoWorld(Protocol):
    """What the drafter reads from its world (a ``RepoEnvironment``)."""

    id: str
    seed: int
    projects: list[Project]

    @property
    def catalog(self) -> dict[Split, Candidates]: ...

    def accept(self, batch: Candidates, difficulty: int) -> list[Kept]: ...


def file_key(p: Project, rel: str) -> str:
    """The content key that puts a project file, and every bug in it, in a split."""
    return f"{p.key}/{rel}"


class RepoDrafter:
    """Streams each cell's kept bug groups (:class:`~envfactory.tasks.supply.CellStream`)."""

    def __init__(self, world: RepoWorld) -> None:
        self.world = world

    def stream(self, split: Split, difficulty: int) -> Iterator[Kept]:
        """The groups the level keeps from the split's candidates, in the cell's order, a batch
        of :data:`BATCH` verified each time the supply reads past the last one."""
        order = self.order(split, difficulty)
        for start in range(0, len(order), BATCH):
            yield from self.world.accept(order[start : start + BATCH], difficulty)

    def order(self, split: Split, difficulty: int) -> Candidates:
        """The split's candidates in blocks of one project, shuffled within each project and
        then by block (seeded per cell), so that most batches need one sandbox run."""
        rng = random.Random(
            stable_hash("repo-order", self.world.id, self.world.seed, split, difficulty)
        )
        blocks = []
        for p in self.world.projects:
            mine = [x for x in self.world.catalog[split] if x[0] is p]
            rng.shuffle(mine)
            blocks += [mine[i : i + BATCH] for i in range(0, len(mine), BATCH)]
        rng.shuffle(blocks)
        return [x for block in blocks for x in block]

    def split_keys(self, kept: Kept) -> Iterator[tuple[str, str]]:
        return (("file", file_key(p, m.file)) for p, m in kept[0])

    def divider(self, kept: Kept) -> str:
        p, m = kept[0][0]
        return file_key(p, m.file)

    def fingerprint(self, kept: Kept) -> str:
        """The group's project and mutations, first first: its first bug comes once in a cell's
        order and draws its partners itself, so no two kept groups share it (two groups of the
        same bugs led by different ones are two tasks)."""
        group = kept[0]
        return group[0][0].key + "|" + "+".join(m.id for _, m in group)

    def task(self, kept: Kept, address: Address) -> Task:
        """The issue a group's failing tests give, and the edits that revert its bugs."""
        group, verdict = kept
        p = group[0][0]
        ms = [m for _, m in group]
        s_files = {m.file for m in ms}
        root = projects.tree_path(p)
        texts = {rel: (root / rel).read_bytes() for rel in s_files}
        mutated = dict(texts)
        for rel in s_files:
            for m in sorted((m for m in ms if m.file == rel), key=lambda m: -m.start):
                mutated[rel] = m.apply(mutated[rel])
        edits = gold_edits(texts, ms)
        if edits is None:
            raise SynthesisError(f"no gold edits for {ms[0].id}")
        bugs = []
        for m in sorted(ms, key=lambda m: (m.file, m.start)):
            own = set(verify(p, [[m]])[0]["failing"])
            old, new = edits[m.id]
            bugs.append(
                Bug(
                    file=m.file,
                    op=m.op,
                    line=m.line,
                    old=old,
                    new=new,
                    failing={t: msg for t, msg in verdict["failing"].items() if t in own},
                    qualname=m.qualname or "",
                )
            )
        difficulty = address.difficulty
        rng = random.Random(stable_hash("repo-text", address.env_id, address.task_id))
        instruction, tools = _instruction(p, bugs, difficulty, rng)
        sources = {rel: text.decode("utf-8", "replace") for rel, text in texts.items()}
        gold, needs = _gold(bugs, difficulty, sources)
        hidden = RepoHidden(
            task_id=address.task_id,
            goals=[f"fix:{b.op}" for b in bugs],
            gold_plan=gold,
            needs=needs,
            target=[],
            knobs={
                "difficulty": difficulty,
                "bugs": len(bugs),
                "files": len(s_files),
                "test_shown": int(difficulty in (1, 2)),
            },
            fingerprint=hashlib.sha256(
                "\n".join(sorted(m.id for m in ms)).encode() + p.key.encode()
            ).hexdigest()[:16],
            project=p.key,
            mutations=[{"file": m.file, "start": m.start, "end": m.end, "new": m.new} for m in ms],
            bugs=bugs,
            shape=[p.name, *(f"{b.op}:{b.file.rsplit('/', 1)[-1]}" for b in bugs)],
        )
        public = address.public(instruction=instruction, persona=PERSONA, rules=RULES, tools=tools)
        return Task(public=public, hidden=hidden, initial_hash=source_hash(p, mutated))


def gold_edits(texts: dict[str, bytes], ms: list[Mutation]) -> dict[str, tuple[str, str]] | None:
    """Per mutation id, the gold edit (``old`` whole lines of the mutated file, widened until
    unique, and the same lines with that one mutation reverted); None when the edits, made
    in file order, do not give the original files back."""
    out: dict[str, tuple[str, str]] = {}
    for rel, original in texts.items():
        mine = sorted((m for m in ms if m.file == rel), key=lambda m: m.start)
        mutated, shift, places = original, 0, []
        for m in mine:
            places.append(m.start + shift)
            shift += len(m.new.encode()) - (m.end - m.start)
        for m in reversed(mine):
            mutated = m.apply(mutated)
        for m, pos in zip(mine, places, strict=True):
            end = pos + len(m.new.encode())
            a = mutated.rfind(b"\n", 0, pos) + 1
            b = mutated.find(b"\n", end)
            b = len(mutated) if b < 0 else b
            while mutated.count(mutated[a:b]) > 1 and (a > 0 or b < len(mutated)):
                a = mutated.rfind(b"\n", 0, a - 1) + 1 if a > 0 else 0
                nb = mutated.find(b"\n", b + 1)
                b = len(mutated) if nb < 0 else nb
            old = mutated[a:b]
            new = mutated[a:pos] + m.old.encode() + mutated[end:b]
            out[m.id] = (old.decode(), new.decode())
        cur = mutated.decode()
        for m in mine:
            old_s, new_s = out[m.id]
            if cur.count(old_s) != 1:
                return None
            cur = cur.replace(old_s, new_s)
        if cur.encode() != original:
            return None
    return out


def _observable(message: str) -> str:
    lines = [ln for ln in message.splitlines() if not ln.lstrip().startswith("+ ") and ln.strip()]
    return "\n".join(lines[:3])[:300] or "(the test fails)"


def _human(test: str) -> str:
    func = test.split("::")[-1]
    name, _, params = func.partition("[")
    words = name.removeprefix("test_").removeprefix("test").replace("_", " ").strip()
    return f"{words} ({params.rstrip(']')})" if params else words


_TITLES = [
    "{project}: {what} is broken",
    "Regression in {project}: {what}",
    "Bug: {what} gives the wrong result",
    "{what} no longer works",
    "Wrong behaviour in {project} ({what})",
]
_OPENERS = [
    "After upgrading to this version of {project}, something I rely on broke.",
    "I think I found a bug in {project}.",
    "Our CI started failing against this checkout of {project}.",
    "While using {project} I ran into a problem.",
]


def _instruction(
    p: Project, bugs: list[Bug], difficulty: int, rng: random.Random
) -> tuple[str, list[str]]:
    if difficulty == STARTER:
        b = bugs[0]
        return (
            f"In /work/{b.file}, replace the line\n    {b.old.strip()}\nwith\n    {b.new.strip()}\n"
            "(keep its indentation). Use edit_file with exactly that text.",
            ["edit_file"],
        )
    parts = []
    shown = difficulty in (1, 2)
    first = _human(sorted(bugs[0].failing)[0])
    parts.append("Title: " + rng.choice(_TITLES).format(project=p.name, what=first))
    parts.append(rng.choice(_OPENERS).format(project=p.name))
    for b in bugs:
        test = sorted(b.failing, key=lambda t: (not b.failing[t], t))[0]
        msg = _observable(b.failing[test])
        if shown:
            parts.append(f"The test `{test}` fails with:\n\n    " + msg.replace("\n", "\n    "))
        else:
            parts.append(
                f"When I check {_human(test)}, I get:\n\n    " + msg.replace("\n", "\n    ")
            )
        if len(b.failing) > 1:
            parts.append(f"({len(b.failing) - 1} other test(s) fail too.)")
    if difficulty == 1:
        parts.append(f"The problem is somewhere in {bugs[0].file}.")
    if len(bugs) > 1:
        parts.append(f"There may be more than one cause ({len(bugs)} separate problems, I think).")
    parts.append(
        f"Please fix {p.name} (in /work) so that its test suite passes again. "
        "Do not edit the tests."
    )
    return "\n\n".join(parts), list(TOOLS)


def _gold(
    bugs: list[Bug], difficulty: int, sources: dict[str, str]
) -> tuple[list[PlanStep], list[list[int]]]:
    """The gold plan, and per step the earlier steps it needs (the noisy oracle's graded
    slips): a repair needs the read that showed the file's text; where the issue does not
    name the file (difficulty 2 and up), the read needs a search for the function; where it
    does not name the failing test (3 and up), the search needs a run of the whole suite.
    Several bugs in one file are repaired by writing the file whole (``sources``: the files'
    text before the bugs) when it fits :data:`WRITE_MAX`, else one edit each."""
    if difficulty == STARTER:
        return [_edit(bugs[0])], [[]]
    steps: list[PlanStep] = []
    needs: list[list[int]] = []

    def add(step: PlanStep, *on: int) -> int:
        steps.append(step)
        needs.append(list(on))
        return len(steps) - 1

    tests = sorted({t.split("::", 1)[0] for b in bugs for t in b.failing})
    confirm = PlanStep(
        tool="run_command",
        arguments={"command": "python3 -m pytest -q -x " + " ".join(tests)},
    )
    if difficulty >= 3:  # which tests fail is not said: run them all
        found = [add(PlanStep(tool="run_command", arguments={"command": "python3 -m pytest -q"}))]
    else:
        add(confirm)
        found = []
    for file in sorted({b.file for b in bugs}):
        own = [b for b in bugs if b.file == file]
        located = [add(_search(own[0]), *found)] if difficulty >= 2 else []
        read = add(PlanStep(tool="read_file", arguments={"path": file}), *located)
        if len(own) > 1 and len(sources[file]) <= WRITE_MAX:
            add(
                PlanStep(tool="write_file", arguments={"path": file, "content": sources[file]}),
                read,
            )
        else:
            for b in own:
                add(_edit(b), read)
    add(confirm)
    return steps, needs


def _edit(b: Bug) -> PlanStep:
    return PlanStep(tool="edit_file", arguments={"path": b.file, "old": b.old, "new": b.new})


def _search(b: Bug) -> PlanStep:
    """Where the function holding ``b`` is defined (a method: its class; code outside any
    function: its text)."""
    outer, _, method = b.qualname.partition(".")
    if outer.isidentifier():
        pattern = f"{'class' if method else 'def'} {outer}\\b"
        command = f"grep -rnE {shlex.quote(pattern)} ."
    else:
        command = f"grep -rnF -- {shlex.quote(b.old.strip().splitlines()[0])} ."
    return PlanStep(tool="run_command", arguments={"command": command})
