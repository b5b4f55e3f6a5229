"""``envfactory bench tau2``: envfactory's engine against tau2-bench's approach, on tau2's
retail data, in one run.

For each task, both sides replay the gold actions as an agent would and are judged:

- **envfactory** (``tau2-retail``): reset rolls the episode's writes back; a step is a tool
  call through the episode API; the reward is ``episode.evaluate()`` (tau2's database and
  communicate checks from the touched rows, plus envfactory's rubric).
- **peer** (:class:`~.peer.PeerRetail`, tau2-bench's approach reimplemented plainly): reset
  deep-copies the JSON database; a step runs the same tool on the JSON records and serialises
  the result as tau2 does; the reward replays the gold actions on a fresh deep copy and
  compares SHA-256 hashes of the two whole databases. ``peer_hash_us_p50`` is one whole-database
  hash alone, the peer's cost even if the gold hash were cached.

The two sides run one after the other, not interleaved (the peer's deep copies of a 1.3 MB
database would evict the other side's working set from the CPU caches). envfactory first
replays every task once untimed (its record cache fills, as it does in the first episodes of
any run), then ``passes`` timed times; each task's envfactory figures are the median of its
passes (a 4 ms scheduler slice on a shared machine would otherwise dominate a sub-millisecond
episode), the peer's are timed once.

The **replay** is the whole workload of a task: a fresh episode, every gold call, the closing
message and the verdict. ``replay_us_p50`` and ``peer_replay_us_p50`` are medians over tasks,
and ``replay_speedup`` is their ratio; ``replay_total_speedup`` is the ratio of the summed
times. Other figures are medians of per-call timings; the two sides' rewards must agree on
every task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from statistics import median
from typing import Any

from pydantic import BaseModel

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.environment import Environment
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.episode import Tau2Episode
from envfactory.peers.tau2.peer import PeerRetail, db_hash
from envfactory.peers.tau2.tasks import Imported
from envfactory.policies.scripted import answer_text


class Tau2Bench(BaseModel):
    env: str
    tasks: int
    calls: int
    passes: int
    rows: int
    json_kb: float
    snapshot_kb: float
    reset_us_p50: float
    peer_reset_us_p50: float
    reset_speedup: float
    step_us_p50: float
    step_read_us_p50: float
    step_write_us_p50: float
    peer_step_us_p50: float
    step_speedup: float
    reward_us_p50: float
    peer_reward_us_p50: float
    reward_speedup: float
    peer_hash_us_p50: float
    reward_vs_hash_speedup: float
    replay_us_p50: float
    peer_replay_us_p50: float
    replay_speedup: float
    replay_total_ms: float
    peer_replay_total_ms: float
    replay_total_speedup: float
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
    return round(median(samples) * 1e6, 2) if samples else 0.0


def _ratio(a: float, b: float, digits: int = 1) -> float:
    return round(a / b, digits) if b else 0.0


class _Ours:
    """envfactory's side: per-call samples, and each task's replay time and db score."""

    def __init__(self, env: Tau2RetailEnvironment) -> None:
        self.ep: Tau2Episode = env.episode()
        self.writes = env.world.write_tools
        self.t: dict[str, list[float]] = {k: [] for k in ("reset", "read", "write", "reward")}

    def replay(self, m: Imported, record: bool) -> tuple[float, float]:
        """One task's replay: its time and tau2's database score."""
        clock, ep = time.perf_counter, self.ep
        calls = [(a["name"] in self.writes, a["name"], a["arguments"]) for a in m.actions]
        closing = Message(content=answer_text(list(m.communicate)))
        start = clock()
        ep.reset(m.task)
        t_reset = clock()
        steps = []
        for writes, name, arguments in calls:
            t0 = clock()
            ep.step(ToolCall(tool=name, arguments=arguments))
            steps.append((writes, clock() - t0))
        ep.step(closing)
        t0 = clock()
        verdict = ep.evaluate()
        end = clock()
        if record:
            self.t["reset"].append(t_reset - start)
            for writes, dt in steps:
                self.t["write" if writes else "read"].append(dt)
            self.t["reward"].append(end - t0)
        return end - start, verdict.item("tau2_db").score


def bench_tau2(env: Environment | None = None, n: int | None = None, passes: int = 3) -> Tau2Bench:
    """Measure both sides over ``n`` tau2 tasks (all of them by default), envfactory's over
    ``passes`` timed passes."""
    env = env or Tau2RetailEnvironment()
    if not isinstance(env, Tau2RetailEnvironment):
        raise TypeError(f"bench_tau2 measures tau2-retail, not {env.id}")
    imported = [m for split in env.splits for m in env.cells[split]][:n]
    passes = max(1, passes)

    ours = _Ours(env)
    scores: list[float] = []
    for m in imported:  # untimed: the record cache fills
        scores.append(ours.replay(m, record=False)[1])
    replays: list[list[float]] = [[] for _ in imported]
    for _ in range(passes):
        for i, m in enumerate(imported):
            replays[i].append(ours.replay(m, record=True)[0])
    ours.ep.close()
    replay = [median(r) for r in replays]

    peer = PeerRetail(env.data.db)
    p: dict[str, list[float]] = {k: [] for k in ("reset", "step", "reward", "hash")}
    peer_replay: list[float] = []
    agree = True
    for m, score in zip(imported, scores, strict=True):
        start = time.perf_counter()
        _timed(peer.reset, p["reset"])
        for a in m.actions:
            _timed(partial(_peer_step, peer, a), p["step"])
        peer_reward = _timed(partial(peer.reward, m.actions), p["reward"])
        peer_replay.append(time.perf_counter() - start)
        _timed(partial(db_hash, peer.db), p["hash"])
        agree = agree and score == peer_reward

    t = ours.t
    us = {k: _us(v) for k, v in t.items()} | {f"peer_{k}": _us(v) for k, v in p.items()}
    us["step"] = _us(t["read"] + t["write"])
    replay_us, peer_replay_us = _us(replay), _us(peer_replay)
    total, peer_total = sum(replay), sum(peer_replay)
    return Tau2Bench(
        env=env.id,
        tasks=len(imported),
        calls=sum(len(m.actions) for m in imported),
        passes=passes,
        rows=env.world.row_count,
        json_kb=round(len(json.dumps(env.data.db)) / 1024, 1),
        snapshot_kb=round(len(env.world.base.snapshot) / 1024, 1),
        reset_us_p50=us["reset"],
        peer_reset_us_p50=us["peer_reset"],
        reset_speedup=_ratio(us["peer_reset"], us["reset"]),
        step_us_p50=us["step"],
        step_read_us_p50=us["read"],
        step_write_us_p50=us["write"],
        peer_step_us_p50=us["peer_step"],
        step_speedup=_ratio(us["peer_step"], us["step"], 2),
        reward_us_p50=us["reward"],
        peer_reward_us_p50=us["peer_reward"],
        reward_speedup=_ratio(us["peer_reward"], us["reward"]),
        peer_hash_us_p50=us["peer_hash"],
        reward_vs_hash_speedup=_ratio(us["peer_hash"], us["reward"]),
        replay_us_p50=replay_us,
        peer_replay_us_p50=peer_replay_us,
        replay_speedup=_ratio(peer_replay_us, replay_us),
        replay_total_ms=round(total * 1e3, 2),
        peer_replay_total_ms=round(peer_total * 1e3, 2),
        replay_total_speedup=_ratio(peer_total, total),
        rewards_agree=agree,
    )
