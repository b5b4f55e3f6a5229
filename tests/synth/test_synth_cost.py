"""What the audit of a synthesised world keeps instead of working out again (issue 44): each
kept thing must follow the world it was made for, and give what a fresh computation gives."""

from __future__ import annotations

import datetime as dt
import json
import random
from hashlib import blake2b
from itertools import islice

import pytest

from envfactory.contract.tasks import TargetChange
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.tasks import _Instance, _Reject, _states_an_answer, fingerprint
from envfactory.domain.expr import ExprError
from envfactory.domain.loader import parse_domain
from envfactory.policies.exploits import FuzzArguments, Knowledge, batches, candidates, interleave
from envfactory.quality.search.counterfactual import _Candidates
from envfactory.quality.search.leaks import generic_calls
from envfactory.quality.search.sample import draw, stream
from envfactory.quality.search.sweep import SingleWriteSweep
from envfactory.quality.stats import binomial_tail, upper_bound
from envfactory.registry import make
from envfactory.synth.compose import synthesize
from envfactory.synth.environment import SynthEnvironment
from envfactory.verify.spoken import stated_in


def _world(index: int) -> SynthEnvironment:
    made = synthesize(index, 0)
    return SynthEnvironment(parse_domain(made.domain, made.domain["id"]), seed=0)


@pytest.fixture(scope="module")
def worlds() -> tuple[SynthEnvironment, SynthEnvironment]:
    return _world(0), _world(1)


def test_tool_schemas_are_the_worlds_and_a_caller_cannot_spoil_them(
    worlds: tuple[SynthEnvironment, SynthEnvironment],
) -> None:
    env = worlds[0]
    for fmt in ("openai", "mcp"):
        fresh = DatabaseEnvironment.tools(env, fmt)
        got = env.tools(fmt)
        assert got == fresh and got is not env.tools(fmt)
        got.clear()  # a caller's own list
        assert env.tools(fmt) == fresh
    assert env.tools("mcp") != env.tools("openai")


def test_kept_reads_and_attacks_follow_the_world(
    worlds: tuple[SynthEnvironment, SynthEnvironment],
) -> None:
    a, b, c = *worlds, make("library")  # the library world has generic reads; these none
    assert a.tools("openai") != b.tools("openai") and generic_calls(c)
    search, fuzz = SingleWriteSweep(), FuzzArguments(per_episode=10_000)
    for env in (a, c, b, a):
        assert search.read_calls(env) == generic_calls(env)
        fuzz.offset = 0
        fuzz.start(env.task("train", 1, 0), env.tools("openai"))
        every = [x.model_dump() for x in FuzzArguments.attacks(env.tools("openai"))]
        assert [x.model_dump() for x in fuzz.queue[: len(every)]] == every


def test_batches_with_a_limit_are_the_first_batches() -> None:
    rng = random.Random(7)
    k = Knowledge(None, [])
    k.ids, k.strings = ["ORD-00017", "ORD-00018"], ["Blue", "Lisa Park", "x-12-y"]
    items = interleave(candidates(k))
    for _ in range(40):
        sample = rng.sample(items, rng.randint(0, len(items)))
        chars, numbers = rng.choice([40, 300, 1900, 12_000]), rng.choice([0, 1, 12, 10_000])
        full = batches(sample, chars=chars, numbers=numbers)
        for limit in range(4):
            assert batches(sample, chars=chars, numbers=numbers, limit=limit) == full[:limit]


def test_candidate_siblings_are_the_cells_draw(
    worlds: tuple[SynthEnvironment, SynthEnvironment],
) -> None:
    env = worlds[0]
    cell = ("test", 2)
    drawn = draw(env, 12, splits=[cell[0]], difficulties=[cell[1]])
    lazy = _Candidates(env, cell, 12)
    assert [t.task_id for t in islice(lazy, 3)] == [t.task_id for t in drawn[:3]]
    assert [t.task_id for t in lazy] == [t.task_id for t in drawn]  # again, from the start
    assert [t.task_id for t in islice(stream(env), 30)] == [t.task_id for t in draw(env, 30)]


def test_upper_bound_is_the_same_when_asked_again() -> None:
    for values in ([0.0] * 60, [0.0] * 59 + [1.0], [0.5] * 10, [1.0] * 5, []):
        first = upper_bound(values)
        assert upper_bound(list(values)) == first
        if values and sum(values) < len(values):
            # the bound is where seeing the sum or less is as rare as 5%
            assert 1.0 - binomial_tail(sum(values) + 1, len(values), first) <= 0.05 + 1e-3


def test_fingerprint_is_the_hash_of_its_parts_sorted_as_json() -> None:
    rng = random.Random(3)
    for _ in range(30):
        target = [
            TargetChange(
                table=rng.choice(["orders", "items"]),
                id=f"ORD-{rng.randint(1, 9)}",
                before=rng.choice([None, {"id": "x", "qty": rng.randint(0, 3), "p": 1.5}]),
                after=rng.choice([None, {"id": "x", "note": 'é, "q"', "d": dt.date(2026, 1, 2)}]),
            )
            for _ in range(rng.randint(0, 4))
        ]
        questions = [["goal", "ORD-1", rng.choice([3, 2.5, "Yes", None])]] * rng.randint(0, 2)
        parts = [
            [c.table, None, None, {k: v for k, v in c.after.items() if k != "id"}]
            if c.before is None and c.after is not None
            else [c.table, c.id, c.before, c.after]
            for c in target
        ]
        parts.sort(key=lambda p: json.dumps(p, sort_keys=True, default=str))
        text = json.dumps([parts, questions], sort_keys=True, default=str)
        assert fingerprint(target, questions) == blake2b(text.encode(), digest_size=12).hexdigest()


def test_a_new_sub_goal_is_checked_against_every_request_and_answer(
    worlds: tuple[SynthEnvironment, SynthEnvironment],
) -> None:
    goal = worlds[0].factory.goals[0]
    rng = random.Random(5)
    texts = ["Refund 6 items.", "Is it open?", "Move it to March 3.", "How many are left?"]
    for _ in range(200):
        made = [
            _Instance(goal, [], rng.choice(texts), {}, answer=rng.choice([None, 6, "yes", 3]))
            for _ in range(rng.randint(1, 4))
        ]
        *chosen, new = made
        if any(stated_in(c.text, a.answer) for c in chosen for a in chosen if a.answer is not None):
            continue  # chosen sub-goals never state an answer: each was checked when added
        every = any(stated_in(c.text, a.answer) for c in made for a in made if a.answer is not None)
        assert _states_an_answer(chosen, new) == every


def test_bindings_that_draw_nothing_ignore_the_rng(
    worlds: tuple[SynthEnvironment, SynthEnvironment],
) -> None:
    factory = worlds[0].factory
    undrawn = [g for g in factory.goals if not g.draws]
    assert undrawn and any(g.draws for g in factory.goals)
    for goal in undrawn:
        rows = factory.world.base.rows[goal.spec.anchor.entity]
        table = factory.world.tables[goal.spec.anchor.entity]
        for values in list(rows.values())[:5]:
            row = table.to_row(values)
            try:
                first = factory._bind(goal, row, random.Random(0))
            except (_Reject, ExprError):
                continue
            assert factory._bind(goal, row, random.Random(99)) == first
