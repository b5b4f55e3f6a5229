"""Tasks that break the world first: the episode starts from the broken state, the agent
repairs it, and the verdict is relative to that start."""

from __future__ import annotations

import envfactory
from envfactory.contract.actions import ToolCall
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.world.state import hash_rows, hex_hash


def _broken_tasks(n: int = 20) -> list[envfactory.Task]:
    env = envfactory.make("helpdesk")
    tasks = [env.task("train", d, i) for d in env.difficulties for i in range(12)]
    found = [t for t in tasks if t.hidden.setup]
    assert len(found) >= n
    return found[:n]


def test_episode_starts_from_the_broken_state() -> None:
    env = envfactory.make("helpdesk")
    ep = env.episode()
    for task in _broken_tasks():
        ep.reset(task)
        assert ep.state_hash() == task.initial_hash != hex_hash(env.world.base.hash)
        assert hex_hash(hash_rows(ep.store.dump())) == task.initial_hash
        assert ep.changes() == []
        for row in task.hidden.setup:
            assert ep.store.get(row.table, row.id) == row.after


def test_diagnostics_see_the_fault_and_the_oracle_repairs_it() -> None:
    env = envfactory.make("helpdesk")
    for task in _broken_tasks():
        assert run_episode(env, task, Oracle()).reward == 1.0
        assert run_episode(env, task, NoOp()).reward == 0.0
    apn = next(t for t in _broken_tasks() if t.hidden.goals == ["wrong_apn"])
    ep = env.episode()
    ep.reset(apn)
    line_id = apn.hidden.setup[0].id
    report = ep.step(ToolCall(tool="run_line_diagnostics", arguments={"line_id": line_id}))
    assert any("APN" in p for p in report.data["problems"])


def test_rollback_right_after_reset_keeps_the_database() -> None:
    """A savepoint rolled back as the first write after deserialising must not lose tables."""
    env = envfactory.make("helpdesk")
    store = env.world.new_store()
    for _ in range(3):
        store.update("lines", "LIN-00001", {"apn": "x"})
        store.reset()
        try:
            with store.transaction():
                store.update("lines", "LIN-00002", {"apn": "y"})
                raise RuntimeError("undo")
        except RuntimeError:
            pass
        assert store.get("lines", "LIN-00001") is not None
        assert store.changes() == []
