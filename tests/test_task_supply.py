"""The shared task supply: addresses, seeded order, split by content, dedupe and capacity."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS, HiddenTask, Task
from envfactory.tasks.seeds import content_unit
from envfactory.tasks.supply import (
    Address,
    CellStream,
    PerAddress,
    SharedSequence,
    TaskSupply,
    split_by_content,
)


class Sums:
    """Ask for a + b: the question and the answer are the content that decides the split."""

    def __init__(self, misplace: bool = False) -> None:
        self.misplace = misplace

    def draft(self, difficulty: int, slot: int, rng: random.Random) -> tuple[int, int] | None:
        a, b = rng.randrange(10 * difficulty), rng.randrange(10)
        return None if a == b else (a, b)

    def split_keys(self, d: tuple[int, int]) -> list[tuple[str, str]]:
        return [("question", f"{d[0]}+{d[1]}"), ("answer", str(sum(d)))]

    def divider(self, d: tuple[int, int]) -> str:
        return self.fingerprint(d)

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
    return TaskSupply("sums", Sums(), [1, 2], order=SharedSequence(slots=3000), **kwargs)


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
    s = TaskSupply("sums", Sums(), [1], order=SharedSequence(patience=50))
    found = 0
    with pytest.raises(SynthesisError):
        while True:
            s.task("test", 1, found)
            found += 1
    assert 0 < found < 100 and s.capacity("test", 1) == found  # spent: its size is known


def test_a_task_made_at_another_address_is_refused() -> None:
    with pytest.raises(SynthesisError, match="is not at"):
        TaskSupply("sums", Sums(misplace=True), [1]).task("train", 1, 0)


def test_the_guard_reads_keys_only_until_one_rules_the_split_out() -> None:
    drafter = Sums()
    train = next(d for d in [(a, b) for a in range(50) for b in range(10)]
                 if split_by_content("sums", drafter.split_keys(d), "x") == "train")  # fmt: skip

    def keys() -> Iterator[tuple[str, str]]:
        yield drafter.split_keys(train)[0]
        raise AssertionError("read past the key that ruled the split out")

    assert split_by_content("sums", keys(), "x", wanted="test") is None
    with pytest.raises(SynthesisError, match="no content key"):
        split_by_content("sums", [], "x")


def test_per_address_tasks_do_not_depend_on_the_tasks_before_them() -> None:
    first, second = (TaskSupply("sums", Sums(), [1, 2], order=PerAddress()) for _ in range(2))
    late = first.task("test", 2, 7)
    assert [second.task("test", 2, i) for i in range(8)][7] == late
    assert late.task_id == "sums/test/2/7" and first.capacity("test", 2) is None
    for split in SPLITS:
        t = first.task(split, 1, 3)
        a, b = (int(x) for x in t.hidden.fingerprint.split("+"))
        assert split_by_content("sums", Sums().split_keys((a, b)), t.hidden.fingerprint) == split


class Refusing(Sums):
    """Refuses every task whose first term is even (the world's own demand)."""

    def task(self, d: tuple[int, int], at: Address) -> Task | None:
        return None if d[0] % 2 == 0 else super().task(d, at)


def test_a_refused_candidate_is_passed_over_in_every_order() -> None:
    for order in (SharedSequence(slots=500), PerAddress()):
        s = TaskSupply("sums", Refusing(), [2], order=order)
        odd = [int(s.task("train", 2, i).hidden.fingerprint.split("+")[0]) % 2 for i in range(5)]
        assert odd == [1] * 5
    with pytest.raises(SynthesisError, match="in 3 draws"):
        TaskSupply("sums", Refusing(), [1], order=PerAddress(attempts=3)).task("test", 1, 0)


class Listed(Sums):
    """A finite catalogue in the drafter's own order, with repeats and every split mixed."""

    def stream(self, split: str, difficulty: int) -> Iterator[tuple[int, int]]:
        for a in range(30):
            yield from [(a, 1), (a, 1), (a, 2)]


def test_a_cell_stream_is_guarded_deduped_and_counted_once_spent() -> None:
    s = TaskSupply("sums", Listed(), [1], order=CellStream())
    assert s.capacity("validation", 1) is None  # not known before the stream runs out
    found = []
    with pytest.raises(SynthesisError):
        while True:
            found.append(s.task("validation", 1, len(found)).hidden.fingerprint)
    assert found and len(set(found)) == len(found)
    assert s.capacity("validation", 1) == len(found)
    every = {f"{a}+{b}" for a in range(30) for b in (1, 2)}
    assert set(found) == {f for f in every if split_by_content("sums", Sums().split_keys(
        tuple(int(x) for x in f.split("+"))), f) == "validation"}  # type: ignore[arg-type]  # fmt: skip


def test_a_limit_bounds_every_cell() -> None:
    s = TaskSupply("sums", Sums(), [1], order=SharedSequence(slots=3000), limit=4)
    assert s.capacity("train", 1) == 4
    s.task("train", 1, 3)
    with pytest.raises(SynthesisError, match="at most 4"):
        s.task("train", 1, 4)


def test_without_a_divider_every_key_places_a_held_out_candidate_itself() -> None:
    """Worlds split by units (a question touching modules): each key falls in train (below
    one half), validation or test (the upper quarters), and the keys must agree."""
    units = {m: content_unit("sums", "module", m) for m in (f"m{i}" for i in range(40))}
    by_split = {
        "train": [m for m, u in units.items() if u < 0.5],
        "validation": [m for m, u in units.items() if 0.5 <= u < 0.75],
        "test": [m for m, u in units.items() if u >= 0.75],
    }
    for split, modules in by_split.items():
        pair = [("module", modules[0]), ("module", modules[1])]
        assert split_by_content("sums", pair, None) == split
        assert split_by_content("sums", pair, None, wanted=split) == split
    mixed = [("module", by_split["validation"][0]), ("module", by_split["test"][0])]
    assert split_by_content("sums", mixed, None) is None
