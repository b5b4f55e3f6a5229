"""Repository-repair worlds: real projects with injected bugs, judged by their own tests.

Tasks are drawn lazily: each (split, difficulty) cell walks a seeded order of the candidate
mutations of its split's files, verifies them in batches (cached on disk) and keeps those
that make some tests fail; task ``index`` is the cell's ``index``-th kept one, so every
task is verified, solvable (reverting the mutation is its gold plan) and distinct.
Splits are disjoint by project file: a file's hash puts it, and every bug in it, in one
split.
"""

from __future__ import annotations

import ast
import hashlib
import random
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import PlanStep, PublicTask, Split, Task
from envfactory.repo import projects
from envfactory.repo.episode import RepoEpisode
from envfactory.repo.exploits import RepoTrick, repo_exploits
from envfactory.repo.mutate import Mutation, candidates
from envfactory.repo.projects import PROJECTS, Project
from envfactory.repo.tasks import Bug, RepoHidden, source_hash
from envfactory.repo.tools import TOOLS, schemas
from envfactory.repo.verify import baseline, verify
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash
from envfactory.terminal.sandbox import Limits

STARTER = 0
DIFFICULTIES = [STARTER, 1, 2, 3, 4, 5]
WRITE_MAX = TOOLS["write_file"][1]["content"].max_length or 0  # the most a gold write_file holds
PERSONA = "You are a careful software engineer fixing a bug in a Python project."
RULES = [
    "The project is in /work; pytest is installed (run `python3 -m pytest`). There is no network.",
    "Fix the library's source; do not change the tests: they are run from a pristine copy.",
    "Keep your edits inside the faulty functions: a change to other functions, module-level "
    "code or other files earns nothing.",
    "When you are done, reply with a short final message.",
]
BATCH = 12
MAX_SCAN = 4000


@dataclass
class _Cell:
    order: list[tuple[Project, Mutation]]
    pos: int = 0
    kept: list[list[tuple[Project, Mutation]]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)


