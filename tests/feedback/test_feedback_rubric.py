"""Rubric composition laws, and a domain's rubric overridden and extended in data."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from properties import budget
from pydantic import ValidationError

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.errors import DomainError
from envfactory.contract.verdict import combine
from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import builtin_domain_files, parse_domain
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import scripted
from envfactory.verify.rubric import (
    Criterion,
    Gate,
    Judgement,
    Min,
    Node,
    Product,
    Rubric,
    WeightedSum,
    flat,
)

scores = st.floats(0.0, 1.0, allow_nan=False)
weights = st.floats(0.0, 10.0, allow_nan=False)
# Weights a rubric author writes: zero or ordinary. Scaling a subnormal weight by c < 1 rounds it
# to zero, so the scaling law is only asked of these (a subnormal weight has its own test).
authored_weights = st.one_of(st.just(0.0), st.floats(1e-3, 10.0))


def const(name: str, score: float, weight: float = 1.0, kind: str = "score") -> Criterion[None]:
    return Criterion(name, lambda _: Judgement(score, f"{name} is {score}"), kind, weight)  # type: ignore[arg-type]


def value(node: Node[None]) -> float:
    scored = node.evaluate(None)
    assert scored is not None
    return scored.score


leaves = st.lists(st.tuples(scores, weights), min_size=1, max_size=6)


def named(pairs: list[tuple[float, float]], prefix: str = "c") -> list[Criterion[None]]:
    return [const(f"{prefix}{i}", s, w) for i, (s, w) in enumerate(pairs)]


@given(
    st.lists(st.tuples(scores, authored_weights), min_size=1, max_size=6), st.floats(0.01, 100.0)
)
def test_weighted_sum_is_a_normalised_mean(pairs: list[tuple[float, float]], c: float) -> None:
    total = sum(w for _, w in pairs)
    got = value(WeightedSum("w", named(pairs)))
    want = sum(s * (w / total) for s, w in pairs) if total else 0.0
    assert got == pytest.approx(want)
    scaled = value(WeightedSum("w", named([(s, w * c) for s, w in pairs])))
    assert scaled == pytest.approx(got)  # scaling every weight changes nothing
    counted = [s for s, w in pairs if w > 0]
    if counted:
        assert min(counted) - 1e-9 <= got <= max(counted) + 1e-9


def test_a_subnormal_weight_still_counts() -> None:
    """score * 5e-324 underflows to 0; the mean divides the weights by their total first."""
    assert value(WeightedSum("w", named([(0.5, 5e-324)]))) == 0.5
    assert value(WeightedSum("w", named([(0.5, 5e-324), (1.0, 5e-324)]))) == pytest.approx(0.75)


@given(leaves, st.randoms())
def test_composites_do_not_depend_on_order(pairs: list[tuple[float, float]], rnd: Any) -> None:
    kids = named(pairs)
    shuffled = list(kids)
    rnd.shuffle(shuffled)
    for op in (WeightedSum, Product, Min):
        assert value(op("x", shuffled)) == pytest.approx(value(op("x", kids)))


@given(scores, scores, scores)
def test_product_and_min_are_associative(a: float, b: float, c: float) -> None:
    x, y, z = const("a", a), const("b", b), const("c", c)
    for op in (Product, Min):
        left = value(op("l", [op("ab", [x, y]), z]))
        right = value(op("r", [x, op("bc", [y, z])]))
        assert left == pytest.approx(right)


@given(scores)
def test_identities_and_annihilators(a: float) -> None:
    x = const("a", a)
    assert value(Product("p", [x, const("one", 1.0)])) == pytest.approx(a)
    assert value(Product("p", [x, const("zero", 0.0)])) == 0.0
    assert value(Min("m", [x, const("one", 1.0)])) == pytest.approx(a)
    assert value(Min("m", [x, x])) == pytest.approx(a)  # idempotent
    assert value(WeightedSum("w", [x, const("off", 0.7, weight=0.0)])) == pytest.approx(a)


@given(leaves)
def test_min_below_mean_below_max(pairs: list[tuple[float, float]]) -> None:
    kids = named([(s, 1.0) for s, _ in pairs])
    assert value(Min("m", kids)) <= value(WeightedSum("w", kids)) + 1e-9
    assert value(Product("p", kids)) <= value(Min("m", kids)) + 1e-9


@given(scores, st.lists(st.booleans(), max_size=4))
def test_gate_passes_the_body_or_zeroes_it(body: float, gates: list[bool]) -> None:
    g = Gate(
        "g",
        [const(f"g{i}", float(ok), 0.0, "gate") for i, ok in enumerate(gates)],
        const("b", body),
    )
    assert value(g) == pytest.approx(body if all(gates) else 0.0)


@given(st.lists(st.tuples(scores, weights, st.sampled_from(["score", "gate"])), max_size=8))
@budget(200)
def test_flat_shape_is_what_combine_computes(items: list[tuple[float, float, str]]) -> None:
    """The verdict's classic reading of a flat item list holds for the default shape."""
    crit = [
        const(f"i{n}", s if k == "score" else float(s > 0.5), w, k)
        for n, (s, w, k) in enumerate(items)
    ]
    judged = Rubric(flat(crit)).judge(None)
    assert judged.reward == combine(judged.items)
    assert [i.name for i in judged.items] == [c.name for c in crit if c.kind == "score"] + [
        c.name for c in crit if c.kind == "gate"
    ]


