"""Train tasks drawn by the curriculum, one group at a time, and its state kept in checkpoints.

TRL's trainer takes a dataset, but a curriculum decides each task as training goes (each
world's frontier, worlds drawn by learnability). So the dataset holds placeholder rows, one per
group a run needs, and :class:`CurriculumRollout` wraps envfactory's ``rollout_func``: each
placeholder of a batch becomes a task the curriculum draws, played as a group, and every
scored episode is counted back into the curriculum. The curriculum lives in an in-memory
store; :class:`KeepCurriculum` copies it into each checkpoint the trainer writes, and
:func:`curriculum_at` opens a checkpoint's copy, so a resumed run draws what a straight run
would have drawn.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envfactory.curriculum.controller import Curriculum, CurriculumConfig
from envfactory.curriculum.store import CurriculumStore
from envfactory.integrations.trl import TASK_KEY, EnvfactoryRollout, prompt_task
from envfactory.registry import make
from envfactory.rollout.types import TaskRef

CURRICULUM_FILE = "curriculum.sqlite"  # the curriculum's state, inside each checkpoint
SLOT = "slot"  # the prefix of a placeholder row's task key


def _row(task: str) -> list[dict[str, str]]:
    """A prompt that names ``task`` (the rollout plays the task; it reads only the name)."""
    return [{"role": "user", "content": task, TASK_KEY: task}]


def slot_rows(n: int) -> list[dict[str, Any]]:
    """``n`` placeholder rows; each batch's copies of one become a group of a drawn task."""
    return [{"prompt": _row(f"{SLOT}-{i}")} for i in range(n)]


def new_curriculum(climbs: Mapping[str, Sequence[int]], seed: int) -> Curriculum:
    """A fresh curriculum (in memory) over the worlds of ``climbs``, each climbing its levels."""
    curriculum = Curriculum(":memory:", CurriculumConfig(), seed=seed)
    for world, levels in climbs.items():
        curriculum.add(world, list(levels))
    return curriculum


def curriculum_at(checkpoint: Path) -> Curriculum:
    """The curriculum as it was when ``checkpoint`` was written (copied into memory)."""
    store = CurriculumStore(":memory:")
    saved = sqlite3.connect(checkpoint / CURRICULUM_FILE)
    try:
        saved.backup(store.conn)
    finally:
        saved.close()
    return Curriculum(store)


class CurriculumRollout:
    """A ``rollout_func``: the placeholders of a batch become curriculum-drawn **train** tasks
    of ``worlds``, played by ``inner``; their episodes are counted back into the curriculum."""

    def __init__(self, inner: EnvfactoryRollout, curriculum: Curriculum, worlds: list[str]):
        self.inner = inner
        self.curriculum = curriculum
        self.worlds = worlds

    def draw(self) -> TaskRef:
        """The next train task: a world by learnability, a level of its frontier window."""
        d = self.curriculum.draw(among=self.worlds)
        capacity = make(d.env_id).capacity("train", d.difficulty)
        index = self.curriculum.take_index(d, "train", capacity)
        return TaskRef(d.env_id, "train", d.difficulty, index)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        slots = [prompt_task(p) for p in prompts]
        tasks: dict[str, TaskRef] = {}
        for slot in slots:  # in order of first appearance: the same draws on every run
            if slot not in tasks:
                tasks[slot] = self.draw()
        seen = len(self.inner.records)
        out = self.inner([_row(tasks[slot].task_id) for slot in slots], trainer)
        for rec in self.inner.records[seen:]:
            self.curriculum.record(rec.episode_id, rec.env_id, rec.difficulty, rec.reward)
        return out


def keep_curriculum(curriculum: Curriculum) -> Any:
    """A trainer callback that copies ``curriculum`` into every checkpoint as it is saved, and
    then removes the checkpoints before it. The curriculum file is written last, by rename, so
    a checkpoint that holds one is whole, and one whole checkpoint exists at every moment (the
    trainer's own rotation deletes the old one before this callback completes the new one)."""
    from transformers import TrainerCallback

    class KeepCurriculum(TrainerCallback):  # type: ignore[misc]
        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            part = folder / f"{CURRICULUM_FILE}.part"
            target = sqlite3.connect(part)
            try:
                curriculum.store.conn.backup(target)
            finally:
                target.close()
            part.replace(folder / CURRICULUM_FILE)
            for old in folder.parent.glob("checkpoint-*"):
                if checkpoint_step(old) < state.global_step:
                    shutil.rmtree(old)

    return KeepCurriculum()


def stop_at(step: int | None) -> Any:
    """A trainer callback that ends training after ``step`` (None: never early), with a
    checkpoint then, whatever the checkpoint interval."""
    from transformers import TrainerCallback

    class StopAt(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if step is not None and state.global_step >= step:
                control.should_training_stop = control.should_save = True

    return StopAt()


def checkpoint_step(checkpoint: Path) -> int:
    """The step of a ``checkpoint-STEP`` folder; -1 for a name that holds none."""
    try:
        return int(checkpoint.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def latest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint of the highest step under ``folder`` that holds a curriculum, if any."""
    found = [
        p for p in folder.glob("checkpoint-*") if (p / CURRICULUM_FILE).is_file() and p.is_dir()
    ]
    return max(found, key=checkpoint_step, default=None)
