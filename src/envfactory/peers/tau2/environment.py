"""The three environments over tau2-bench's retail data.

- ``tau2-retail``: tau2's hand-written tasks with tau2's own train / test split, judged by
  tau2's reward (:mod:`.episode`): the 112 of its 114 whose checks can tell the work from doing
  nothing (the other two are ``excluded``, with the reason). One difficulty; a task's index is
  its place in the split list, and :meth:`Tau2RetailEnvironment.tau2_id` /
  :meth:`~Tau2RetailEnvironment.locate` map between indices and tau2's ids. Scores on its test
  split compare with anyone else's on tau2's.
- ``tau2-retail-strict``: the same tasks with a held-out split: the test tasks whose work
  train material reproduces (``reproducible_from_train``) are train tasks (``moved_to_train``).
- ``tau2-retail-procedural``: the same world with envfactory's task synthesis over goal
  templates (``retail_goals.yaml``): an unbounded supply of tasks on five difficulty levels.
"""

from __future__ import annotations

from pathlib import Path

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, Task
from envfactory.db.environment import DatabaseEnvironment, unbuilt_info
from envfactory.peers.tau2.data import Tau2DataMissing
from envfactory.peers.tau2.episode import Tau2Episode
from envfactory.peers.tau2.handlers import fast_tools
from envfactory.peers.tau2.importer import import_retail
from envfactory.peers.tau2.tasks import SPLITS, Imported, import_task, reproducible, vocabulary
from envfactory.tasks.supply import check_address

ENV_ID = "tau2-retail"
STRICT_ID = "tau2-retail-strict"
PROCEDURAL_ID = "tau2-retail-procedural"
DIFFICULTIES = [1]  # tau2's tasks: one difficulty


class Tau2RetailEnvironment(DatabaseEnvironment):
    """tau2-bench's retail tasks in envfactory's engine: tau2's split, or (``strict``) the
    held-out one, under the id ``tau2-retail-strict``."""

    kind = "imported"
    splits: tuple[Split, ...] = SPLITS
    finite = True

    def __init__(self, folder: Path | None = None, *, strict: bool = False) -> None:
        imported = import_retail(folder)
        spec = imported.spec.model_copy(update={"id": STRICT_ID}) if strict else imported.spec
        super().__init__(spec, rows=imported.rows)
        self.strict = strict
        self.data = imported.data
        self.fast = fast_tools(self.world)  # the tools Tau2Episode runs without the engine
        by_id = {str(t["id"]): t for t in imported.data.tasks}
        rules = [r.text for r in self.spec.rules]
        words = vocabulary(self.world)
        ids = {split: [str(i) for i in imported.data.split[split]] for split in SPLITS}
        for split, listed in ids.items():
            unknown = [i for i in listed if i not in by_id]
            if unknown:
                raise Tau2DataMissing(
                    f"split {split!r} names tasks not in tasks.json: {unknown[:5]}"
                )

        def cells() -> dict[str, list[Imported]]:
            return {
                split: [
                    import_task(self.world, self.id, by_id[i], split, n, rules, words)
                    for n, i in enumerate(ids[split])
                ]
                for split in SPLITS
            }

        # tau2's tasks, less those no check can tell done from doing nothing (excluded: tau2
        # id -> why); the strict split moves the test tasks whose work train tasks reproduce
        # to train
        first = cells()
        self.excluded = {
            m.tau2_id: why for ms in first.values() for m in ms if (why := m.unchecked)
        }
        served = {s: [m for m in ms if m.tau2_id not in self.excluded] for s, ms in first.items()}
        self.reproducible_from_train = reproducible(served["train"], served["test"])
        self.moved_to_train = self.reproducible_from_train if strict else []
        ids = {
            "train": [m.tau2_id for m in served["train"]] + self.moved_to_train,
            "test": [m.tau2_id for m in served["test"] if m.tau2_id not in self.moved_to_train],
        }
        self.cells = cells()
        self._by_task = {m.task.task_id: m for ms in self.cells.values() for m in ms}
        self._by_tau2 = {m.tau2_id: m for ms in self.cells.values() for m in ms}

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def _cell(self, split: Split, difficulty: int) -> list[Imported]:
        check_address(self.id, self.splits, self.difficulties, split, difficulty, 0)
        return self.cells[split]

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        cell = self._cell(split, difficulty)
        if not 0 <= index < len(cell):
            raise SynthesisError(f"{self.id}: {split} has tasks 0..{len(cell) - 1}, not {index}")
        return cell[index].task

    def capacity(self, split: Split, difficulty: int) -> int | None:
        try:
            return len(self._cell(split, difficulty))
        except SynthesisError:
            return 0

    def imported(self, task: Task) -> Imported:
        """What the import knows of a task: tau2's id, gold actions, the gold replay."""
        return self._by_task[task.task_id]

    def tau2_id(self, task: Task) -> str:
        return self.imported(task).tau2_id

    def locate(self, tau2_id: str) -> Task:
        """The task with tau2's id ``tau2_id``."""
        found = self._by_tau2.get(str(tau2_id))
        if found is None:
            why = self.excluded.get(str(tau2_id))
            left_out = f": it is left out ({why})" if why else ""
            raise SynthesisError(f"{self.id} has no tau2 task {tau2_id!r}{left_out}")
        return found.task

    def episode(self, config: EpisodeConfig | None = None) -> Tau2Episode:
        return Tau2Episode(self, config)


def make_tau2_retail(seed: int = 0, scale: float = 1.0) -> Tau2RetailEnvironment:
    _fixed(ENV_ID, seed, scale)
    return Tau2RetailEnvironment()


def make_strict(seed: int = 0, scale: float = 1.0) -> Tau2RetailEnvironment:
    _fixed(STRICT_ID, seed, scale)
    return Tau2RetailEnvironment(strict=True)


def make_procedural(seed: int = 0, scale: float = 1.0) -> DatabaseEnvironment:
    _fixed(PROCEDURAL_ID, seed, scale)
    imported = import_retail()
    return DatabaseEnvironment(imported.procedural(PROCEDURAL_ID), rows=imported.rows)


def tau2_retail_info(seed: int = 0, scale: float = 1.0, *, strict: bool = False) -> EnvInfo:
    """What ``make_tau2_retail(...).info()`` (``strict``: ``make_strict``'s) gives, without
    importing the tasks or building the world."""
    _fixed(STRICT_ID if strict else ENV_ID, seed, scale)
    imported = import_retail()
    spec = imported.spec.model_copy(update={"id": STRICT_ID}) if strict else imported.spec
    kind = Tau2RetailEnvironment.kind
    return unbuilt_info(spec, kind=kind, rows=imported.rows, difficulties=DIFFICULTIES)


def strict_info(seed: int = 0, scale: float = 1.0) -> EnvInfo:
    """What ``make_strict(...).info()`` gives, without building it."""
    return tau2_retail_info(seed, scale, strict=True)


def procedural_info(seed: int = 0, scale: float = 1.0) -> EnvInfo:
    """What ``make_procedural(...).info()`` gives, without building it."""
    _fixed(PROCEDURAL_ID, seed, scale)
    imported = import_retail()
    return unbuilt_info(imported.procedural(PROCEDURAL_ID), rows=imported.rows)


def _fixed(env_id: str, seed: int, scale: float) -> None:
    if seed != 0 or scale != 1.0:
        raise ValueError(f"{env_id} is tau2-bench's data: it has no seed or scale to choose")
