"""The world grammar: every candidate compiles and fills the ladder, the ladder climbs in
small steps, the structures vary, and every constraint kind is enforced by its tools (a call
that breaks it is refused with a structured error naming its rule)."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from functools import cache
from typing import Any

from envfactory.bench.ladder import plan_calls
from envfactory.contract.actions import ToolCall
from envfactory.domain.loader import parse_domain
from envfactory.quality.batch import empty_cell
from envfactory.synth.compose import Synthesised, synthesize
from envfactory.synth.environment import SynthEnvironment
from envfactory.synth.grammar.constraints import KINDS
from envfactory.synth.structure import structure

WORLDS = 40
TABLE_PARAM = re.compile(r"^(\w+)\[(\w+)\]$")


@cache
def made(index: int) -> Synthesised:
    return synthesize(index)


@cache
def world(index: int) -> SynthEnvironment:
    domain = made(index).domain
    return SynthEnvironment(parse_domain(domain, domain["id"]))


def test_every_candidate_compiles_and_almost_every_one_fills_the_ladder() -> None:
    full = 0
    for i in range(WORLDS):
        domain = made(i).domain
        levels = {g["level"] for g in domain["goals"]}
        assert {1, 2} <= levels, (i, levels)
        full += empty_cell(world(i)) is None if i < 8 else 0
    assert full >= 7  # of the first 8; the audit refuses the rest as no_tasks


def test_the_ladder_climbs_in_small_steps() -> None:
    """The engine's default ladder, as in the hand-written worlds: the starter's one call, then
    one sub-goal with its ids given (the write, and a look first where a rule asks for one),
    then one found by reference, and longer plans at every level above."""
    levels = plan_calls((world(i) for i in range(6)), tasks=5)
    means = [levels[d]["mean"] for d in sorted(levels)]
    assert means[0] == 1.0 and means[1] <= 1.5 and means[2] <= 3.0, means
    assert all(a < b for a, b in itertools.pairwise(means)), means
    assert "ladder" not in made(0).domain


def test_the_grammar_draws_many_shapes() -> None:
    tags = Counter(t for i in range(WORLDS) for t in made(i).patterns)
    lifecycles = {t for t in tags if t.startswith("lifecycle:")}
    sizes = {t for t in tags if re.fullmatch(r"graph:\d-tables", t)}
    assert len(lifecycles) >= 10 and len(sizes) >= 5, tags
    for production in ("one-to-many", "many-to-many", "optional-ref", "hierarchy"):
        assert tags[f"graph:{production}"] >= 2, production
    kinds = {t.removeprefix("constraint:") for t in tags if t.startswith("constraint:")}
    assert set(KINDS) <= kinds, set(KINDS) - kinds


def test_forty_worlds_are_forty_structures_with_names_words_and_numbers_stripped() -> None:
    """The issue's bar: at least 80% of 40 composed worlds structurally distinct (by
    :mod:`envfactory.synth.structure`, which ignores names, words and constants), and as many
    distinct behaviours (lifecycles, rules and plans alone)."""
    shapes = [structure(made(i).domain) for i in range(WORLDS)]
    assert len({s.digest for s in shapes}) >= 0.8 * WORLDS
    behaviours = {
        (s.components["lifecycles"], s.components["rules"], s.components["plans"]) for s in shapes
    }
    assert len(behaviours) >= 0.8 * WORLDS


def _tables(action: dict[str, Any]) -> dict[str, str]:
    """The table each id parameter of ``action`` names (from its loads, ``table[param]``)."""
    out = {}
    for load in action.get("load", {}).values():
        if isinstance(load, str) and (m := TABLE_PARAM.match(load)):
            out[m.group(2)] = m.group(1)
    return out


def _calls(
    env: SynthEnvironment, action: dict[str, Any], rng: random.Random
) -> list[dict[str, Any]]:
    """Calls of ``action`` over rows of its tables, small and large numbers, every enum's
    first value: many break some rule."""
    store = env.world.new_store()
    ids = {p: [r["id"] for r in store.rows(t)] for p, t in _tables(action).items()}
    store.close()
    out = []
    for _ in range(40):
        args: dict[str, Any] = {}
        for name, p in action["params"].items():
            if name in ids:
                args[name] = rng.choice(ids[name])
            elif p.get("enum"):
                args[name] = rng.choice(p["enum"])
            elif p.get("type") in ("number", "integer"):
                args[name] = rng.choice([1, 10**6])
            elif p.get("type") == "boolean":
                args[name] = False
            elif p.get("format") == "date":
                args[name] = "2026-07-01"
        out.append(args)
    return out


def _with_every_kind(first: int = 16, each: int = 3) -> list[int]:
    """Worlds 0 .. ``first - 1``, and the first ``each`` worlds with each constraint kind."""
    picked = set(range(first))
    for kind in KINDS:
        picked |= set([i for i in range(200) if f"constraint:{kind}" in made(i).patterns][:each])
    return sorted(picked)


def test_every_constraint_kind_refuses_a_call_that_breaks_it() -> None:
    refused: Counter[str] = Counter()
    rng = random.Random(0)
    for i in _with_every_kind():
        env, synthesised = world(i), made(i)
        task = env.task("train", 1, 0)
        episode = env.episode()
        for action in synthesised.domain["actions"]:
            rules = {c["rule"] for c in action.get("require", []) if c.get("rule")}
            if not rules:
                continue
            for args in _calls(env, action, rng):
                episode.reset(task)
                obs = episode.step(ToolCall(tool=action["name"], arguments=args))
                if obs.error is not None and obs.error.code == "rule_violation":
                    assert obs.error.rule in rules, (action["name"], obs.error)
                    refused[synthesised.rule_kinds[obs.error.rule]] += 1
        episode.close()
    enforced = set(KINDS) - {"look_first"}  # a rule on the call log, checked by the verifier
    missing = (enforced | {"conservation", "unique_pair", "lifecycle"}) - set(refused)
    assert not missing, (missing, refused)


def test_the_structure_of_a_world_is_not_its_names() -> None:
    """Two libraries (seeds) compose different worlds; within one, no two of the first 40
    share their whole set of tool names."""
    names = [frozenset(a["name"] for a in made(i).domain["actions"]) for i in range(WORLDS)]
    assert len(set(names)) == WORLDS
    assert all(made(i).domain != synthesize(i, seed=1).domain for i in range(5))


def _first_with(kind: str) -> tuple[SynthEnvironment, Synthesised]:
    i = next(i for i in range(100) if f"constraint:{kind}" in made(i).patterns)
    return world(i), made(i)


def _action(synthesised: Synthesised, has: str) -> dict[str, Any]:
    return next(a for a in synthesised.domain["actions"] if has in a.get("load", {}))


def test_a_budget_is_a_total_derived_from_the_live_children() -> None:
    """A new child is refused once the live children's amounts, its own included, would pass
    the parent's budget, and taken up to it; the question of what is left is answered with
    the budget less that total, read from the parent and its listing."""
    env, synthesised = _first_with("budget")
    add = _action(synthesised, "spent")
    (parent,) = [p for p in add["params"] if p.endswith("_id")]
    (amount,) = [p for p, spec in add["params"].items() if spec.get("type") == "number"]
    other = {p: spec["enum"][0] for p, spec in add["params"].items() if spec.get("enum")}
    owner_table = add["load"]["owner"].split("[")[0]
    child_table = add["load"]["spent"]["rows"]
    rule = next(c["rule"] for c in add["require"] if "budget" in c["check"])
    assert synthesised.rule_kinds[rule] == "budget"
    task = env.task("train", 1, 0)
    episode = env.episode()
    store = env.world.new_store()
    owners = store.rows(owner_table)
    live = add["load"]["spent"].get("filter", "").removeprefix("row.status in ")
    store.close()
    checked = 0
    for owner in owners:
        episode.reset(task)
        kids = [r for r in episode.store.rows(child_table) if r[parent] == owner["id"]]
        spent = sum(r[amount] for r in kids if not live or r["status"] in eval(live))
        left = round(owner["budget"] - spent, 2)
        if left < 2:
            continue
        over = episode.step(
            ToolCall(tool=add["name"], arguments={parent: owner["id"], amount: left + 1, **other})
        )
        if over.error is not None and over.error.rule == rule:
            fits = episode.step(
                ToolCall(tool=add["name"], arguments={parent: owner["id"], amount: left, **other})
            )
            assert fits.error is None or fits.error.rule != rule, fits.error
            checked += 1
    episode.close()
    assert checked >= 3
    asked = [
        t
        for d in env.difficulties
        for t in (env.task("train", d, k) for k in range(40))
        if any(g.endswith("_budget_left") for g in t.hidden.answer_goals)
    ]
    assert asked, "no task asks what is left of a budget"


def test_an_approval_chain_needs_two_people() -> None:
    """The move that checks a row records who checked it; the move after it is refused to the
    same person (a structured error naming the four-eyes rule) and taken from another whose
    limit covers the amount."""
    env, synthesised = _first_with("approval_chain")
    first, second = _action(synthesised, "checker"), _action(synthesised, "approver")
    rule = next(c["rule"] for c in second["require"] if "checked_by" in c["check"])
    assert synthesised.rule_kinds[rule] == "approval_chain"
    tables = {**_tables(first), **_tables(second)}
    staff_param = next(p for p in second["params"] if second["load"]["approver"].endswith(f"[{p}]"))
    row_param = next(p for p in first["params"] if first["load"]["got"].endswith(f"[{p}]"))
    amount = next(c["check"] for c in second["require"] if "approval_limit >=" in c["check"])
    amount = amount.rsplit("got.", 1)[1]
    enums = {p: spec["enum"][0] for a in (first, second) for p, spec in a["params"].items()
             if spec.get("enum")}  # fmt: skip
    task = env.task("train", 1, 0)
    episode = env.episode()
    episode.reset(task)
    staff = episode.store.rows(tables[staff_param])
    rows = episode.store.rows(tables[row_param])
    tried = 0
    for row in rows:
        able = [s["id"] for s in staff if s["approval_limit"] >= row[amount]]
        if len(able) < 2:
            continue
        episode.reset(task)

        def call(action: dict[str, Any], who: str, row: dict[str, Any] = row) -> Any:
            args = {row_param: row["id"], staff_param: who}
            args |= {p: v for p, v in enums.items() if p in action["params"]}
            return episode.step(ToolCall(tool=action["name"], arguments=args)).error

        if call(first, able[0]) is not None:
            continue  # another rule keeps this row from its first step
        same = call(second, able[0])
        assert same is not None, row["id"]
        if same.rule != rule:
            continue  # refused first by another of the move's rules
        assert call(second, able[1]) is None or call(second, able[1]).rule != rule
        tried += 1
    episode.close()
    assert tried >= 2, tried
