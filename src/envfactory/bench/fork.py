"""``envfactory bench fork``: what ``episode.fork()`` costs, and whether forks are exact.

The fork is timed on a live episode in the middle of a task (the oracle's actions on the
longest plan but the final reply, its writes made), ``n`` times; each fork is closed untimed,
as a rollout closes its episodes. Beside it: forks held live at once with no idle connection
to reuse (each opens one and reads the snapshot); a fork followed by a query that makes
SQLite see the fork's rows (the work a fork defers); and a usable copy of the whole database
(serialised, deserialised, its schema read), the naive fork.

``forks_identical`` is checked on every task and every split point of its oracle run: a fork
and its parent given the same actions reach the same state hash (the incremental one and a
full canonical hash of every row) and the same verdict, equal to an episode never forked
(forked with the parent's writes pending in Python, and after they reached SQLite); given
different actions (one finishes the task, the other stops), each reaches the state of an
unforked episode that took its actions alone: neither sees the other's writes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from statistics import median, quantiles

from pydantic import BaseModel

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.contract.tasks import Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.episode import DatabaseEpisode
from envfactory.policies.scripted import scripted
from envfactory.registry import make
from envfactory.world.state import hash_rows, hex_hash

Action = ToolCall | Message
STOP = Message(content="I have to stop here, sorry.")


class ForkBench(BaseModel):
    env: str
    n: int
    fork_us_p50: float
    fork_us_p90: float
    fork_then_query_us_p50: float
    cold_fork_us_p50: float
    sqlite_copy_us_p50: float
    touched_rows: int
    forks_identical: bool
    identity_checks: int
    identity_failures: list[str]
    tasks: int
    load_avg: list[float]


def _us(samples: list[float]) -> float:
    return round(median(samples) * 1e6, 2)


def oracle_actions(env: DatabaseEnvironment, task: Task) -> list[Action]:
    """The oracle's actions on ``task``, recorded from an episode it plays to the end."""
    ep, oracle = env.episode(), scripted("oracle")
    obs: Observation = ep.reset(task)
    oracle.start(task, [])
    actions: list[Action] = []
    while not obs.done:
        action = oracle.act(obs)
        assert isinstance(action, ToolCall | Message)
        actions.append(action)
        obs = ep.step(action)
    ep.close()
    return actions


def _play(ep: DatabaseEpisode, actions: list[Action]) -> DatabaseEpisode:
    for action in actions:
        if ep.step(action).done:
            break
    return ep


def _fresh(env: DatabaseEnvironment, task: Task, actions: list[Action]) -> DatabaseEpisode:
    ep = env.episode()
    ep.reset(task)
    return _play(ep, actions)


def _state(ep: DatabaseEpisode) -> tuple[str, str, str]:
    """The incremental state hash, the full canonical hash of every row, and the verdict."""
    full = hex_hash(hash_rows(ep.store.dump()))
    return ep.state_hash(), full, ep.evaluate().model_dump_json()


def check_forks(env: DatabaseEnvironment, task: Task) -> tuple[int, list[str]]:
    """Every split point of the oracle's run on ``task``: the checks made and the failures."""
    actions = oracle_actions(env, task)
    checks, failures = 0, []
    for k in range(len(actions)):
        head, rest = actions[:k], actions[k:]
        cases: dict[
            str, tuple[list[Action], list[Action]]
        ] = {  # (the parent's actions, the fork's actions) after the split
            "same": (rest, rest),
            "parent finishes": (rest, [STOP]),
            "fork finishes": ([STOP], rest),
        }
        for name, (mine, theirs) in cases.items():
            parent = _play(_fresh(env, task, []), head)
            if k % 2:  # the parent's rows in its SQLite too, not only pending in Python
                parent.store.sync()
            child = parent.fork()
            _play(parent, mine)
            _play(child, theirs)
            for who, ep, acts in (("parent", parent, mine), ("fork", child, theirs)):
                alone = _fresh(env, task, head + acts)
                got, want = _state(ep), _state(alone)
                checks += 1
                if got != want or got[0] != got[1]:
                    failures.append(f"{task.task_id} split {k} {name}: the {who} differs")
                alone.close()
            parent.close()
            child.close()
    return checks, failures


def _copy_whole(conn: sqlite3.Connection) -> float:
    """One naive fork: the whole database serialised and deserialised into a new connection,
    and its schema read (as a store's first query would)."""
    t0 = time.perf_counter()
    twin = sqlite3.connect(":memory:")
    twin.deserialize(conn.serialize())
    twin.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    elapsed = time.perf_counter() - t0
    twin.close()
    return elapsed


def _cold_forks(parent: DatabaseEpisode, m: int) -> list[float]:
    """``m`` forks held live at once with no idle connection to reuse: each opens its own."""
    idle = parent.store.base.idle
    while idle:
        idle.pop().close()
    held, times = [], []
    for _ in range(m):
        t0 = time.perf_counter()
        held.append(parent.fork())
        times.append(time.perf_counter() - t0)
    for child in held:
        child.close()
    return times


def bench_fork(env_id: str = "retail", n: int = 2000, tasks: int = 6) -> ForkBench:
    env = make(env_id)
    if not isinstance(env, DatabaseEnvironment):
        raise WrongKind(f"{env_id} is a {env.kind} world; this benchmark forks database worlds")
    levels = env.difficulties
    chosen = [env.task("train", levels[i % len(levels)], i // len(levels)) for i in range(tasks)]
    checks, failures = 0, []
    for task in chosen:
        made, failed = check_forks(env, task)
        checks += made
        failures += failed

    task = max(chosen, key=lambda t: len(t.hidden.gold_plan))
    actions = oracle_actions(env, task)
    parent = _fresh(env, task, actions[:-1])  # every write made, the final reply not sent
    touched = sum(len(keys) for keys in parent.store.touched.values())
    table = next(iter(parent.store.touched), next(iter(env.world.tables)))
    for _ in range(50):  # warm: the world's idle connections, the caches
        parent.fork().close()
    forks, synced, copies = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        child = parent.fork()
        forks.append(time.perf_counter() - t0)
        child.close()
    for _ in range(max(1, n // 10)):
        t0 = time.perf_counter()
        child = parent.fork()
        child.store.rows(table, limit=1)
        synced.append(time.perf_counter() - t0)
        child.close()
        copies.append(_copy_whole(parent.store.conn))
    cold = _cold_forks(parent, max(1, n // 10))
    parent.close()
    return ForkBench(
        env=env_id,
        n=n,
        fork_us_p50=_us(forks),
        fork_us_p90=round(quantiles(forks, n=10)[-1] * 1e6, 2),
        fork_then_query_us_p50=_us(synced),
        cold_fork_us_p50=_us(cold),
        sqlite_copy_us_p50=_us(copies),
        touched_rows=touched,
        forks_identical=checks > 0 and not failures,
        identity_checks=checks,
        identity_failures=failures[:10],
        tasks=len(chosen),
        load_avg=[round(x, 2) for x in os.getloadavg()],
    )
