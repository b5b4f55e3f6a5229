"""The expression language evaluates data safely and refuses everything else."""

from __future__ import annotations

import pytest

from envfactory.contract.errors import DomainError
from envfactory.domain.expr import ExprError, RowFilter, Template, Value, compile_expr


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
    with pytest.raises(DomainError):
        RowFilter(source)


def test_values_and_templates() -> None:
    assert Value("cancelled")({}) == "cancelled"
    assert Value("=reason")({"reason": "late"}) == "late"
    t = Template("Cancel {ref:anchor} for {money(total)} {{ok}}")
    assert t.refs == ["anchor"]
    assert t.render({"total": 3}, refs=lambda name: f"<{name}>") == "Cancel <anchor> for 3.00 {ok}"
    with pytest.raises(DomainError):
        Template("unclosed {hole")


ROWS = [{"id": i, "section_id": i % 4, "status": ["dropped", "enrolled"][i % 2]} for i in range(12)]
FOUND = [{"id": 1}, {"id": 3}]


@pytest.mark.parametrize(
    "source",
    [
        "row.section_id in pluck(found, 'id') and row.status in ['enrolled', 'waitlisted']",
        "row.id != anchor.id and len(pluck(found, 'id')) > row.section_id",
        "any(f.id == row.section_id for f in found if f.id < len(pluck(found, 'id')) + 2)",
        "anchor.id > 100",
        "row.id % 3 == 0 or max(pluck(found, 'id')) == row.section_id",
    ],
)
@pytest.mark.parametrize("limit", [1, 2, 50])
def test_a_row_filter_passes_the_rows_the_expression_passes_one_by_one(
    source: str, limit: int
) -> None:
    scope = {"found": FOUND, "anchor": {"id": 5}}
    one_by_one = [r for r in ROWS if compile_expr(source)({**scope, "row": r})][:limit]
    assert RowFilter(source).select(ROWS, scope, limit) == one_by_one


class _Counted(list):  # type: ignore[type-arg]
    """A list that counts how often it is read through."""

    reads = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().__iter__()


def test_a_call_that_reads_no_row_runs_once_per_query_and_only_when_reached() -> None:
    found = _Counted(FOUND)
    rule = RowFilter("row.status == 'enrolled' and row.section_id in pluck(found, 'id')")
    assert [r["id"] for r in rule.select(ROWS, {"found": found}, 50)] == [1, 3, 5, 7, 9, 11]
    assert found.reads == 1
    assert rule.select([r for r in ROWS if r["status"] == "dropped"], {"found": found}, 50) == []
    assert found.reads == 1  # no row got as far as the call
    careful = RowFilter("x is None or row.id in pluck(x, 'id')")
    assert careful.select(ROWS, {"x": None}, 2) == ROWS[:2]  # never reached, so never fails
    with pytest.raises(ExprError, match="TypeError"):
        RowFilter("row.id in pluck(x, 'id')").select(ROWS, {"x": None}, 2)