def test_every_item_is_explained() -> None:
    r = Rubric(
        Gate(
            "reward",
            [const("safe", 1.0, 0.0, "gate")],
            Min("task", [const("a", 0.5), const("b", 0.25)]),
        )
    )
    judged = r.judge(None)
    assert judged.reward == 0.25
    assert [(i.name, i.score, i.reason) for i in judged.items] == [
        ("a", 0.5, "a is 0.5"),
        ("b", 0.25, "b is 0.25"),
        ("safe", 1.0, "safe is 1.0"),
    ]
    assert judged.tree.op == "gate" and judged.tree.children[0].op == "min"
    assert judged.tree.children[0].reason == "lowest: b"


def test_inapplicable_items_are_left_out_and_bad_scores_clamped() -> None:
    skip = Criterion("skip", lambda _: None)
    wild = Criterion("wild", lambda _: Judgement(7.0, "too high"))
    nan = Criterion("nan", lambda _: Judgement(math.nan, "not a number"))
    judged = Rubric(WeightedSum("w", [skip, wild, nan])).judge(None)
    assert [i.name for i in judged.items] == ["wild", "nan"]
    assert [i.score for i in judged.items] == [1.0, 0.0]
    with pytest.raises(ValueError, match="share a name"):
        Rubric(WeightedSum("w", [const("a", 1.0), const("a", 0.0)]))
    with pytest.raises(ValueError, match="no rubric item"):
        Rubric(WeightedSum("w", [const("a", 1.0)])).with_weights({"b": 1.0})


# -- a domain's rubric in data ---------------------------------------------------------------


def _retail(rubric: dict[str, Any]) -> DatabaseEnvironment:
    path = next(p for p in builtin_domain_files() if p.stem == "retail")
    data = yaml.safe_load(path.read_text())
    return DatabaseEnvironment(parse_domain({**data, "rubric": rubric}, str(path)))


@pytest.fixture(scope="module")
def padded_retail() -> DatabaseEnvironment:
    return _retail(
        {
            "weights": {"answer": 3.0},
            "items": [
                {
                    "name": "few_calls",
                    "kind": "gate",
                    "check": "calls <= gold_calls + 2",
                    "reason": "more than two calls beyond the plan",
                },
                {
                    "name": "tidy",
                    "kind": "score",
                    "weight": 1.0,
                    "check": "1 - failed / max(calls, 1)",
                },
            ],
        }
    )


def _answer_task(env: DatabaseEnvironment) -> Any:
    """A task that asks for changes and an answer, with nothing held back by the user."""
    return next(
        t
        for i in range(300)
        if (t := env.task("train", 3, i)).hidden.answers
        and t.hidden.target
        and not t.hidden.profile
    )


def test_domain_items_and_weights_apply(padded_retail: DatabaseEnvironment) -> None:
    env = padded_retail
    assert env.rubric.names == [
        "state",
        "answer",
        "tidy",
        "no_collateral",
        "rules",
        "asked_user",
        "write_budget",
        "few_calls",
    ]
    task = _answer_task(env)
    oracle = run_episode(env, task, scripted("oracle"))
    assert oracle.reward == 1.0
    assert oracle.item("answer").weight == 3.0 and oracle.item("few_calls").score == 1.0
    ep = env.episode()
    ep.reset(task)
    for step in task.hidden.gold_plan:
        ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
    for _ in range(3):
        ep.step(ToolCall(tool=task.hidden.gold_plan[0].tool, arguments={}))  # fails: no arguments
    ep.step(Message(content="Done."))
    v = ep.evaluate()
    assert v.item("few_calls").score == 0.0
    assert v.item("few_calls").reason == "more than two calls beyond the plan"
    assert v.reward == 0.0
    assert 0.0 < v.item("tidy").score < 1.0


def _gold_without_answer(env: DatabaseEnvironment, task: Any) -> Any:
    ep = env.episode()
    ep.reset(task)
    for step in task.hidden.gold_plan:
        ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
    ep.step(Message(content="Done."))  # the state is right, the answer is missing
    return ep.evaluate()


def test_min_combination_in_data() -> None:
    mean, low = _retail({}), _retail({"combine": "min"})
    task = _answer_task(mean)
    assert _gold_without_answer(mean, task).reward == 0.5  # partial credit by default
    v = _gold_without_answer(low, task)
    assert v.item("state").score == 1.0 and v.item("answer").score == 0.0
    assert v.reward == 0.0  # min: the weakest item decides


def test_default_rubric_unchanged_by_an_empty_section() -> None:
    plain = _retail({})
    task = _answer_task(plain)
    for name in ("oracle", "noop", "noisy-oracle"):
        a = run_episode(plain, task, scripted(name))
        b = run_episode(
            plain.__class__(plain.spec.model_copy(update={"rubric": None})), task, scripted(name)
        )
        assert a == b


@pytest.mark.parametrize(
    ("rubric", "error"),
    [
        ({"items": [{"name": "x", "check": "nonsense_fact > 1"}]}, "may read"),
        ({"items": [{"name": "x", "check": "__import__('os')"}]}, "may be called"),
    ],
)
def test_bad_items_are_clear_errors(rubric: dict[str, Any], error: str) -> None:
    with pytest.raises(DomainError, match=error):
        _retail(rubric)


@pytest.mark.parametrize(
    "rubric",
    [
        {"weights": {"no_collateral": 2.0}},  # a gate has no weight in a mean
        {"weights": {"state": -1.0}},
        {"items": [{"name": "state", "check": "True"}]},  # the verifier's own name
        {"items": [{"name": "a", "check": "True"}, {"name": "a", "check": "False"}]},
        {"combine": "median"},
    ],
)
def test_bad_sections_are_refused(rubric: dict[str, Any]) -> None:
    with pytest.raises((ValidationError, DomainError)):
        _retail(rubric)
