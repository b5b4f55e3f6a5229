"""The template searches and the counterfactual replay: each catches its planted defect (a
cancel that ignores which order it is given) and finds nothing in the sound world."""

from __future__ import annotations

from pathlib import Path

from mutants import mutant, tasks_of

import envfactory
from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Task
from envfactory.quality import planted
from envfactory.quality.adversary import CAP, FIRST, attack
from envfactory.quality.mutants import catalogue
from envfactory.quality.search import searches
from envfactory.quality.search.blind import InstructionBlind
from envfactory.quality.search.collateral import Collateral
from envfactory.quality.search.counterfactual import Counterfactual
from envfactory.quality.search.leaks import generic_calls
from envfactory.quality.search.sample import draw
from envfactory.quality.search.sweep import SingleWriteSweep

PRIOR = "prior_call: {tool: cancel_order, needs: get_order, match: {order_id: order_id}}"
CANCEL = (
    """    load: {order: "orders[order_id]"}
    require:
      - check: "order.status in ['pending', 'processing']"
        error: "Order {order.id} is {order.status}; only pending or processing orders """
    """can be cancelled."
        rule: open_orders_only
    effects:
      - update: order
        set: {status: cancelled, cancel_reason: "=reason"}"""
)
ANY_ROW = """    load:
      open: {rows: orders, where: {status: pending}, limit: 1}
      order: "orders[open[0].id]"
    effects:
      - update: order
        set: {status: cancelled}"""
LISTING = """  - name: list_pending_orders
    kind: read
    description: List the pending orders.
    load:
      found: {rows: orders, where: {status: pending}, limit: 20}
    returns: "=found"

  - name: get_order
"""


def _any_row(tmp_path: Path, listing: bool = False) -> Environment:
    """Retail whose cancel_order cancels the first pending order, whichever it is given (and
    no rule asks for a look-up first); with ``listing``, a read that lists pending orders."""
    more = [("  - name: get_order\n", LISTING)] if listing else []
    return mutant(tmp_path, "retail", CANCEL, ANY_ROW, (PRIOR, ""), *more)


def _cancels(env: Environment, n: int = 8) -> list[Task]:
    """Cancel tasks of the planted world: train ones, as the one order every cancel changes
    is a train row (a task may change only rows of its own split)."""
    return [t for t in env.tasks("train", 1, 40) if t.hidden.goals == ["cancel_order"]][:n]


def _listing(tmp_path: Path) -> Environment:
    """Sound retail, but for a read that lists pending orders."""
    return mutant(tmp_path, "retail", "  - name: get_order\n", LISTING)


def test_the_sweep_finds_a_write_that_ignores_its_row(tmp_path: Path) -> None:
    env = _any_row(tmp_path)
    tasks = _cancels(env)
    sweep = SingleWriteSweep()
    assert sweep.rewards(env, tasks) == [1.0] * len(tasks)
    chosen = sweep.template(tasks[0])
    assert chosen is not None and chosen.write == "cancel_order" and chosen.read is None
    assert sweep.voided == []


def test_the_sweep_gives_a_write_the_amount_the_request_states() -> None:
    """A top-up that tops up the line out of data whichever line it is called on: the sweep
    calls it on a row it did not look for, with the gigabytes the request asks for (2-20: a
    blind 1, 2 or 3 missed most of them), and earns on every task."""
    (topup,) = [m for m in catalogue() if m.name == "write-any-row-topup"]
    with topup.planted() as env:
        tasks = [t for t in env.tasks("test", 2, 80) if t.hidden.goals == ["data_used_up"]][:6]
        assert len(tasks) >= 3
        sweep = SingleWriteSweep()
        assert sweep.rewards(env, tasks) == [1.0] * len(tasks)
        chosen = sweep.template(tasks[0])
        assert chosen is not None and chosen.write == "add_data_topup"
    sound = envfactory.make("helpdesk")
    same = [t for t in sound.tasks("test", 2, 80) if t.hidden.goals == ["data_used_up"]][:6]
    assert SingleWriteSweep().rewards(sound, same) == [0.0] * len(same)


def test_the_sweep_finds_nothing_in_the_sound_world() -> None:
    env = envfactory.make("retail")
    tasks = tasks_of(env, "cancel_order") + tasks_of(env, "update_phone")
    assert SingleWriteSweep().rewards(env, tasks) == [0.0] * len(tasks)


def test_the_blind_search_needs_a_generic_read() -> None:
    assert not InstructionBlind().applies(envfactory.make("retail"))  # every read asks a value


