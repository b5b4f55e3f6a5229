"""The benchmark runs both approaches on the same tasks and agrees with itself (its numbers
are quoted from ``envfactory bench --tau2 --json`` in docs/benchmarks.md, not asserted: timing
is measured by the benchmark, never by a test)."""

from __future__ import annotations

from envfactory.peers.tau2.bench import Tau2Bench, bench_tau2
from envfactory.peers.tau2.environment import Tau2RetailEnvironment


def test_bench_measures_both_sides(tau2: Tau2RetailEnvironment) -> None:
    result = bench_tau2(tau2, n=3, passes=2)
    assert isinstance(result, Tau2Bench)
    assert result.tasks == 3 and result.rows == tau2.world.row_count and result.passes == 2
    assert result.calls == sum(len(m.actions) for m in tau2.cells["train"][:3])
    assert result.rewards_agree
    for side in ("", "peer_"):
        for what in ("reset", "step", "reward", "replay"):
            assert getattr(result, f"{side}{what}_us_p50") > 0
    assert result.step_read_us_p50 > 0 and result.replay_total_ms > 0
    assert result.reset_speedup == round(result.peer_reset_us_p50 / result.reset_us_p50, 1)
    assert result.replay_speedup == round(result.peer_replay_us_p50 / result.replay_us_p50, 1)
    # a whole replay (fresh episode, gold calls, verdict) costs the peer a deep copy and a
    # replay on another: far more than ours on any machine; the factor itself is benchmarked
    assert result.replay_speedup > 1 and result.replay_total_speedup > 1


def test_the_json_has_the_replay_keys() -> None:
    keys = set(Tau2Bench.model_fields)
    assert {"replay_speedup", "step_us_p50", "replay_us_p50", "peer_replay_us_p50"} <= keys