class RepoEnvironment(Environment):
    """Bug-fix tasks in pinned real projects, verified by their own test suites."""

    kind = "repo"
    # The audit's diversity sample (its 1,000 top-level tasks and 1,000 spread ones) would
    # verify thousands of mutations by real test runs; this prefix is counted instead (plan
    # shapes as they are, a lower bound; distinct instructions scaled to a rate per 1,000).
    audit_diversity = 240

    def __init__(
        self,
        env_id: str = "repo-python",
        *,
        seed: int = 0,
        scale: float = 1.0,
        limits: Limits | None = None,
        project_names: tuple[str, ...] | None = None,
    ) -> None:
        self.id = env_id
        self.seed = seed
        self.limits = limits or Limits(wall_s=60, cpu_s=60, memory_mb=1024, processes=64)
        names = project_names or tuple(p.name for p in PROJECTS)
        self.projects = [p for p in PROJECTS if p.name in names]
        self._lock = threading.RLock()
        self._cells: dict[tuple[Split, int], _Cell] = {}
        self._tasks: dict[tuple[Split, int, int], Task] = {}
        self.run_cache: dict[str, tuple[set[str], str]] = {}  # source state -> tests not passing

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    # -- the candidates ----------------------------------------------------------------------

    def file_split(self, p: Project, rel: str) -> Split:
        key = f"{p.key}/{rel}"
        if content_unit(self.id, "file", key) < TRAIN_SHARE:
            return "train"
        return "validation" if content_unit(self.id, "held-out", key) < 0.5 else "test"

    @cached_property
    def catalog(self) -> dict[Split, list[tuple[Project, Mutation]]]:
        """Every candidate whose line some passing test runs, by the split of its file."""
        out: dict[Split, list[tuple[Project, Mutation]]] = {
            "train": [],
            "validation": [],
            "test": [],
        }
        for p in self.projects:
            base = baseline(p)
            root = projects.tree_path(p)
            for rel in projects.source_files(p):
                split = self.file_split(p, rel)
                for m in candidates(rel, (root / rel).read_bytes()):
                    if base.covering(rel, m.probe):
                        out[split].append((p, m))
        return out

    def _cell(self, split: Split, difficulty: int) -> _Cell:
        cell = self._cells.get((split, difficulty))
        if cell is None:
            # Blocks of one project each, so that a batch is verified in one sandbox run.
            rng = random.Random(stable_hash("repo-order", self.id, self.seed, split, difficulty))
            blocks = []
            for p in self.projects:
                mine = [x for x in self.catalog[split] if x[0] is p]
                rng.shuffle(mine)
                blocks += [mine[i : i + BATCH] for i in range(0, len(mine), BATCH)]
            rng.shuffle(blocks)
            cell = self._cells[(split, difficulty)] = _Cell([x for b in blocks for x in b])
        return cell

    # -- tasks -------------------------------------------------------------------------------

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        if difficulty not in DIFFICULTIES:
            raise SynthesisError(f"{self.id} has difficulties {DIFFICULTIES}, not {difficulty}")
        with self._lock:
            key = (split, difficulty, index)
            if key not in self._tasks:
                cell = self._cell(split, difficulty)
                while len(cell.kept) <= index:
                    if cell.pos >= min(len(cell.order), MAX_SCAN * (index + 1)):
                        raise SynthesisError(
                            f"no {split} task {index} at {self.id} level {difficulty}"
                        )
                    self._scan(cell, split, difficulty)
                self._tasks[key] = self._make(split, difficulty, index, cell.kept[index],
                                              cell.verdicts[index])  # fmt: skip
            return self._tasks[key]

    def _scan(self, cell: _Cell, split: Split, difficulty: int) -> None:
        """Verify the next batch of the cell's order; keep what the level accepts."""
        batch = cell.order[cell.pos : cell.pos + BATCH]
        cell.pos += len(batch)
        for group, verdict in self._accept(batch, difficulty):
            cell.kept.append(group)
            cell.verdicts.append(verdict)

    def _accept(
        self, batch: list[tuple[Project, Mutation]], difficulty: int
    ) -> list[tuple[list[tuple[Project, Mutation]], dict[str, Any]]]:
        """The tasks (bug groups and their verdicts) a batch of candidates gives at a level,
        in batch order. Every sandbox run serves the whole batch: its candidates, then
        (levels 4 and 5) each round of their partners, then their combinations."""
        singles = self._verify_singles(batch)
        firsts = [
            (p, m, v)
            for (p, m), v in zip(batch, singles, strict=True)
            if v["ok"] and self._fits(p, m, v, difficulty)
        ]
        if difficulty >= 4:
            partners = self._partners([(p, m) for p, m, _ in firsts], difficulty)
        else:
            partners = [[] for _ in firsts]
        groups: list[tuple[list[tuple[Project, Mutation]], dict[str, Any]]] = []
        for (p, m, v), more in zip(firsts, partners, strict=True):
            if more is None:
                continue
            group = [(p, m), *more]
            ms = [x for _, x in group]
            root = projects.tree_path(p)
            if gold_edits({x.file: (root / x.file).read_bytes() for x in ms}, ms) is None:
                continue
            groups.append((group, v))
        together = self._verify_groups([g for g, _ in groups if len(g) > 1])
        out = []
        for group, v in groups:
            verdict = v
            if len(group) > 1:
                verdict = together.pop(0)
                if not verdict["ok"] or not self._each_seen(group, verdict):
                    continue
            out.append((group, verdict))
        return out

    def _verify_singles(self, batch: list[tuple[Project, Mutation]]) -> list[dict[str, Any]]:
        by_project: dict[str, list[int]] = {}
        for i, (p, _) in enumerate(batch):
            by_project.setdefault(p.key, []).append(i)
        out: list[dict[str, Any]] = [{} for _ in batch]
        for idx in by_project.values():
            p = batch[idx[0]][0]
            for i, v in zip(idx, verify(p, [[batch[i][1]] for i in idx]), strict=True):
                out[i] = v
        return out

    def _fits(self, p: Project, m: Mutation, v: dict[str, Any], difficulty: int) -> bool:
        if difficulty == STARTER:
            return "\n" not in m.old and _unique_line(projects.tree_path(p) / m.file, m)
        near = any(m.function in _test_names(p, t) for t in v["failing"])
        if difficulty in (1, 2):
            return near
        if difficulty == 3:
            return not near
        return True

    def _verify_groups(self, groups: list[list[tuple[Project, Mutation]]]) -> list[dict[str, Any]]:
        """The verdict on each group of mutations applied together: one run per project."""
        by_project: dict[str, list[int]] = {}
        for i, group in enumerate(groups):
            by_project.setdefault(group[0][0].key, []).append(i)
        out: list[dict[str, Any]] = [{} for _ in groups]
        for idx in by_project.values():
            p = groups[idx[0]][0][0]
            found = verify(p, [[m for _, m in groups[i]] for i in idx])
            for i, v in zip(idx, found, strict=True):
                out[i] = v
        return out

    def _partners(
        self, firsts: list[tuple[Project, Mutation]], difficulty: int
    ) -> list[list[tuple[Project, Mutation]] | None]:
        """Other bugs for each level-4 (same file) or level-5 (other files) task, drawn from
        the candidates of the same project in the split of the first one's file, each
        verified alone (in up to three rounds of four picks; a round's picks for every
        first share one run)."""
        want = 1 if difficulty == 4 else 2
        states: list[
            tuple[random.Random, list[tuple[Project, Mutation]], list[tuple[Project, Mutation]]]
        ] = []
        for p, first in firsts:
            rng = random.Random(stable_hash("partners", self.id, first.id, difficulty))
            pool = [
                (q, m)
                for q, m in self.catalog[self.file_split(p, first.file)]
                if q is p
                and m.qualname != first.qualname
                and ((m.file == first.file) == (difficulty == 4))
            ]
            states.append((rng, pool, []))
        for _ in range(3):
            picks: list[tuple[int, tuple[Project, Mutation]]] = []
            for i, (rng, pool, chosen) in enumerate(states):
                if len(chosen) < want and pool:
                    picks += [(i, x) for x in rng.sample(pool, min(len(pool), 4))]
            if not picks:
                break
            found = self._verify_singles([x for _, x in picks])
            for (i, (q, m)), v in zip(picks, found, strict=True):
                chosen = states[i][2]
                clash = any(m.qualname == c.qualname or (m.file == c.file and difficulty == 5)
                            for _, c in chosen)  # fmt: skip
                if v["ok"] and not clash and len(chosen) < want:
                    chosen.append((q, m))
        return [chosen if len(chosen) == want else None for _, _, chosen in states]

    @staticmethod
    def _each_seen(group: list[tuple[Project, Mutation]], verdict: dict[str, Any]) -> bool:
        """Every bug of a group still makes one of its own tests fail, together."""
        for p, m in group:
            own = set(verify(p, [[m]])[0].get("failing", {}))
            if not own & set(verdict["failing"]):
                return False
        return True

    def _make(
        self,
        split: Split,
        difficulty: int,
        index: int,
        group: list[tuple[Project, Mutation]],
        verdict: dict[str, Any],
    ) -> Task:
        p = group[0][0]
        ms = [m for _, m in group]
        s_files = {m.file for m in ms}
        root = projects.tree_path(p)
        texts = {rel: (root / rel).read_bytes() for rel in s_files}
        mutated = dict(texts)
        for rel in s_files:
            for m in sorted((m for m in ms if m.file == rel), key=lambda m: -m.start):
                mutated[rel] = m.apply(mutated[rel])
        bugs = []
        edits = gold_edits(texts, ms)
        if edits is None:
            raise SynthesisError(f"no gold edits for {ms[0].id}")
        for m in sorted(ms, key=lambda m: (m.file, m.start)):
            own = set(verify(p, [[m]])[0]["failing"])
            failing = {t: msg for t, msg in verdict["failing"].items() if t in own}
            old, new = edits[m.id]
            bugs.append(
                Bug(
                    file=m.file,
                    op=m.op,
                    line=m.line,
                    old=old,
                    new=new,
                    failing=failing,
                    qualname=m.qualname or "",
                )
            )
        task_id = f"{self.id}/{split}/{difficulty}/{index}"
        rng = random.Random(stable_hash("repo-text", self.id, task_id))
        instruction, tools = _instruction(p, bugs, difficulty, rng)
        sources = {rel: text.decode("utf-8", "replace") for rel, text in texts.items()}
        gold, needs = _gold(bugs, difficulty, sources)
        shape = [p.name, *(f"{b.op}:{b.file.rsplit('/', 1)[-1]}" for b in bugs)]
        public = PublicTask(
            task_id=task_id,
            env_id=self.id,
            split=split,
            difficulty=difficulty,
            instruction=instruction,
            persona=PERSONA,
            rules=RULES,
            tools=tools,
        )
        hidden = RepoHidden(
            task_id=task_id,
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
            shape=shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=source_hash(p, mutated))

    # -- the rest of the contract ------------------------------------------------------------

    def episode(self, config: EpisodeConfig | None = None) -> RepoEpisode:
        return RepoEpisode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return schemas(fmt)

    def info(self) -> EnvInfo:
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name="Repository repair (Python)",
            description="Fix bugs injected into real Python projects so their test suites pass: "
            + ", ".join(p.key for p in self.projects),
            tools=len(TOOLS),
            tool_names=list(TOOLS),
            difficulties=self.difficulties,
            tables=0,
            rows=0,
            rules=len(RULES),
            goal_templates=7,
        )

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        hidden = task.hidden
        extra = tuple(hidden.shape) if isinstance(hidden, RepoHidden) else ()
        return tuple(s.tool for s in hidden.gold_plan) + extra

    def project(self, key: str) -> Project:
        return next(p for p in self.projects if p.key == key)

    def exploit_policies(self) -> list[RepoTrick]:
        return repo_exploits()

    @staticmethod
    def available() -> str | None:
        return projects.unavailable_reason()

    def supply(self) -> dict[str, int]:
        """Candidate mutations (lines some passing test runs) per split."""
        return {s: len(v) for s, v in self.catalog.items()}

    def _sample(self, n: int, seed: int) -> list[list[tuple[Project, Mutation]]]:
        """``n`` candidates drawn at random from every split, in batches of one project (so
        that each batch is one sandbox run)."""
        pool = [x for v in self.catalog.values() for x in v]
        picks = random.Random(stable_hash("sample", seed)).sample(pool, min(n, len(pool)))
        by_project: dict[str, list[tuple[Project, Mutation]]] = {}
        for p, m in picks:
            by_project.setdefault(p.key, []).append((p, m))
        size = 2 * BATCH
        return [
            xs[i : i + size]
            for _, xs in sorted(by_project.items())
            for i in range(0, len(xs), size)
        ]

    def sample_level(self, difficulty: int, n: int, seed: int = 0) -> tuple[int, int, set[str]]:
        """How many of ``n`` candidates drawn at random (from every split) a level keeps:
        ``(drawn, kept, identities of the kept bug sets)``. Each is judged exactly as a
        cell's scan judges it (verified, fitted to the level, partnered, combined); every
        level judges the same draw (its verdicts are shared)."""
        drawn, kept, found = 0, 0, set[str]()
        for batch in self._sample(n, seed):
            accepted = self._accept(batch, difficulty)
            drawn += len(batch)
            kept += len(accepted)
            found.update(key_of_group(g) for g, _ in accepted)
        return drawn, kept, found

    def sample_verdicts(self, n: int, seed: int = 0) -> Iterator[tuple[Mutation, dict[str, Any]]]:
        """Verdicts on ``n`` candidates drawn at random from every split (for the bench): the
        draw :meth:`sample_level` judges."""
        for batch in self._sample(n, seed):
            yield from zip((m for _, m in batch), self._verify_singles(batch), strict=True)


def key_of_group(group: list[tuple[Project, Mutation]]) -> str:
    """A bug set's identity: its project and mutations."""
    return group[0][0].key + "|" + "+".join(sorted(m.id for _, m in group))


def _unique_line(path: Any, m: Mutation) -> bool:
    data = path.read_bytes()
    line = data.splitlines()[m.line - 1]
    return data.count(line) == 1 and bool(line.strip())


_TEST_NAMES: dict[tuple[str, str], dict[str, set[str]]] = {}


def _test_names(p: Project, test: str) -> set[str]:
    """Identifiers the test function's body uses (names and attributes)."""
    path, _, rest = test.partition("::")
    func = rest.split("::")[-1].split("[", 1)[0]
    key = (p.key, path)
    if key not in _TEST_NAMES:
        _TEST_NAMES[key] = _names_by_function(projects.tree_path(p) / path)
    return _TEST_NAMES[key].get(func, set())


def _names_by_function(path: Path) -> dict[str, set[str]]:
    """Per function name in the file at ``path`` (functions of one name together), the
    identifiers its body uses; the file is parsed once."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError):
        return {}
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = out.setdefault(node.name, set())
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
                elif isinstance(sub, ast.Attribute):
                    names.add(sub.attr)
    return out


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
