"""GiGPO anchor groups, RewardFlow values and advantages against hand computation."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from envfactory.credit import (
    CreditConfig,
    StateGraph,
    Turn,
    assign,
    bfs_values,
    gigpo_step_advantages,
    ppr_values,
    returns,
)
from envfactory.trajectory.convert import to_sequence, to_steps
from envfactory.trajectory.record import EpisodeRecord

TASK = "handmade/train/1/0"  # the task of every hand-built record (see conftest)
S0 = "s0"
START = {TASK: S0}
Record = Callable[..., EpisodeRecord]


def test_returns_are_discounted_to_each_turn() -> None:
    turns = [Turn(0, k, "x", "y", r) for k, r in enumerate([0.0, 0.5, 0.0])]
    assert returns(turns, 1.0, gamma=0.5) == pytest.approx([0.25 + 0.25, 0.5 + 0.5, 1.0])


def test_gigpo_matches_hand_computation(record: Record) -> None:
    """Three rollouts of one task, sparse reward, γ = 0.5.

    ep0: s0 -read-> s0 -> s1 -> s2, reward 1 (returns 0.25, 0.5, 1)
    ep1: s0 -> s1 -> s3, reward 0
    ep2: s0 -read-> s0 -> s4, reward 0
    Anchor s0 holds ep0 t0, ep0 t1, ep1 t0, ep2 t0, ep2 t1: returns .25 .5 0 0 0, mean .15,
    std .2, so advantages .5 1.75 -.75 -.75 -.75. Anchor s1 holds ep0 t2 (1) and ep1 t1 (0):
    +1 and -1. Episode advantages (GRPO on 1, 0, 0): sqrt(2), -sqrt(2)/2, -sqrt(2)/2.
    """
    group = [
        record(0, [S0, "s1", "s2"], 1.0),
        record(1, ["s1", "s3"], 0.0),
        record(2, [S0, "s4"], 0.0),
    ]
    step = {
        (0, 0): 0.5, (0, 1): 1.75, (0, 2): 1.0,
        (1, 0): -0.75, (1, 1): -1.0,
        (2, 0): -0.75, (2, 1): -0.75,
    }  # fmt: skip
    episode = [math.sqrt(2), -math.sqrt(2) / 2, -math.sqrt(2) / 2]
    result = assign(group, CreditConfig(step="gigpo", gamma=0.5, omega=1.0), initial=START)
    for i, r in enumerate(result.records):
        assert r.advantage == pytest.approx(episode[i], abs=1e-4)
        for c in r.calls:
            assert c.advantage == pytest.approx(episode[i] + step[(i, c.index)], abs=1e-4)
    turns = [
        [Turn(0, 0, S0, S0), Turn(0, 1, S0, "s1"), Turn(0, 2, "s1", "s2")],
        [Turn(1, 0, S0, "s1"), Turn(1, 1, "s1", "s3")],
        [Turn(2, 0, S0, S0), Turn(2, 1, S0, "s4")],
    ]
    direct = gigpo_step_advantages(turns, [1.0, 0.0, 0.0], gamma=0.5)
    assert direct == pytest.approx(step, abs=1e-4)
    assert group[0].advantage is None  # the input records are left alone


def _graph() -> StateGraph:
    """a -> b -> c (reward 1), a -> d (reward 0), a -> b -> e (reward 0.5)."""
    t = Turn
    return StateGraph.build(
        [
            ([t(0, 0, "a", "b"), t(0, 1, "b", "c")], "c", 1.0),
            ([t(1, 0, "a", "d")], "d", 0.0),
            ([t(2, 0, "a", "b"), t(2, 1, "b", "e")], "e", 0.5),
        ]
    )


def test_rewardflow_bfs_matches_hand_computation() -> None:
    v = bfs_values(_graph(), gamma=0.9)
    assert v == pytest.approx({"a": 0.81, "b": 0.9, "c": 1.0, "d": 0.0, "e": 0.5})


def test_rewardflow_ppr_matches_hand_computation() -> None:
    """Reversed walk c->b, e->b, b->a (twice), d->a; restart at c (2/3) and e (1/3).
    With β = 1 - α: π_b = β(π_c + π_e), π_a = β π_b, π_c + π_e = α + β π_a (a is dangling),
    so π_c + π_e = α / (1 - β³), π_c = 2/3 of it, π_e = 1/3, π_d = 0. Scaled by π_b (the
    top) times the best reward 1: V(b) = 1, V(a) = β, V(c) = (2/3)/β, V(e) = (1/3)/β."""
    beta = 0.9
    v = ppr_values(_graph(), alpha=1 - beta)
    want = {"a": beta, "b": 1.0, "c": (2 / 3) / beta, "d": 0.0, "e": (1 / 3) / beta}
    assert v == pytest.approx(want, abs=1e-9)


def test_rewardflow_credit_in_records(record: Record) -> None:
    group = [
        record(0, ["b", "c"], 1.0),
        record(1, ["d"], 0.0),
        record(2, ["b", "e"], 0.5),
    ]
    cfg = CreditConfig(method="drgrpo", step="rewardflow", flow="bfs", flow_gamma=0.9)
    out = assign(group, cfg, initial={TASK: "a"}).records
    assert [s.value for s in out[0].steps] == pytest.approx([0.9, 1.0])
    assert [s.value for s in out[1].steps] == [0.0]
    mean = 0.5
    calls = [c.advantage for c in out[0].calls]  # episode advantage + V(after) - V(before)
    assert calls == pytest.approx([1.0 - mean + (0.9 - 0.81), 1.0 - mean + (1.0 - 0.9)])
    assert out[1].calls[0].advantage == pytest.approx(0.0 - mean + (0.0 - 0.81))


def test_a_loop_earns_nothing_under_rewardflow(record: Record) -> None:
    """Going b -> x -> b on the way adds the same value twice with opposite signs."""
    straight = record(0, ["b", "c"], 1.0)
    loop = record(1, ["b", "x", "b", "c"], 1.0)
    out = assign(
        [straight, loop], CreditConfig(method="drgrpo", step="rewardflow"), initial={TASK: "a"}
    )
    total = [sum(c.advantage or 0.0 for c in r.calls) for r in out.records]
    assert total[0] == pytest.approx(total[1])


def test_infrastructure_failures_never_enter_a_baseline(record: Record) -> None:
    clean = [record(0, ["s1"], 1.0), record(1, ["s2"], 0.0), record(3, ["s1"], 1.0)]
    faults = [
        record(2, ["s9"], None, status="infra_error"),
        record(4, ["s9"], None, status="env_error"),
        record(5, ["s9"], None, status="timeout"),
    ]
    for method in ("grpo", "drgrpo", "erpo", "atgrpo"):
        cfg = CreditConfig(method=method)  # type: ignore[arg-type]
        alone = {r.episode_id: r.advantage for r in assign(clean, cfg, initial=START).records}
        mixed = assign([*clean[:2], *faults, clean[2]], cfg, initial=START)
        got = {r.episode_id: r.advantage for r in mixed.records}
        for eid, a in alone.items():
            assert got[eid] == pytest.approx(a)
        assert all(got[f.episode_id] is None for f in faults)
        assert mixed.unscored == 3
    grpo = assign(clean, initial=START).records
    assert [r.advantage for r in grpo] == pytest.approx(
        [math.sqrt(2) / 2, -math.sqrt(2), math.sqrt(2) / 2], abs=1e-4
    )


def test_dr_grpo_and_per_environment_baselines(record: Record) -> None:
    a = [record(i, ["s"], r, group="g1", env_id="e1") for i, r in enumerate([1.0, 0.0, 0.0, 0.0])]
    b = [record(i, ["s"], r, group="g2", env_id="e1") for i, r in enumerate([1.0, 1.0, 1.0, 1.0])]
    dr = assign(a, CreditConfig(method="drgrpo"), initial=START).records
    assert [r.advantage for r in dr] == pytest.approx([0.75, -0.25, -0.25, -0.25])
    erpo = assign([*a, *b], CreditConfig(method="erpo"), initial=START).records
    # one baseline over the environment's 8 episodes: mean 5/8, std sqrt(15)/8
    sd = math.sqrt(15) / 8
    want = [(1 - 5 / 8) / sd] + [(0 - 5 / 8) / sd] * 3 + [(1 - 5 / 8) / sd] * 4
    assert [r.advantage for r in erpo] == pytest.approx(want, abs=1e-4)


def test_per_agent_per_turn_groups(record: Record) -> None:
    """Two agents alternate; each agent's k-th call is grouped with the others' k-th calls
    and judged on that agent's own reward."""
    actors = ["agent", "other", "agent", "other"]
    group = []
    for i, (mine, theirs) in enumerate([(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]):
        r = record(i, ["s"] * 4, mine, actors=actors)
        r.metrics["reward/other"] = theirs
        group.append(r)
    out = assign(group, CreditConfig(method="atgrpo"), initial=START).records
    up, down = math.sqrt(2) / 2, -math.sqrt(2)
    agent = [up, down, up]  # rewards 1, 0, 1
    other = [down, up, up]  # rewards 0, 1, 1
    for i, r in enumerate(out):
        got = [c.advantage for c in r.calls]
        assert got == pytest.approx([agent[i], other[i], agent[i], other[i]], abs=1e-4)
        assert r.advantage == pytest.approx(agent[i], abs=1e-4)
    short = record(3, ["s"], 1.0, actors=["agent"])  # reaches turn 0 only
    out = assign([*group, short], CreditConfig(method="atgrpo"), initial=START).records
    assert out[0].calls[2].advantage == pytest.approx(agent[0], abs=1e-4)  # turn 1: 3 members
    with pytest.raises(ValueError, match="atgrpo"):
        CreditConfig(method="atgrpo", step="gigpo")


def test_zero_variance_groups_are_filtered(record: Record) -> None:
    same = [record(i, ["s1"], 1.0, group="same") for i in range(3)]
    mixed = [record(i, ["s1"], float(i % 2), group="mixed") for i in range(3)]
    out = assign([*same, *mixed], CreditConfig(filter_zero_variance=True), initial=START)
    assert out.filtered == ["same"]
    assert {r.group_id for r in out.records} == {"mixed"}
    kept = assign([*same, *mixed], CreditConfig(), initial=START)
    assert len(kept.records) == 6 and all(r.advantage == 0.0 for r in kept.records[:3])


def test_converters_carry_advantages(record: Record) -> None:
    group = [record(0, [S0, "s1"], 1.0), record(1, [S0, "s2"], 0.0)]
    out = assign(group, CreditConfig(step="gigpo"), initial=START).records
    rec = out[0]
    steps = to_steps(rec)
    assert [s.step_advantage for s in steps] == [c.advantage for c in rec.calls]
    assert all(s.advantage == rec.advantage for s in steps)
    seq = to_sequence(rec)
    for row in seq.rows:
        assert row.advantages is not None and len(row.advantages) == len(row.input_ids)
        trained = [a for a, m in zip(row.advantages, row.loss_mask, strict=True) if m]
        assert trained and all(a != 0.0 for a in trained)
        assert all(a == 0.0 for a, m in zip(row.advantages, row.loss_mask, strict=True) if not m)
    tokens = {
        a for row in seq.rows for a, m in zip(row.advantages or [], row.loss_mask, strict=True) if m
    }
    assert tokens == {c.advantage for c in rec.calls}
    assert to_sequence(group[0]).rows[0].advantages is None  # nothing assigned, nothing claimed
