"""Planted defects: built-in database worlds with one thing wrong, for the audit's self-test.

A mutant is a copy of a built-in domain with exactly one defect of a named class. Where the
defect is data (a tool's effect, a listing, a rule, a goal template, a field's values), the
mutant is a transform of the parsed domain file; where no data can express it (a user that
confirms answers, a verifier without a gate), it is a weakened world class of
:mod:`envfactory.quality.planted`. Each mutant names the exploit that shows its defect pays
(:mod:`envfactory.quality.mutant_exploits`) and the goal template that exploit attacks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, get_args

from envfactory.contract.environment import Environment
from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import BUILTIN_DIR, parse_domain, read_mapping
from envfactory.quality import mutant_exploits as ex
from envfactory.quality import planted
from envfactory.registry import build, register, unregister

DefectClass = Literal[
    "write_any_row",
    "read_lists_target",
    "rule_skippable",
    "answer_in_request",
    "skewed_answers",
    "check_reachable",
    "oracle_user",
    "voidable",
    "collateral_ignored",
    "replay_leak",
]
CLASSES: tuple[DefectClass, ...] = get_args(DefectClass)
Domain = dict[str, Any]
Transform = Callable[[Domain], None]
WorldClass = type[DatabaseEnvironment]


@dataclass(frozen=True)
class Mutant:
    """One planted defect: ``base``'s domain changed by ``transform`` and built as ``world``."""

    name: str
    defect: DefectClass
    base: str
    what: str
    exploit: ex.Exploit
    transform: Transform | None = None
    world: WorldClass = DatabaseEnvironment

    @property
    def env_id(self) -> str:
        return f"mutant-{self.name}"

    @contextmanager
    def planted(self) -> Iterator[Environment]:
        """The mutant world, registered under :attr:`env_id` while in use (the audit rebuilds
        worlds by id to check they are deterministic), then forgotten."""
        try:
            yield self._make()
        finally:
            unregister(self.env_id)

    def _make(self) -> Environment:
        data = base_domain(self.base)
        if self.transform is not None:
            self.transform(data)
        data["id"] = self.env_id
        spec = parse_domain(data, f"{self.base}.yaml ({self.name})", beside=BUILTIN_DIR)
        world = self.world

        def factory(seed: int = 0, scale: float = 1.0) -> Environment:
            return world(spec, seed=seed, scale=scale)

        register(self.env_id, factory, overwrite=True)
        return build(self.env_id)


def base_domain(name: str) -> Domain:
    """A fresh copy of built-in domain ``name``'s parsed file."""
    return copy.deepcopy(_parsed(name))


@cache
def _parsed(name: str) -> Domain:
    return read_mapping(BUILTIN_DIR / f"{name}.yaml")


def action(data: Domain, name: str) -> dict[str, Any]:
    """The tool ``name`` of a parsed domain."""
    return next(a for a in data["actions"] if a["name"] == name)


def goal(data: Domain, goal_id: str) -> dict[str, Any]:
    """The goal template ``goal_id`` of a parsed domain."""
    return next(g for g in data["goals"] if g["id"] == goal_id)


# -- data transforms -------------------------------------------------------------------------


def select_row_by(tool: str, var: str, table: str, condition: str) -> Transform:
    """The write ``tool`` acts on the first row of ``table`` meeting ``condition`` whatever
    its id argument names (the row its effect updates is bound as ``var``)."""

    def transform(data: Domain) -> None:
        load = action(data, tool)["load"]
        by_id = load.pop(var)
        load["picked"] = {"rows": table, "filter": condition, "limit": 1}
        entity, _, key = by_id.partition("[")
        load[var] = f"{entity}[picked[0].id if picked else {key}"

    return transform


def add_listing(name: str, table: str, condition: str) -> Transform:
    """A read tool ``name`` with no arguments listing the rows of ``table`` meeting
    ``condition``."""

    def transform(data: Domain) -> None:
        data["actions"].append(
            {
                "name": name,
                "kind": "read",
                "description": f"List {table} that look wrong.",
                "load": {"found": {"rows": table, "filter": condition, "limit": 5}},
                "returns": "=found",
            }
        )

    return transform


