"""Malformed actions become structured error observations, never exceptions, and change
nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

import envfactory
from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import PlanStep
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.multiagent.families.proposer_solver import steps_in
from envfactory.terminal.sandbox import unavailable_reason
from envfactory.trajectory.record import EpisodeRecord, ModelInfo, StepRecord
from envfactory.trajectory.store import TrajectoryStore

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


# -- agent input can never void an episode (issue 14, classes 3 and 4) -----------------------

VOIDING = [
    {"confirmation": math.inf},
    '{"confirmation": Infinity}',
    '{"confirmation": 1e400}',
    {"confirmation": 10**30},
    {"confirmation": -(2**63) - 1},
    {"confirmation": 1e300},
]


@pytest.mark.parametrize("arguments", VOIDING, ids=lambda a: str(a)[:30])
def test_a_huge_or_non_finite_number_is_the_agents_error(arguments: Any) -> None:
    """The reproduction: hotel's find_reservation_by_confirmation(confirmation=inf) ended the
    episode env_error (reward None, left out of the group's statistics)."""
    hotel = envfactory.make("hotel")
    ep = hotel.episode()
    ep.reset(hotel.task("train", 1, 0))
    obs = ep.step(ToolCall(tool="find_reservation_by_confirmation", arguments=arguments))
    assert obs.error is not None and obs.error.code == "invalid_arguments"
    if "Infinity" in str(arguments):  # not JSON: refused by the parser, which says why
        assert "Infinity is not a JSON number" in obs.error.message
    else:
        assert obs.error.field == "confirmation" and "confirmation" in obs.error.message
    assert not ep.done and ep.status != "env_error"
    assert ep.evaluate().reward is not None
    ep.close()


def test_no_number_voids_any_database_world(db_env: Environment) -> None:
    """Every numeric parameter of every tool, with each value that used to void an episode."""
    ep = db_env.episode()
    ep.reset(db_env.task("train", 1, 0))
    for name, tool in db_env.world.tools.items():
        for param, spec in tool.params.items():
            if spec.type not in ("integer", "number"):
                continue
            for raw in ('{"%s": Infinity}', '{"%s": 1e400}', '{"%s": %d}'):
                text = raw % ((param, 10**30) if "%d" in raw else param)
                obs = ep.step(ToolCall(tool=name, arguments=text))
                assert ep.status != "env_error", (name, text, obs.content)
                assert obs.error is not None and obs.error.code == "invalid_arguments"
            ep.reset(db_env.task("train", 1, 0))  # stay under the turn limit
    ep.close()


TERMINAL_CALLS = [
    ("run_command", {"command": "echo a\x00b"}),
    ("run_command", {"command": "echo \ud800"}),
    ("read_file", {"path": "a\x00"}),
    ("read_file", {"path": "\ud800"}),
    ("write_file", {"path": "x\x00", "content": "a"}),
    ("write_file", {"path": "x", "content": "\ud800"}),
    ("write_file", {"path": "x", "content": "a\x00b"}),
]


@pytest.mark.parametrize(("tool", "arguments"), TERMINAL_CALLS)
def test_terminal_tools_refuse_nul_and_surrogates(tool: str, arguments: dict[str, str]) -> None:
    """These raised ValueError / UnicodeEncodeError out of step() (a 500 over HTTP)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    env = envfactory.make("term-archive")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    obs = ep.step(ToolCall(tool=tool, arguments=arguments))
    assert obs.error is not None and obs.error.code == "invalid_arguments"
    assert obs.error.field in arguments and not ep.done
    obs.model_dump_json()
    ep.close()


def test_a_seat_cannot_void_the_match_with_a_surrogate_key() -> None:
    """negotiation's propose with a lone-surrogate key raised out of step()."""
    env = envfactory.make("negotiation")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    seat = ep.current_actors()[0]
    for arguments in ({"keep": {"\ud800": 1}}, {"\ud800": 1}, {"keep": {"hats": math.inf}}):
        obs = ep.step(ToolCall(tool="propose", arguments=arguments, actor=seat))
        assert obs.error is not None and obs.error.code == "invalid_arguments"
        obs.model_dump_json()
    assert not ep.done and ep.audit() == []
    assert all(r is not None for r in ep.evaluate().rewards.values())


TEXT_CALLS = {
    "surrogate": '{"name": "get_order", "arguments": {"order_id": "\\ud800"}}',
    "deep": '{"name": "get_order", "arguments": {"order_id": %s}}' % ("[" * 300 + "]" * 300),
    "infinity": '{"name": "get_order", "arguments": {"order_id": Infinity}}',
    "surrogate name": '{"name": "get_\\ud800", "arguments": {}}',
}


@pytest.mark.parametrize("body", TEXT_CALLS.values(), ids=TEXT_CALLS.keys())
def test_text_tool_calls_the_store_could_not_hold_stay_text(
    retail: Environment, body: str, tmp_path: Path
) -> None:
    """A model in text mode writing these made the trajectory store refuse the episode's
    record (StoreError: surrogates and nesting past 254 levels do not serialise), ending the
    run. Now the episode names the problem and the record keeps the call as text."""
    _, calls = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    obs = ep.step(calls[0])
    assert obs.error is not None and obs.error.code in ("invalid_arguments", "unknown_tool")
    step = StepRecord(call_index=0, action=calls[0], kind=obs.kind, state_hash=ep.state_hash())
    record = EpisodeRecord(
        episode_id="e",
        group_id="g",
        task_id="retail/train/1/0",
        env_id="retail",
        split="train",
        difficulty=1,
        sample_index=0,
        model=ModelInfo(name="text-mode", provider="scripted"),
        steps=[step],
    )
    with TrajectoryStore(tmp_path) as store:
        store.append_sync(record)
    ep.close()


def test_a_proposer_cannot_void_the_match_with_a_bad_plan_step() -> None:
    """A plan step naming a tool of 300 characters raised a ValidationError inside the world
    (env_error, every seat's reward None); now the plan is refused as failing."""
    env = envfactory.make("proposer_solver")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    plan = [{"tool": "t" * 300, "arguments": {}}] * 6
    arguments = {"instruction": "do it", "plan": plan}
    obs = ep.step(ToolCall(tool="propose", arguments=arguments, actor="proposer"))
    assert obs.error is not None and obs.error.code == "rule_violation", obs.content
    assert ep.status != "env_error" and not ep.done


def test_the_scripted_solver_reads_a_deeply_nested_instruction() -> None:
    """The scripted solver parses the steps an instruction spells out; a proposer nesting an
    argument 3,000 deep raised RecursionError there."""
    deep = "[" * 3000 + "]" * 3000
    assert steps_in(f'1. get_order {{"order_id": {deep}}}\n2. get_order {{"order_id": "O-1"}}') == [
        PlanStep(tool="get_order", arguments={"order_id": "O-1"})
    ]