def test_blind_plans_find_a_write_that_ignores_its_row(tmp_path: Path) -> None:
    env = _any_row(tmp_path, listing=True)
    tasks = _cancels(env)
    blind = InstructionBlind()
    assert blind.rewards(env, tasks) == [1.0] * len(tasks)
    chosen = blind.template(tasks[0])
    assert chosen is not None and chosen.read is not None and chosen.write == "cancel_order"


def test_blind_plans_find_nothing_where_the_listing_does_not_single_out_the_target(
    tmp_path: Path,
) -> None:
    env = _listing(tmp_path)
    tasks = tasks_of(env, "cancel_order") + tasks_of(env, "order_total")
    assert InstructionBlind().rewards(env, tasks) == [0.0] * len(tasks)


def test_a_plan_replayed_on_a_sibling_pays_only_where_the_row_does_not_matter(
    tmp_path: Path,
) -> None:
    sound = envfactory.make("retail")
    tasks = tasks_of(sound, "cancel_order") + tasks_of(sound, "order_total")
    assert Counterfactual().rewards(sound, tasks) == [0.0] * len(tasks)
    broken = _any_row(tmp_path)
    tasks = _cancels(broken)
    assert Counterfactual().rewards(broken, tasks) == [1.0] * len(tasks)


def test_draw_skips_the_tasks_it_is_told_to_and_respects_the_cells() -> None:
    env = envfactory.make("retail")
    first = draw(env, 5, splits=["test"], difficulties=[2])
    assert [t.task_id for t in first] == [f"retail/test/2/{i}" for i in range(5)]
    more = draw(env, 5, {t.task_id for t in first}, splits=["test"], difficulties=[2])
    assert [t.task_id for t in more] == [f"retail/test/2/{i}" for i in range(5, 10)]


def test_the_registry_holds_every_search_that_applies() -> None:
    names = {s.name for s in searches(envfactory.make("retail"))}
    assert {"write_sweep", "counterfactual", "rule_skip", "prior_mode_train"} <= names
    assert "blind" not in names


def test_the_attack_refuses_the_planted_defect_and_attacks_more_tasks(tmp_path: Path) -> None:
    """The defect pays on the cancel tasks of one split only (a few percent of all tasks):
    the first 60 tasks show it, the attack goes on to the cap, and the sweep, which pays on
    every task with a cancel in it, is refused. The counterfactual pays only on the cancel
    tasks it finds a sibling for (about 2.5% of tasks, too near the 2% limit to refuse)."""
    env = _any_row(tmp_path)
    found = attack(env, _cancels(env, n=2), [])
    sweep, replayed = found.exploits["write_sweep"], found.exploits["counterfactual"]
    assert sweep.refused and sweep.episodes == CAP and sweep.p < 0.01
    assert sweep.mean < sweep.upper < 1.0
    assert replayed.max == 1.0 and replayed.episodes == CAP
    sound = [name for name, s in found.exploits.items() if s.max == 0]
    assert sound and all(found.exploits[n].episodes == FIRST for n in sound)  # no more tasks


def test_blind_plans_read_an_unmarked_no_argument_tool() -> None:
    """A debugging status tool left without a read-only hint is still read with no
    arguments: replying with what it shows pays where it shows the answer (issue 42,
    check-reachable), and a world without such a tool has no more reads."""
    check = next(m for m in catalogue() if m.name == "check-reachable-retail")
    with check.planted() as env:
        tasks = tasks_of(env, "order_total")
        blind = InstructionBlind()
        assert planted.STATUS_TOOL in [c.tool for c in blind.reads(env)]
        assert blind.rewards(env, tasks) == [1.0] * len(tasks)
    sound = envfactory.make("helpdesk")
    assert InstructionBlind().reads(sound) == generic_calls(sound)


def test_a_write_beside_the_target_pays_only_without_the_collateral_gate() -> None:
    """The gold plan plus the phone change repeated on a neighbouring customer: the planted
    verifier without ``no_collateral`` pays, sound retail does not."""
    sound = envfactory.make("retail")
    tasks = tasks_of(sound, "update_phone", n=4)
    assert Collateral().rewards(sound, tasks) == [0.0] * len(tasks)
    blind = next(m for m in catalogue() if m.name == "collateral-ignored-retail")
    with blind.planted() as env:
        assert Collateral().rewards(env, tasks_of(env, "update_phone", n=4)) == [1.0] * 4
