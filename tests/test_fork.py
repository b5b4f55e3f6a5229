"""``episode.fork()``: an independent live copy, exact, for every kind whose state allows it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import envfactory
from envfactory.bench.fork import STOP, check_forks, oracle_actions
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.errors import EpisodeError, ForkUnsupported
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.peers.tau2.data import missing_reason
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.world.state import hash_rows


def test_fork_and_parent_agree_at_every_split_point(retail: Environment) -> None:
    for difficulty in (1, 3):
        checks, failures = check_forks(retail, retail.task("train", difficulty, 0))
        assert checks > 0 and failures == []


def test_a_fork_is_a_copy_of_everything_the_episode_holds(retail: Environment) -> None:
    task = retail.task("train", 3, 1)
    actions = oracle_actions(retail, task)
    parent = retail.episode()
    parent.reset(task)
    parent.step(Message(content="Could you tell me your email, please?", final=False))
    for action in actions[:3]:
        parent.step(action)
    child = parent.fork()
    assert type(child) is type(parent) and child.task is parent.task
    assert (child.steps, child.tool_calls, child.done) == (parent.steps, parent.tool_calls, False)
    assert child.state_hash() == parent.state_hash() and child.log == parent.log
    assert child.to_user == parent.to_user and child.from_user == parent.from_user
    assert child.store is not parent.store and child.store.conn is not parent.store.conn
    assert child.user is not None and child.user is not parent.user
    # the fork's own conversation and counters: the parent's do not move
    child.step(Message(content="Could you tell me your zip, please?", final=False))
    child.step(STOP)
    assert child.done and not parent.done
    assert len(child.to_user) == len(parent.to_user) + 2 and child.steps == parent.steps + 2
    parent.close()
    # a closed parent leaves its fork working
    assert child.evaluate().status == "completed"
    child.close()


def test_writes_stay_on_their_side_through_sqlite(retail: Environment) -> None:
    """Rows in SQLite (synced) and rows pending in Python both carry over, and a query over a
    touched table sees the fork's own rows only."""
    store = retail.world.new_store()
    store.set_fields("customers", "CUS-00001", {"phone": "555-0001"})
    order = store.get("orders", "ORD-00001")
    assert order is not None
    store.insert("orders", {**order, "status": "pending"})
    store.sync()  # these two in SQLite
    store.delete("customers", "CUS-00002")  # this one pending
    store.mark_start([("customers", "CUS-00003")])
    fork = store.fork()
    for s in (store, fork):
        assert s.state_hash() == hash_rows(s.dump())
    assert fork.dump() == store.dump() and fork.start == store.start
    fork.set_fields("customers", "CUS-00001", {"phone": "555-9999"})
    store.set_fields("customers", "CUS-00004", {"phone": "555-4444"})
    mine = {
        r["id"]: r["phone"]
        for r in store.rows("customers")
        if r["id"] in ("CUS-00001", "CUS-00004")
    }
    theirs = {
        r["id"]: r["phone"] for r in fork.rows("customers") if r["id"] in ("CUS-00001", "CUS-00004")
    }
    assert mine["CUS-00001"] == "555-0001" and mine["CUS-00004"] == "555-4444"
    assert theirs["CUS-00001"] == "555-9999" and theirs["CUS-00004"] != "555-4444"
    assert (
        store.get("customers", "CUS-00002") is None and fork.get("customers", "CUS-00002") is None
    )
    for s in (store, fork):
        assert s.state_hash() == hash_rows(s.dump())
    assert fork.state_hash() != store.state_hash()
    # an insert in each takes the same next id without clashing
    assert store.insert("orders", order)["id"] == fork.insert("orders", order)["id"]
    with store.transaction(), pytest.raises(RuntimeError, match="inside a transaction"):
        store.fork()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.fork()
    fork.close()


def test_a_store_written_with_a_key_that_is_not_text_forks_whole(retail: Environment) -> None:
    """A write whose key is not text may have hit any row (SQLite compares 5 with "5"): the
    fork then copies every row that differs from the base, read from SQLite."""
    store = retail.world.new_store()
    store.set_fields("customers", "CUS-00001", {"phone": "555-0001"})
    store.delete("customers", 5)  # an int key, as a careless tool might pass
    store.delete("customers", "CUS-00002")
    fork = store.fork()
    assert fork.dump() == store.dump() and fork.state_hash() == store.state_hash()
    fork.set_fields("customers", "CUS-00003", {"phone": "555-0003"})
    assert store.get("customers", "CUS-00003") != fork.get("customers", "CUS-00003")
    assert fork.get("customers", "CUS-00001") == store.get("customers", "CUS-00001")
    store.close()
    fork.close()


def test_fork_before_reset_is_refused(retail: Environment) -> None:
    with pytest.raises(EpisodeError, match="reset"):
        retail.episode().fork()


@pytest.mark.parametrize("env_id", ["term-git", "web-retail", "kuhn_poker"])
def test_kinds_that_cannot_fork_say_why(env_id: str) -> None:
    episode = envfactory.make(env_id).episode()
    with pytest.raises(ForkUnsupported) as err:
        episode.fork()
    assert type(episode).__name__ in str(err.value) and episode.fork_refusal in str(err.value)
    assert isinstance(err.value, EpisodeError)
    episode.close()


def test_research_episode_forks() -> None:
    env = envfactory.make("research-wiki")
    task = env.task("train", env.difficulties[0], 0)
    search, answer = task.hidden.gold_plan[:2]
    parent = env.episode()
    parent.reset(task)
    parent.step(ToolCall(tool=search.tool, arguments=search.arguments))
    child = parent.fork()
    child.step(ToolCall(tool=answer.tool, arguments=answer.arguments))
    parent.step(ToolCall(tool="answer", arguments={"value": "not it"}))
    assert child.evaluate().reward == 1.0 and parent.evaluate().reward == 0.0


@pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))
def test_tau2_episode_forks_with_its_conversation() -> None:
    env = envfactory.make("tau2-retail")
    assert isinstance(env, Tau2RetailEnvironment)
    task = env.task("train", env.difficulties[0], 0)
    actions = oracle_actions(env, task)
    k = len(actions) // 2
    parent = env.episode()
    parent.reset(task)
    for action in actions[:k]:
        parent.step(action)
    child = parent.fork()
    assert child.said == parent.said and child.said is not parent.said
    for ep in (parent, child):
        for action in actions[k:]:
            ep.step(action)
    assert child.evaluate() == parent.evaluate() and parent.evaluate().reward == 1.0
    other = parent.fork()
    other.close()
    stopped = env.episode()
    stopped.reset(task)
    for action in actions[:k]:
        stopped.step(action)
    fork = stopped.fork()
    stopped.step(STOP)
    assert fork.state_hash() == stopped.state_hash() and not fork.done
    assert len(fork.said) == len(stopped.said) - 1
    for ep in (parent, child, stopped, fork):
        ep.close()


def test_bench_fork_prints_the_keys() -> None:
    """``envfactory bench fork`` (``bench --fork`` at its default sizes) prints its record."""
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "bench", "fork", "--n", "50", "--tasks", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["forks_identical"] is True and record["identity_checks"] > 0
    assert 0 < record["fork_us_p50"] <= record["fork_us_p90"]
    assert record["env"] == "retail" and record["n"] == 50 and len(record["load_avg"]) == 3
