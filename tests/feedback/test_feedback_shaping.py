"""Progress shaping telescopes: any path between two states earns the same total."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import Task
from envfactory.credit import CreditConfig, assign, progress, replay_potentials, shaped
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.types import EngineConfig, TaskRef


@given(
    st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=30),
    st.floats(0.5, 1.0),
)
def test_shaping_telescopes(potentials: list[float], gamma: float) -> None:
    f = shaped(potentials, gamma)
    discounted = sum(gamma**t * x for t, x in enumerate(f))
    end = gamma ** len(f) * potentials[-1] - potentials[0]
    assert discounted == pytest.approx(end, abs=1e-9)
    assert sum(shaped(potentials)) == pytest.approx(potentials[-1] - potentials[0], abs=1e-9)


def _phone_task(env: Environment) -> Task:
    return next(
        t for i in range(300) if (t := env.task("train", 1, i)).hidden.goals == ["update_phone"]
    )


def _walk(env: Environment, task: Task, actions: list[ToolCall]) -> tuple[list[float], str]:
    """Φ after reset and after each action, and the final state hash."""
    ep = env.episode()
    ep.reset(task)
    phis = [progress(ep)]
    for a in actions:
        obs = ep.step(a)
        assert obs.kind == "tool_result", obs.content
        phis.append(progress(ep))
    end = ep.state_hash()
    ep.close()
    assert all(p is not None for p in phis)
    return [p for p in phis if p is not None], end


CUSTOMERS = [f"CUS-{i:05d}" for i in range(1, 9)]
detours = st.lists(
    st.tuples(
        st.sampled_from(CUSTOMERS),
        st.from_regex(r"555-[0-9]{3}-[0-9]{4}", fullmatch=True),
        st.booleans(),
    ),
    max_size=5,
)


@given(detours=detours)
@budget(25, fixtures=True)
def test_any_path_to_the_goal_earns_the_same(
    retail: Environment, detours: list[tuple[str, str, bool]]
) -> None:
    """Detours that write someone's phone (the target's too) and put it back, before or after
    the gold call, end in the gold state and earn exactly what the straight path earns."""
    task = _phone_task(retail)
    gold = [ToolCall(tool=s.tool, arguments=s.arguments) for s in task.hidden.gold_plan]
    target = task.hidden.target[0]
    straight, goal_hash = _walk(retail, task, gold)
    assert straight == [0.0, 1.0]
    base = retail.world.base.rows["customers"]
    path: list[ToolCall] = []
    after_gold: list[ToolCall] = []
    collateral = False
    for customer, phone, late in detours:
        now = target.after if customer == target.id and late else None
        original = (
            now
            or dict(
                zip(retail.world.base.tables["customers"].columns, base[customer], strict=False)
            )
        )["phone"]
        if phone == original:
            continue
        pair = [
            ToolCall(
                tool="update_customer_phone", arguments={"customer_id": customer, "phone": phone}
            ),
            ToolCall(
                tool="update_customer_phone", arguments={"customer_id": customer, "phone": original}
            ),
        ]
        (after_gold if late else path).extend(pair)
        collateral |= customer != target.id
    phis, end = _walk(retail, task, [*path, *gold, *after_gold])
    assert end == goal_hash
    assert sum(shaped(phis)) == pytest.approx(sum(shaped(straight)))
    if collateral:
        assert min(shaped(phis)) < 0.0  # a write nobody asked for costs until it is undone


def test_replay_of_engine_records(retail: Environment) -> None:
    """Potentials recomputed by replaying recorded episodes: the shaped step rewards of an
    episode add up to its final progress, 1 for every success of a task that changes state
    (an answer-only task has no target diff: its progress stays 0)."""
    engine = RolloutEngine(ScriptedPolicy("noisy-oracle"), config=EngineConfig(group_size=3))
    engine.run_sync(plan_tasks(["retail"], 4, difficulties=[2, 3]))
    records = engine.records
    for rec in records:
        phis = replay_potentials(retail, rec)
        assert phis is not None and phis[0] == 0.0
    out = assign(records, CreditConfig(shaping=True, step="gigpo"))
    assert out.replay_failed == 0
    for rec in out.records:
        total = sum(s.reward or 0.0 for s in rec.steps)
        assert total == pytest.approx(rec.metrics["progress"])
        assert rec.step_rewards == [s.reward for s in rec.steps]
        ref = TaskRef.parse(rec.task_id)
        changes_state = bool(retail.task(ref.split, ref.difficulty, ref.index).hidden.target)
        if rec.reward == 1.0:
            assert rec.metrics["progress"] == pytest.approx(1.0 if changes_state else 0.0)


def test_a_replay_that_diverges_is_refused(retail: Environment) -> None:
    engine = RolloutEngine(ScriptedPolicy("oracle"))
    engine.run_sync(plan_tasks(["retail"], 1, difficulties=[1]))
    rec = engine.records[0].model_copy(deep=True)
    rec.steps[-1].state_hash = "0" * 32
    assert replay_potentials(retail, rec) is None
    assert assign([rec], CreditConfig(shaping=True)).replay_failed == 1