def drop_prior_call(rule_id: str) -> Transform:
    """Rule ``rule_id`` keeps its words, but nothing checks the look-up it demands."""

    def transform(data: Domain) -> None:
        next(r for r in data["rules"] if r["id"] == rule_id).pop("prior_call")

    return transform


def state_answer(goal_id: str, values: dict[str, str], sentence: str) -> Transform:
    """Goal ``goal_id``'s every phrasing ends with ``sentence``, which states its answer
    through the ``values`` (name: expression) it binds."""

    def transform(data: Domain) -> None:
        g = goal(data, goal_id)
        g.setdefault("let", {}).update({k: {"value": v} for k, v in values.items()})
        g["instruction"] = [f"{text} {sentence}" for text in g["instruction"]]

    return transform


def skew(changes: dict[str, dict[str, Any]]) -> Transform:
    """Entities' fields (and rows per parent) drawn from new generators, so that one value
    dominates an answer: ``{entity: {"fields": {...}, "per": {...}}}``, merged in."""

    def transform(data: Domain) -> None:
        for entity, parts in changes.items():
            for key, values in parts.items():
                data["entities"][entity][key].update(values)

    return transform


def crash_on_odd_input(tool: str, check: str) -> Transform:
    """The tool ``tool`` checks ``check`` first, an expression that fails on odd input."""

    def transform(data: Domain) -> None:
        action(data, tool).setdefault("require", []).insert(
            0, {"check": check, "error": "Bad input."}
        )

    return transform


ODD_APN = "row.apn in ['internet2', 'mms.meridian']"  # values no seeded line has
OUT_OF_DATA = "row.data_used_gb >= row.data_cap_gb"  # no seeded line is out of data
_MOSTLY_25 = {"type": "number", "choices": [25.0, 40.0, 12.5], "weights": [18, 1, 1]}
_MOSTLY_12 = {"type": "number", "choices": [12.0, 3.0, 7.5], "weights": [18, 1, 1]}
_HOTEL_COST = "money(anchor.total + sum(e.price for e in extras))"
CENTS = "{int(cost)} dollars and {int(round(cost * 100)) % 100} cents"
WORDS = "{int(left)} point {int(round(left * 10)) % 10}"  # 12.5 -> "12 point 5"


