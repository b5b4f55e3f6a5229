"""Held-out terminal tasks share nothing replayable with train tasks.

Terminal families once shared identical instructions and solutions across splits
(term-archive: 211 of 1,500 test tasks; replaying the train gold scored 1.0). Generation only
(no sandbox): 500 tasks per split per difficulty, for every family.
"""

from __future__ import annotations

import json

import pytest

from envfactory.tasks.types import Task
from envfactory.terminal.builtin import FAMILIES
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.family import DIFFICULTIES, TerminalHidden

PER_SPLIT = 500


@pytest.fixture(autouse=True)
def _needs_sandbox() -> None:
    """Generation needs no sandbox: these run wherever the package does."""


def _content(task: Task) -> dict[str, str]:
    hidden = task.hidden
    assert isinstance(hidden, TerminalHidden)
    return {
        "instruction": task.public.instruction,
        "solution": json.dumps([s.model_dump() for s in hidden.gold_plan], sort_keys=True),
        "target": json.dumps([t.model_dump() for t in hidden.tests], sort_keys=True),
    }


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.id)
def test_no_test_task_repeats_train_content(family: type) -> None:
    env = TerminalEnvironment(family())
    for difficulty in DIFFICULTIES:
        train: dict[str, set[str]] = {"instruction": set(), "solution": set(), "target": set()}
        for index in range(PER_SPLIT):
            for kind, text in _content(env.task("train", difficulty, index)).items():
                train[kind].add(text)
        for index in range(PER_SPLIT):
            task = env.task("test", difficulty, index)
            shared = [kind for kind, text in _content(task).items() if text in train[kind]]
            assert not shared, f"{task.task_id} repeats a train task's {shared}"
