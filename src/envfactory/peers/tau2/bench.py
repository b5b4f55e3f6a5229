"""``envfactory bench --tau2``: envfactory's engine against tau2-bench's approach, on tau2's
retail data, in one run.

For each task, both sides replay the gold actions as an agent would and are judged:

- **envfactory** (``tau2-retail``): reset deserialises the SQLite snapshot; a step is a tool
  call through the episode API; the reward is ``episode.evaluate()`` (tau2's database and
  communicate checks from the touched rows, plus envfactory's rubric).
- **peer** (:class:`~.peer.PeerRetail`, tau2-bench's approach reimplemented plainly): reset
  deep-copies the JSON database; a step runs the same tool on the JSON records and serialises
  the result as tau2 does; the reward replays the gold actions on a fresh deep copy and
  compares SHA-256 hashes of the two whole databases. ``peer_hash_us_p50`` is one whole-database
  hash alone, the peer's cost even if the gold hash were cached.

Numbers are medians of per-call timings; the two sides' rewards must agree on every task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from statistics import median
from typing import Any

from pydantic import BaseModel

from envfactory.env import Environment
from envfactory.episode.types import Message, ToolCall
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.peer import PeerRetail, db_hash
from envfactory.policies.scripted import answer_text


class Tau2Bench(BaseModel):
    env: str
    tasks: int
    rows: int
    json_kb: float
    snapshot_kb: float
    reset_us_p50: float
    peer_reset_us_p50: float
    reset_speedup: float
    step_us_p50: float
    peer_step_us_p50: float
    step_speedup: float
    reward_us_p50: float
    peer_reward_us_p50: float
    reward_speedup: float
    peer_hash_us_p50: float
    reward_vs_hash_speedup: float
    rewards_agree: bool


def _timed(fn: Callable[[], Any], into: list[float]) -> Any:
    t0 = time.perf_counter()
    out = fn()
    into.append(time.perf_counter() - t0)
    return out


def _peer_step(peer: PeerRetail, action: dict[str, Any]) -> str:
    """A tool call on the JSON records, its result serialised as tau2 sends it."""
    return json.dumps(peer.step(action["name"], action["arguments"]), default=str)


def _us(samples: list[float]) -> float:
    return round(median(samples) * 1e6, 2)


def bench_tau2(env: Environment | None = None, n: int | None = None) -> Tau2Bench:
    """Measure both sides over ``n`` tau2 tasks (all of them by default)."""
    env = env or Tau2RetailEnvironment()
    if not isinstance(env, Tau2RetailEnvironment):
        raise TypeError(f"bench_tau2 measures tau2-retail, not {env.id}")
    imported = [m for split in env.splits for m in env.cells[split]][:n]
    peer = PeerRetail(env.data.db)
    ep = env.episode()
    t: dict[str, list[float]] = {k: [] for k in ("reset", "step", "reward", "peer_reset")}
    t |= {"peer_step": [], "peer_reward": [], "peer_hash": []}
    agree = True
    for m in imported:
        _timed(partial(ep.reset, m.task), t["reset"])
        _timed(peer.reset, t["peer_reset"])
        for a in m.actions:
            _timed(partial(ep.step, ToolCall(tool=a["name"], arguments=a["arguments"])), t["step"])
            _timed(partial(_peer_step, peer, a), t["peer_step"])
        ep.step(Message(content=answer_text(list(m.communicate))))
        verdict = _timed(ep.evaluate, t["reward"])
        peer_reward = _timed(partial(peer.reward, m.actions), t["peer_reward"])
        _timed(partial(db_hash, peer.db), t["peer_hash"])
        agree = agree and verdict.item("tau2_db").score == peer_reward
    ep.close()
    us = {k: _us(v) for k, v in t.items()}
    return Tau2Bench(
        env=env.id,
        tasks=len(imported),
        rows=env.world.row_count,
        json_kb=round(len(json.dumps(env.data.db)) / 1024, 1),
        snapshot_kb=round(len(env.world.base.snapshot) / 1024, 1),
        reset_us_p50=us["reset"],
        peer_reset_us_p50=us["peer_reset"],
        reset_speedup=round(us["peer_reset"] / us["reset"], 1),
        step_us_p50=us["step"],
        peer_step_us_p50=us["peer_step"],
        step_speedup=round(us["peer_step"] / us["step"], 2),
        reward_us_p50=us["reward"],
        peer_reward_us_p50=us["peer_reward"],
        reward_speedup=round(us["peer_reward"] / us["reward"], 1),
        peer_hash_us_p50=us["peer_hash"],
        reward_vs_hash_speedup=round(us["peer_hash"] / us["reward"], 1),
        rewards_agree=agree,
    )
