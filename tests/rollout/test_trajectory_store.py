"""The JSONL store: durable appends, torn-line repair, no duplicates, checkpoints, Parquet."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout import EngineConfig, RolloutEngine, plan_tasks
from envfactory.trajectory import (
    EpisodeRecord,
    StoreError,
    TrajectoryStore,
    export_parquet,
    read_records,
)


@pytest.fixture(scope="module")
def records() -> list[EpisodeRecord]:
    engine = RolloutEngine(ScriptedPolicy("noisy-oracle"), config=EngineConfig(group_size=2))
    engine.run_sync(plan_tasks(["retail"], 5))
    return engine.records


def test_append_then_reopen(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    with TrajectoryStore(tmp_path) as store:
        for r in records:
            store.append_sync(r)
    again = TrajectoryStore(tmp_path)
    assert list(again.records()) == records
    assert len(again) == 10 and records[3].episode_id in again
    assert again.entries[records[3].episode_id].group_id == records[3].group_id
    again.close()


def test_a_duplicate_is_refused(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    with TrajectoryStore(tmp_path) as store:
        store.append_sync(records[0])
        with pytest.raises(StoreError, match="already recorded"):
            store.submit(records[0])
    with TrajectoryStore(tmp_path) as store, pytest.raises(StoreError, match="already"):
        store.append_sync(records[0])


def test_a_torn_last_line_is_cut_off(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    with TrajectoryStore(tmp_path) as store:
        store.append_sync(records[0])
    path = tmp_path / "episodes.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + records[1].model_dump_json().encode()[:100])
    with TrajectoryStore(tmp_path) as store:
        assert len(store) == 1 and path.read_bytes() == whole
        store.append_sync(records[1])  # and the episode can be recorded again
    assert [r.episode_id for r in read_records(path)] == [r.episode_id for r in records[:2]]


def test_a_corrupted_line_is_a_clear_error(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    (tmp_path / "episodes.jsonl").write_text("not json\n" + records[0].model_dump_json() + "\n")
    with pytest.raises(StoreError, match=r"episodes.jsonl:1 is not an episode record"):
        TrajectoryStore(tmp_path)


def test_checkpoints_latest_wins_and_finished_ones_drop(
    tmp_path: Path, records: list[EpisodeRecord]
) -> None:
    a, b = records[0], records[1]
    early = a.model_copy(update={"calls": a.calls[:1]})
    with TrajectoryStore(tmp_path) as store:
        store.checkpoint(early).result()
        store.checkpoint(a).result()
        store.checkpoint(b).result()
        store.append_sync(b)
    with TrajectoryStore(tmp_path) as store:
        assert set(store.partials) == {a.episode_id}
        assert store.partials[a.episode_id] == a
    assert (tmp_path / "partial.jsonl").read_bytes().count(b"\n") == 1  # compacted


def test_checkpoints_are_compacted_while_running(
    tmp_path: Path, records: list[EpisodeRecord]
) -> None:
    a, b = records[0], records[1]
    size = len(a.model_dump_json()) + len(b.model_dump_json()) + 2
    with TrajectoryStore(tmp_path, compact_bytes=3 * size) as store:
        for _ in range(20):
            store.checkpoint(a)
            store.checkpoint(b).result()
        assert (tmp_path / "partial.jsonl").stat().st_size < 5 * size
        store.append_sync(a)
        for _ in range(10):
            store.checkpoint(b).result()
        assert (tmp_path / "partial.jsonl").stat().st_size < 5 * size
    with TrajectoryStore(tmp_path) as store:
        assert store.partials == {b.episode_id: b} and a.episode_id in store


def test_a_closed_store_takes_nothing(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    store = TrajectoryStore(tmp_path)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.submit(records[0])


def test_parquet_export(tmp_path: Path, records: list[EpisodeRecord]) -> None:
    with TrajectoryStore(tmp_path) as store:
        for r in records:
            store.append_sync(r)
    path = export_parquet(tmp_path / "episodes.jsonl", tmp_path / "episodes.parquet")
    table = pq.read_table(path)
    assert table.num_rows == len(records)
    rows = table.to_pylist()
    assert [r["episode_id"] for r in rows] == [r.episode_id for r in records]
    assert [r["reward"] for r in rows] == [r.reward for r in records]
    assert rows[0]["n_calls"] == len(records[0].calls) and rows[0]["model_name"] == "noisy-oracle"
    back = EpisodeRecord.model_validate_json(records[0].model_dump_json())
    assert back == records[0]


def test_text_that_is_not_unicode_is_written_with_replacement(
    tmp_path: Path, records: list[EpisodeRecord]
) -> None:
    """A Python policy's raw action or an endpoint's reply holding a lone surrogate made the
    whole batch's write fail (StoreError for every episode queued with it)."""
    bad = records[0].model_copy(deep=True)
    bad.steps[0].action = {"type": "tool_call", "tool": "get_\ud800", "arguments": {"\udfff": 1}}
    bad.messages.append({"role": "assistant", "content": "pair \ud83d\ude00 lone \ud800"})
    with TrajectoryStore(tmp_path) as store:
        done = [store.submit(bad), store.submit(records[1])]
        for fut in done:
            fut.result()
        store.checkpoint(bad.model_copy(update={"episode_id": "live"})).result()
    back = list(read_records(tmp_path / "episodes.jsonl"))
    assert [r.episode_id for r in back] == [bad.episode_id, records[1].episode_id]
    assert back[0].steps[0].action["tool"] == "get_\ufffd"
    assert back[0].steps[0].action["arguments"] == {"\ufffd": 1}
    assert back[0].messages[-1]["content"] == "pair \U0001f600 lone \ufffd"
    assert back[1] == records[1]
