"""The RLVE rule, the learnability sampler, and state that survives reopening."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.curriculum import (
    Curriculum,
    CurriculumConfig,
    CurriculumError,
    CurriculumStore,
    Draw,
)

LEVELS = [1, 2, 3, 4, 5]


def fresh(config: CurriculumConfig | None = None, path: str | Path = ":memory:") -> Curriculum:
    cur = Curriculum(
        path, config or CurriculumConfig(window=2, raise_at=0.75, min_samples=4, memory=4)
    )
    cur.add("a", LEVELS)
    return cur


def feed(cur: Curriculum, env: str, level: int, outcomes: list[int], tag: str = "") -> None:
    for i, ok in enumerate(outcomes):
        cur.record(f"{env}:{level}:{tag}{i}:{len(cur.store.all_outcomes())}", env, level, float(ok))


def test_raise_after_min_samples_at_the_threshold() -> None:
    cur = fresh()
    feed(cur, "a", 1, [1, 1, 1])
    assert cur.frontier("a") == 1  # three samples are not enough
    feed(cur, "a", 1, [0])
    assert cur.frontier("a") == 2  # 3 of 4 = 0.75 reaches raise_at
    (start, move) = cur.history("a")
    assert (start.event, start.level_to) == ("start", 1)
    assert (move.event, move.level_from, move.level_to, move.samples) == ("raise", 1, 2, 4)
    assert move.accuracy == 0.75


def test_only_frontier_episodes_count() -> None:
    cur = fresh()
    feed(cur, "a", 1, [1, 1, 1, 1])
    assert cur.frontier("a") == 2
    feed(cur, "a", 1, [1] * 10)  # below the frontier (or in flight when it moved)
    assert cur.frontier("a") == 2 and cur.state()[0].frontier_samples == 0
    feed(cur, "a", 2, [1, 0, 1, 0, 1, 0])  # half right: stays
    assert cur.frontier("a") == 2
    feed(cur, "a", 2, [1, 1])  # the latest four: 1 0 1 1
    assert cur.frontier("a") == 3


def test_the_window_holds_the_highest_unlocked_levels() -> None:
    cur = fresh()
    assert {cur.draw().difficulty for _ in range(50)} == {1}
    for level in (1, 2, 3):
        feed(cur, "a", level, [1, 1, 1, 1])
    assert cur.frontier("a") == 4
    assert cur.state()[0].window == [3, 4]
    assert {cur.draw().difficulty for _ in range(100)} == {3, 4}
    for level in (4, 5):
        feed(cur, "a", level, [1, 1, 1, 1])
    assert cur.frontier("a") == 5  # the top: nowhere higher to go
    assert [e.event for e in cur.history("a")].count("raise") == 4


def test_two_way_lowers_a_collapsed_frontier() -> None:
    one_way = fresh()
    two_way = fresh(
        CurriculumConfig(window=2, raise_at=0.75, min_samples=4, memory=4, lower_at=0.25)
    )
    for cur in (one_way, two_way):
        feed(cur, "a", 1, [1, 1, 1, 1])
        feed(cur, "a", 2, [0, 0, 0, 1])
    assert one_way.frontier("a") == 2
    assert two_way.frontier("a") == 1
    assert two_way.history("a")[-1].event == "lower"
    with pytest.raises(ValueError):
        CurriculumConfig(raise_at=0.5, lower_at=0.6)


def test_outcomes_count_once_and_faults_not_at_all() -> None:
    cur = fresh()
    for _ in range(5):
        cur.record("same-episode", "a", 1, 1.0)
    cur.record("fault", "a", 1, None)
    cur.record("unknown-env", "zzz", 1, 1.0)
    assert len(cur.store.all_outcomes()) == 1
    assert cur.state()[0].frontier_samples == 1
    cur.record("partial", "a", 1, 0.5)  # partial credit is not a success
    assert cur.state()[0].by_level[0].successes == 1


def test_sampler_weights_environments_by_learnability() -> None:
    cur = fresh(CurriculumConfig(min_samples=100, memory=100, floor=0.01))
    cur.add("b", LEVELS)
    cur.add("c", LEVELS)
    feed(cur, "a", 1, [1] * 60)  # mastered: p close to 1
    feed(cur, "b", 1, [1, 0] * 30)  # p = 1/2: the most to learn
    feed(cur, "c", 1, [0] * 60)  # hopeless for now
    w = cur.weights()
    assert w["b"] > 10 * w["a"] and w["b"] > 10 * w["c"]
    draws = [cur.draw().env_id for _ in range(400)]
    assert draws.count("b") > 300
    assert cur.draw(among=["a", "c"]).env_id in ("a", "c")
    assert cur.draw("c").env_id == "c"
    with pytest.raises(CurriculumError):
        cur.draw("nope")


def test_task_indices_are_fresh_and_wrap_at_capacity() -> None:
    cur = fresh()
    d = cur.draw()
    assert [cur.take_index(d, "train") for _ in range(3)] == [0, 1, 2]
    assert cur.take_index(d, "validation") == 0
    assert [cur.take_index(d, "test", capacity=2) for _ in range(3)] == [0, 1, 0]


def test_state_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cur = fresh(path=path)
    feed(cur, "a", 1, [1, 1, 1, 1])
    feed(cur, "a", 2, [1, 0, 1])
    index = cur.take_index(Draw("a", 1), "train")
    state, history = cur.state(), cur.history()
    cur.close()
    again = Curriculum(path)  # settings come from the store
    assert again.state() == state and again.history() == history
    assert again.config == CurriculumConfig(window=2, raise_at=0.75, min_samples=4, memory=4)
    feed(again, "a", 2, [1])  # the fourth frontier sample: 3 of 4
    assert again.frontier("a") == 3
    assert again.take_index(Draw("a", 1), "train") == index + 1  # indices are never reused
    with pytest.raises(CurriculumError, match="other settings"):
        Curriculum(path, CurriculumConfig(window=5))


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CurriculumError, match="not a curriculum store"):
        CurriculumStore(bad)


def test_changed_levels_keep_the_frontier() -> None:
    cur = fresh()
    for level in (1, 2):
        feed(cur, "a", level, [1, 1, 1, 1])
    cur.add("a", [1, 2, 3, 4, 5, 6])
    assert cur.frontier("a") == 3 and cur.envs["a"].levels[-1] == 6
    with pytest.raises(ValueError):
        cur.add("b", [])


@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 5), st.booleans()), max_size=120)
)
@budget(40)
def test_replaying_the_log_rebuilds_the_state(log: list[tuple[str, int, bool]]) -> None:
    """The persisted outcomes alone determine the frontiers: replayed in order through a fresh
    controller they give the same state, so nothing the controller holds is lost on restart."""
    cfg = CurriculumConfig(window=2, raise_at=0.7, min_samples=3, memory=5, lower_at=0.2)
    cur = Curriculum(":memory:", cfg)
    for env in ("a", "b"):
        cur.add(env, LEVELS)
    for i, (env, level, ok) in enumerate(log):
        cur.record(f"e{i}", env, level, float(ok))
    replay = Curriculum(":memory:", cfg)
    for env in ("a", "b"):
        replay.add(env, LEVELS)
    for o in cur.store.all_outcomes():
        replay.record(o.episode_id, o.env_id, o.difficulty, o.reward)
    assert [s.model_dump() for s in replay.state()] == [s.model_dump() for s in cur.state()]
    assert [(e.env_id, e.event, e.level_to) for e in replay.history()] == [
        (e.env_id, e.event, e.level_to) for e in cur.history()
    ]


def test_store_is_plain_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cur = fresh(path=path)
    feed(cur, "a", 1, [1, 0])
    cur.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM outcomes").fetchone() == (2,)
        assert db.execute("SELECT frontier FROM envs WHERE env_id = 'a'").fetchone() == (0,)
