"""The shared task supply: addresses, seeded order, split by content, dedupe and capacity."""

from __future__ import annotations

import random

import pytest

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS, HiddenTask, Task
from envfactory.tasks.supply import Address, TaskSupply, split_by_content


class Sums:
    """Ask for a + b: the question and the answer are the content that decides the split."""

    def __init__(self, misplace: bool = False) -> None:
        self.misplace = misplace

    def draft(self, difficulty: int, rng: random.Random) -> tuple[int, int] | None:
        a, b = rng.randrange(10 * difficulty), rng.randrange(10)
        return None if a == b else (a, b)

    def split_keys(self, d: tuple[int, int]) -> list[tuple[str, str]]:
        return [("question", f"{d[0]}+{d[1]}"), ("answer", str(sum(d)))]

    def fingerprint(self, d: tuple[int, int]) -> str:
        return f"{d[0]}+{d[1]}"

    def task(self, d: tuple[int, int], at: Address) -> Task:
        if self.misplace:
            at = Address(at.env_id, at.split, at.difficulty, at.index + 1)
        public = at.public(instruction=f"What is {d[0]} + {d[1]}?", persona="", rules=[], tools=[])
        hidden = HiddenTask(
            task_id=at.task_id, goals=["sum"], gold_plan=[], target=[], answers=[sum(d)],
            knobs={}, fingerprint=self.fingerprint(d),
        )  # fmt: skip
        return Task(public=public, hidden=hidden, initial_hash="")


def supply(**kwargs: object) -> TaskSupply[tuple[int, int]]:
    return TaskSupply("sums", Sums(), [1, 2], slots=3000, **kwargs)


def every_task(s: TaskSupply[tuple[int, int]], split: str, difficulty: int) -> list[Task]:
    size = s.capacity(split, difficulty)
    assert size is not None and size > 0
    return [s.task(split, difficulty, i) for i in range(size)]


def test_addresses_are_checked() -> None:
    s = supply()
    for bad in [("dev", 1, 0), ("train", 3, 0), ("train", 1, -1)]:
        with pytest.raises(SynthesisError):
            s.task(*bad)
    size = s.capacity("test", 1)
    assert size is not None
    with pytest.raises(SynthesisError):
        s.task("test", 1, size)
    task = s.task("validation", 2, 3)
    assert task.task_id == "sums/validation/2/3" == task.hidden.task_id
    assert (task.public.split, task.public.difficulty) == ("validation", 2)


def test_the_same_address_gives_the_same_task_in_another_supply() -> None:
    a, b = supply(), supply()
    for split in SPLITS:
        assert [t.public for t in every_task(a, split, 2)] == [
            b.task(split, 2, i).public for i in range(a.capacity(split, 2) or 0)
        ]
    assert supply(seed=1).task("train", 2, 0) != a.task("train", 2, 0)


def test_no_held_out_task_shares_a_key_with_a_train_task() -> None:
    s, drafter = supply(), Sums()
    keys: dict[str, set[tuple[str, str]]] = {split: set() for split in SPLITS}
    for split in SPLITS:
        tasks = every_task(s, split, 1)
        fingerprints = [t.hidden.fingerprint for t in tasks]
        assert len(set(fingerprints)) == len(fingerprints)  # each task once per cell
        for t in tasks:
            a, b = (int(x) for x in t.hidden.fingerprint.split("+"))
            keys[split] |= set(drafter.split_keys((a, b)))
            assert (
                split_by_content("sums", drafter.split_keys((a, b)), t.hidden.fingerprint) == split
            )
    assert keys["train"] and keys["validation"] and keys["test"]
    assert not keys["train"] & (keys["validation"] | keys["test"])


def test_patience_spends_a_cell_that_finds_nothing_new() -> None:
    s = TaskSupply("sums", Sums(), [1], patience=50)
    found = 0
    with pytest.raises(SynthesisError):
        while True:
            s.task("test", 1, found)
            found += 1
    assert 0 < found < 100 and s.capacity("test", 1) is None


def test_a_task_made_at_another_address_is_refused() -> None:
    with pytest.raises(SynthesisError, match="is not at"):
        TaskSupply("sums", Sums(misplace=True), [1]).task("train", 1, 0)
