"""The verifier rewards what was asked and nothing else."""

from __future__ import annotations

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.tasks import TargetChange, Task
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.verify.matching import match_state


def _task(env: Environment, goal: str, difficulty: int = 1) -> Task:
    for split in ("train", "validation", "test"):
        for i in range(200):
            t = env.task(split, difficulty, i)  # type: ignore[arg-type]
            if t.hidden.goals == [goal]:
                return t
    raise AssertionError(f"no task of goal {goal}")


def _play(env: Environment, task: Task, calls: list[tuple[str, dict[str, object]]], reply: str):  # type: ignore[no-untyped-def]
    ep = env.episode()
    ep.reset(task)
    for tool, args in calls:
        ep.step(ToolCall(tool=tool, arguments=args))
    ep.step(Message(content=reply))
    return ep.evaluate()


def _gold(task: Task) -> list[tuple[str, dict[str, object]]]:
    return [(s.tool, dict(s.arguments)) for s in task.hidden.gold_plan]


def test_gold_plan_scores_one(retail: Environment) -> None:
    task = _task(retail, "cancel_order")
    assert _play(retail, task, _gold(task), "Done.").reward == 1.0


def test_collateral_write_zeroes_reward(retail: Environment) -> None:
    task = _task(retail, "update_phone")
    calls = _gold(task)
    other = "CUS-00001" if calls[0][1]["customer_id"] != "CUS-00001" else "CUS-00002"
    calls.append(("update_customer_phone", {"customer_id": other, "phone": "555-111-2222"}))
    v = _play(retail, task, calls, "Done.")
    assert v.reward == 0.0
    assert v.item("no_collateral").score == 0.0
    assert v.item("state").score == 1.0


def test_rule_checked_by_verifier(retail: Environment) -> None:
    """Cancelling without looking the order up first breaks look_before_cancel."""
    task = _task(retail, "cancel_order")
    calls = [c for c in _gold(task) if c[0] == "cancel_order"]
    v = _play(retail, task, calls, "Done.")
    assert v.item("state").score == 1.0
    assert v.item("rules").score == 0.0
    assert v.reward == 0.0


def test_partial_credit_for_wide_tasks(retail: Environment) -> None:
    task = next(
        t
        for i in range(50)
        if len((t := retail.task("train", 5, i)).hidden.goals) == 3
        and not t.hidden.answers
        and not t.hidden.asks
        and not t.hidden.profile
    )
    writes = [c for c in _gold(task) if c[0] in retail.world.write_tools]
    first_goal_steps = _gold(task)[: _gold(task).index(writes[0]) + 1]
    v = _play(retail, task, first_goal_steps, "Done.")
    assert 0.0 < v.reward < 1.0  # type: ignore[operator]


def test_inserted_rows_match_in_any_order(retail: Environment) -> None:
    """Two new orders placed in the other order get swapped ids; the match does not care."""
    world = retail.world
    probe = world.new_store()
    method = probe.rows("payment_methods", {"customer_id": "CUS-00001"})[0]["id"]
    stocked = [p["id"] for p in probe.rows("products") if p["stock"] >= 1][:2]
    orders = [
        {"customer_id": "CUS-00001", "product_id": p, "quantity": 1, "payment_method_id": method}
        for p in stocked
    ]
    first, second = world.new_store(), world.new_store()
    for args in orders:
        assert world.tools["place_order"](first, args).ok
    for args in reversed(orders):
        assert world.tools["place_order"](second, args).ok
    target = [
        TargetChange(table=c.table, id=c.key, before=c.before, after=c.after)
        for c in first.changes()
    ]
    new_item = next(c.key for c in first.changes() if c.table == "order_items")
    assert first.get("order_items", new_item) != second.get("order_items", new_item)
    matched, missing, collateral = match_state(target, second.changes())
    assert matched == len(target) == 6
    assert not missing and not collateral


def _orders(gold: list[tuple[str, dict[str, object]]]) -> list[int]:
    return [i for i, (tool, _) in enumerate(gold) if tool == "place_order"]


def test_reorders_with_products_swapped_between_customers_fail(retail: Environment) -> None:
    """Found by a hypothesis hunt: the noisy oracle reordered shoes for one customer and trail
    mix for the other, the other way round from the task. Every new row had a twin in the target
    (an order per customer, an item per product) and the match once said 6 of 6. (The task is
    looked up, not pinned: held-out splits made validation/4/35 another task.)"""
    task, gold, orders = next(
        (t, gold, orders)
        for i in range(300)
        if len(orders := _orders(gold := _gold(t := retail.task("train", 4, i)))) == 2
        and not t.hidden.answers
        and not t.hidden.asks
        and gold[orders[0]][1]["product_id"] != gold[orders[1]][1]["product_id"]
    )
    first, second = (gold[i][1] for i in orders)
    first["product_id"], second["product_id"] = second["product_id"], first["product_id"]
    v = _play(retail, task, gold, "Done.")
    assert v.item("state").score < 1.0 and v.reward == 0.0
    assert _play(retail, task, _gold(task), "Done.").reward == 1.0


def test_write_spam_fails(retail: Environment) -> None:
    task = _task(retail, "update_phone")
    calls = _gold(task)
    phone_call = calls[-1]
    calls += [phone_call] * 12
    v = _play(retail, task, calls, "Done.")
    assert v.item("write_budget").score == 0.0
    assert v.reward == 0.0


def test_answers_must_be_given_and_not_spread(retail: Environment) -> None:
    task = _task(retail, "order_total")
    answer = task.hidden.answers[0]
    good = _play(retail, task, _gold(task), f"The total is ${answer:.2f}.")
    assert good.reward == 1.0
    wrong = _play(retail, task, _gold(task), f"The total is ${answer + 1:.2f}.")
    assert wrong.reward == 0.0
    spread = " ".join(f"{answer + k / 100:.2f}" for k in range(-10, 11))
    assert _play(retail, task, _gold(task), spread).reward == 0.0
    silent = _play(retail, task, _gold(task), "Done.")
    assert silent.reward == 0.0


def test_claiming_success_without_acting_fails(retail: Environment) -> None:
    task = _task(retail, "cancel_order")
    v = _play(retail, task, [], "I have cancelled your order. Done!")
    assert v.reward == 0.0
    assert v.item("state").score == 0.0