def catalogue() -> list[Mutant]:
    """Every planted defect, at least one per class, most classes on two base worlds."""
    return [
        Mutant(
            "write-any-row-apn",
            "write_any_row",
            "helpdesk",
            "reset_apn resets the first line with a broken APN, whichever line it is called on",
            ex.WrongRow("wrong_apn"),
            select_row_by("reset_apn", "line", "lines", ODD_APN),
        ),
        Mutant(
            "write-any-row-topup",
            "write_any_row",
            "helpdesk",
            "add_data_topup tops up the first line out of data, whichever line it is called on",
            ex.WrongRow("data_used_up"),
            select_row_by("add_data_topup", "line", "lines", OUT_OF_DATA),
        ),
        Mutant(
            "read-lists-target-apn",
            "read_lists_target",
            "helpdesk",
            "list_odd_apn_lines, with no arguments, lists the lines a task's setup broke",
            ex.Listed("wrong_apn", "list_odd_apn_lines"),
            add_listing("list_odd_apn_lines", "lines", ODD_APN),
        ),
        Mutant(
            "read-lists-target-data",
            "read_lists_target",
            "helpdesk",
            "list_lines_out_of_data, with no arguments, lists the lines a task emptied",
            ex.Listed("data_used_up", "list_lines_out_of_data"),
            add_listing("list_lines_out_of_data", "lines", OUT_OF_DATA),
        ),
        *(
            Mutant(
                f"rule-skippable-{base}",
                "rule_skippable",
                base,
                f"rule {rule} is stated but its look-up ({needs} before {tool}) is not checked",
                ex.SkipLookUp(goal_id, needs, tool),
                drop_prior_call(rule),
            )
            for base, rule, goal_id, needs, tool in (
                ("retail", "look_before_cancel", "cancel_order", "get_order", "cancel_order"),
                (
                    "hr",
                    "look_before_approving",
                    "approve_request",
                    "get_leave_request",
                    "approve_leave_request",
                ),
                (
                    "clinic",
                    "look_before_cancel",
                    "cancel_appointment",
                    "get_appointment",
                    "cancel_appointment",
                ),
            )
        ),
        Mutant(
            "answer-in-request-cents",
            "answer_in_request",
            "hotel",
            'stay_cost\'s request says the cost in words ("191 dollars and 76 cents")',
            ex.Stated("stay_cost"),
            state_answer("stay_cost", {"cost": _HOTEL_COST}, f"I was quoted {CENTS}."),
        ),
        Mutant(
            "answer-in-request-words",
            "answer_in_request",
            "helpdesk",
            'data_left\'s request says the answer in words ("12 point 5")',
            ex.Stated("data_left"),
            state_answer(
                "data_left",
                {"left": "round(anchor.data_cap_gb - anchor.data_used_gb, 1)"},
                f"The app shows {WORDS} GB, is that right?",
            ),
        ),
        Mutant(
            "answer-in-request-digits",
            "answer_in_request",
            "retail",
            "order_total's request quotes the total from the receipt",
            ex.Stated("order_total"),
            state_answer(
                "order_total",
                {"total": "money(sum(i.quantity * i.unit_price for i in items))"},
                "The receipt says {total}.",
            ),
        ),
        Mutant(
            "skewed-answers-retail",
            "skewed_answers",
            "retail",
            "nine orders in ten hold one item of one unit at one price: one order total dominates",
            ex.Mode("order_total"),
            skew(
                {
                    "products": {"fields": {"price": _MOSTLY_25}},
                    "order_items": {
                        "fields": {"quantity": {"type": "integer", "choices": [1]}},
                        "per": {"min": 1, "max": 1},
                    },
                }
            ),
        ),
        Mutant(
            "skewed-answers-hr",
            "skewed_answers",
            "hr",
            "nine leave balances in ten have 12 days remaining",
            ex.Mode("days_left"),
            skew({"leave_balances": {"fields": {"remaining": _MOSTLY_12}}}),
        ),
        *(
            Mutant(
                f"check-reachable-{base}",
                "check_reachable",
                base,
                f"a {planted.STATUS_TOOL} tool shows the task's expected answers and target rows",
                ex.Peek(goal_id),
                world=planted.CheckReachableWorld,
            )
            for base, goal_id in (("retail", "order_total"), ("clinic", "referral_expiry"))
        ),
        *(
            Mutant(
                f"oracle-user-{base}",
                "oracle_user",
                base,
                "the user ends the episode as soon as a message names the answer",
                ex.AskEach(goal_id),
                world=planted.OracleUserWorld,
            )
            for base, goal_id in (("airline", "trip_cost"), ("clinic", "referral_expiry"))
        ),
        Mutant(
            "voidable-episode",
            "voidable",
            "hotel",
            "a NUL byte or a non-finite number in any argument crashes the episode",
            ex.Policy("cancel_reservation", "fuzz"),
            world=planted.VoidableWorld,
        ),
        Mutant(
            "voidable-expression",
            "voidable",
            "retail",
            "update_customer_phone first divides by a length that odd input makes zero",
            ex.Policy("update_phone", "fuzz"),
            crash_on_odd_input("update_customer_phone", "1 / (len(phone) - 1) != 0"),
        ),
        *(
            Mutant(
                f"collateral-ignored-{base}",
                "collateral_ignored",
                base,
                "the verifier has no no_collateral gate",
                ex.Sweep(goal_id),
                world=planted.CollateralBlindWorld,
            )
            for base, goal_id in (("retail", "cancel_order"), ("hr", "withdraw_pending"))
        ),
        *(
            Mutant(
                f"replay-leak-{base}",
                "replay_leak",
                base,
                "held-out tasks are train tasks under another name",
                ex.Policy(goal_id, "replay"),
                world=planted.ReplayLeakWorld,
            )
            for base, goal_id in (("retail", "cancel_order"), ("hotel", "cancel_reservation"))
        ),
    ]


BASES = ("retail", "helpdesk", "hr", "clinic", "hotel", "airline")
"""The built-in worlds mutants are planted in: the self-test's controls."""
