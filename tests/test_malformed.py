"""Malformed actions become structured error observations, never exceptions, and change
nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.episode.types import ToolCall
from envfactory.world.environment import DatabaseEnvironment as Environment

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
nasty_strings = st.sampled_from(
    [
        "'; DROP TABLE orders; --",
        '" OR 1=1 --',
        "ORD-00001' OR '1'='1",
        "x" * 100_000,
        "\x00\x01",
        "{{ref:anchor}}",
        "=__import__('os')",
        "Robert'); DELETE FROM customers;--",
    ]
)


@budget(300, fixtures=True)
@given(
    tool=st.one_of(
        st.text(max_size=30),
        st.sampled_from(["get_order", "cancel_order", "place_order", "return_item"]),
    ),
    args=st.one_of(
        st.dictionaries(st.text(max_size=20), json_values | nasty_strings, max_size=5),
        st.text(max_size=200),
        nasty_strings,
    ),
)
def test_fuzzed_tool_calls_never_raise(retail: Environment, tool: str, args: Any) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    before = ep.state_hash()
    obs = ep.step(ToolCall(tool=tool, arguments=args))
    if obs.kind == "tool_error":
        assert obs.error is not None and obs.error.code
        assert ep.state_hash() == before
    assert not obs.done
    ep.close()


@budget(200, fixtures=True)
@given(raw=st.one_of(json_values, st.binary(max_size=64), nasty_strings))
def test_fuzzed_raw_actions_never_raise(retail: Environment, raw: Any) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    obs = ep.step(raw)
    assert obs.kind in ("tool_error", "tool_result", "end", "user")
    ep.close()


def test_each_kind_of_bad_argument_is_named(retail: Environment) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    cases = {
        "unknown_tool": ToolCall(tool="teleport", arguments={}),
        "missing": ToolCall(tool="cancel_order", arguments={"order_id": "ORD-00001"}),
        "extra": ToolCall(tool="get_order", arguments={"order_id": "ORD-00001", "x": 1}),
        "wrong_type": ToolCall(tool="get_order", arguments={"order_id": 12}),
        "enum": ToolCall(
            tool="cancel_order", arguments={"order_id": "ORD-00001", "reason": "bored"}
        ),
        "huge": ToolCall(tool="get_order", arguments={"order_id": "O" * 5000}),
        "sql": ToolCall(tool="get_order", arguments={"order_id": "x' OR '1'='1"}),
        "not_json": ToolCall(tool="get_order", arguments="{order_id:"),
        "not_object": ToolCall(tool="get_order", arguments="[1, 2]"),
        "integer": ToolCall(
            tool="place_order",
            arguments={
                "customer_id": "CUS-00001",
                "product_id": "PRD-00001",
                "quantity": "two",
                "payment_method_id": "PM-00001",
            },
        ),
    }
    codes = {name: ep.step(action).error for name, action in cases.items()}
    assert codes["unknown_tool"] is not None and codes["unknown_tool"].code == "unknown_tool"
    assert codes["sql"] is not None and codes["sql"].code == "not_found"
    for name in (
        "missing",
        "extra",
        "wrong_type",
        "enum",
        "huge",
        "not_json",
        "not_object",
        "integer",
    ):
        err = codes[name]
        assert err is not None and err.code == "invalid_arguments", name
    missing = codes["missing"]
    assert missing is not None and missing.field == "reason"
    assert ep.changes() == []
