"""The benchmark runs both approaches on the same tasks and agrees with itself (its numbers
are quoted from ``envfactory bench --tau2 --json`` in docs/benchmarks.md, not asserted)."""

from __future__ import annotations

from envfactory.peers.tau2.bench import Tau2Bench, bench_tau2
from envfactory.peers.tau2.environment import Tau2RetailEnvironment


def test_bench_measures_both_sides(tau2: Tau2RetailEnvironment) -> None:
    result = bench_tau2(tau2, n=3)
    assert isinstance(result, Tau2Bench)
    assert result.tasks == 3 and result.rows == tau2.world.row_count
    assert result.rewards_agree
    for side in ("", "peer_"):
        for what in ("reset", "step", "reward"):
            assert getattr(result, f"{side}{what}_us_p50") > 0
    assert result.reset_speedup == round(result.peer_reset_us_p50 / result.reset_us_p50, 1)
