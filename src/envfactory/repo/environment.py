"""Repository-repair worlds: real projects with injected bugs, judged by their own tests.

Tasks come from the shared task supply (:mod:`envfactory.tasks.supply`): each (split,
difficulty) cell reads the stream of :class:`~envfactory.repo.drafter.RepoDrafter` (its split's
candidate mutations in a seeded order, verified in batches, cached on disk) and keeps the bug
groups its level accepts (:meth:`RepoEnvironment.accept`); task ``index`` is the cell's
``index``-th kept group. A cell reads its catalogue to the end (no patience): no split holds
4,000 candidates (3,230 train, 1,418 validation, 826 test), the most a cell once scanned per
index asked, and a patience (candidates in a row without a task) could refuse a late task that
a bound on the scan keeps. An index beyond a cell's size is refused once the cell is verified
to its end.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, Task
from envfactory.repo import projects
from envfactory.repo.drafter import (
    BATCH,
    DIFFICULTIES,
    RULES,
    STARTER,
    Candidates,
    Kept,
    RepoDrafter,
    file_key,
    gold_edits,
)
from envfactory.repo.episode import RepoEpisode
from envfactory.repo.exploits import RepoTrick, repo_exploits
from envfactory.repo.mutate import Mutation, candidates
from envfactory.repo.projects import PROJECTS, Project
from envfactory.repo.tasks import RepoHidden
from envfactory.repo.tools import TOOLS, schemas
from envfactory.repo.verify import baseline, verify
from envfactory.tasks.seeds import stable_hash
from envfactory.tasks.supply import CellStream, TaskSupply, split_by_content
from envfactory.terminal.sandbox import Limits


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
        self.task_supply = TaskSupply(
            env_id, RepoDrafter(self), DIFFICULTIES, seed=seed, order=CellStream(patience=None)
        )
        self.run_cache: dict[str, tuple[set[str], str]] = {}  # source state -> tests not passing

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        return self.task_supply.task(split, difficulty, index)

    # -- the candidates ----------------------------------------------------------------------

    def file_split(self, p: Project, rel: str) -> Split:
        key = file_key(p, rel)
        split = split_by_content(self.id, [("file", key)], divider=key)
        if split is None:  # one key never disagrees with itself
            raise SynthesisError(f"{self.id}: {key} has no split")
        return split

    @cached_property
    def catalog(self) -> dict[Split, Candidates]:
        """Every candidate whose line some passing test runs, by the split of its file."""
        out: dict[Split, Candidates] = {"train": [], "validation": [], "test": []}
        for p in self.projects:
            base = baseline(p)
            root = projects.tree_path(p)
            for rel in projects.source_files(p):
                split = self.file_split(p, rel)
                for m in candidates(rel, (root / rel).read_bytes()):
                    if base.covering(rel, m.probe):
                        out[split].append((p, m))
        return out

    # -- what a level keeps ------------------------------------------------------------------

    def accept(self, batch: Candidates, difficulty: int) -> list[Kept]:
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
        groups: list[Kept] = []
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

    def _verify_singles(self, batch: Candidates) -> list[dict[str, Any]]:
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

    def _verify_groups(self, groups: list[Candidates]) -> list[dict[str, Any]]:
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

    def _partners(self, firsts: Candidates, difficulty: int) -> list[Candidates | None]:
        """Other bugs for each level-4 (same file) or level-5 (other files) task, drawn from
        the candidates of the same project in the split of the first one's file, each
        verified alone (in up to three rounds of four picks; a round's picks for every
        first share one run)."""
        want = 1 if difficulty == 4 else 2
        states: list[tuple[random.Random, Candidates, Candidates]] = []
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
    def _each_seen(group: Candidates, verdict: dict[str, Any]) -> bool:
        """Every bug of a group still makes one of its own tests fail, together."""
        for p, m in group:
            own = set(verify(p, [[m]])[0].get("failing", {}))
            if not own & set(verdict["failing"]):
                return False
        return True

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

    def _sample(self, n: int, seed: int) -> list[Candidates]:
        """``n`` candidates drawn at random from every split, in batches of one project (so
        that each batch is one sandbox run)."""
        pool = [x for v in self.catalog.values() for x in v]
        picks = random.Random(stable_hash("sample", seed)).sample(pool, min(n, len(pool)))
        by_project: dict[str, Candidates] = {}
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
        cell's stream judges it (verified, fitted to the level, partnered, combined); every
        level judges the same draw (its verdicts are shared)."""
        drawn, kept, found = 0, 0, set[str]()
        for batch in self._sample(n, seed):
            accepted = self.accept(batch, difficulty)
            drawn += len(batch)
            kept += len(accepted)
            found.update(key_of_group(g) for g, _ in accepted)
        return drawn, kept, found

    def sample_verdicts(self, n: int, seed: int = 0) -> Iterator[tuple[Mutation, dict[str, Any]]]:
        """Verdicts on ``n`` candidates drawn at random from every split (for the bench): the
        draw :meth:`sample_level` judges."""
        for batch in self._sample(n, seed):
            yield from zip((m for _, m in batch), self._verify_singles(batch), strict=True)


def key_of_group(group: Candidates) -> str:
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
