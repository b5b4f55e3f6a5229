"""The expression language evaluates data safely and refuses everything else."""

from __future__ import annotations

import pytest

from envfactory.domain.expr import Template, Value, compile_expr
from envfactory.errors import DomainError


def test_attribute_reads_dict_keys() -> None:
    assert compile_expr("order.status == 'pending'")({"order": {"status": "pending"}})
    assert compile_expr("money(a.price * 3)")({"a": {"price": 1.115}}) == 3.35


def test_comprehensions_see_the_scope() -> None:
    items = [{"q": 2, "p": 1.5}, {"q": 1, "p": 4.0}]
    assert compile_expr("sum(i.q * i.p for i in items)")({"items": items}) == 7.0
    assert compile_expr("[i.q for i in items if i.p > limit]")({"items": items, "limit": 2}) == [1]


def test_date_helpers() -> None:
    assert compile_expr("days_between('2026-05-01', today)")({"today": "2026-06-01"}) == 31
    assert compile_expr("add_days('2026-02-27', 3)")({}) == "2026-03-02"
    assert compile_expr("overlaps('2026-06-01', 3, '2026-06-03', 1)")({})
    assert not compile_expr("overlaps('2026-06-01', 2, '2026-06-03', 1)")({})


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os').system('true')",
        "().__class__.__bases__",
        "order._secret",
        "(lambda: 1)()",
        "open('/etc/passwd')",
        "eval('1')",
        "getattr(order, 'x')",
        "[x := 1]",
        "order.status.upper()",
        "f(x=1)",
    ],
)
def test_unsafe_expressions_are_refused(source: str) -> None:
    with pytest.raises(DomainError):
        compile_expr(source)


def test_values_and_templates() -> None:
    assert Value("cancelled")({}) == "cancelled"
    assert Value("=reason")({"reason": "late"}) == "late"
    t = Template("Cancel {ref:anchor} for {money(total)} {{ok}}")
    assert t.refs == ["anchor"]
    assert t.render({"total": 3}, refs=lambda name: f"<{name}>") == "Cancel <anchor> for 3.00 {ok}"
    with pytest.raises(DomainError):
        Template("unclosed {hole")
