"""Nothing an agent sends can void its episode: over every tool of every world, arguments drawn
from the tool's JSON Schema and mixed with hostile values (non-finite and 64-bit-overflowing
numbers, NUL, lone surrogates, deep nesting, huge text, wrong types, extra keys, arguments
that are not an object, JSON text with ``Infinity``) never raise out of ``step()``, never end
the episode ``env_error``, and always give an observation that serialises as JSON."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

import envfactory
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.values import MAX_CHARS, MAX_DEPTH
from envfactory.domain.loader import parse_domain
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.peers.tau2.data import missing_reason
from envfactory.terminal.sandbox import unavailable_reason

ENVS = {e: envfactory.make(e).kind for e in envfactory.list_envs()}
DATABASE = sorted(e for e, kind in ENVS.items() if kind in ("db", "imported"))
TERMINAL = sorted(e for e, kind in ENVS.items() if kind == "terminal")
MULTI = sorted(e for e, kind in ENVS.items() if kind == "multiagent")
OPENAPI_DOC = Path(__file__).parent / "openapi" / "specs" / "shop-swagger2.json"
TAU2_MISSING = missing_reason()


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


HOSTILE: list[Any] = [
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    10**30,
    2**63,
    -(2**63) - 1,
    -(2**63),
    "a\x00b",
    "\ud800",
    "ok\udfffok",
    {"\ud800": 1},
    {"a\x00": 1},
    {1: "non-string key"},
    [math.inf],
    _nested(MAX_DEPTH + 5),
    _nested(5000),
    "x" * (MAX_CHARS + 1),
    "t" * 201,  # one past the longest tool name
    ["y" * 1000] * 1100,
    b"bytes",
    (1, 2),
    {1, 2},
    object(),
    -1,
    0,
    "",
    True,
    None,
    [],
    {},
]
hostile = st.sampled_from(HOSTILE)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
# Terminal commands really run: valid ones are drawn from harmless words.
COMMAND_TEXT = st.text("abcdefghijklmnopqrstuvwxyz0123456789 -./", max_size=12)


def from_schema(prop: dict[str, Any], text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Values for one JSON Schema property: mostly of its type, often at its edges."""
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    kind = prop.get("type")
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        return st.integers(low, high) | st.sampled_from([v for v in (low, high) if v is not None])
    if kind == "number":
        return st.floats(prop.get("minimum"), prop.get("maximum"), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        limit = prop.get("maxLength", 100)
        return text | st.just("z" * limit) | st.just("z" * (limit + 1))
    if kind == "array":
        items = from_schema(prop.get("items", {}), text) | hostile
        return st.lists(items, max_size=min(prop.get("maxItems", 4), 4))
    if kind == "object":
        inner = prop.get("additionalProperties")
        values = from_schema(inner, text) if isinstance(inner, dict) else json_values
        keys = st.text(max_size=8) | st.sampled_from(["tool", "arguments", "name", "id"])
        return st.dictionaries(keys, values | hostile, max_size=3)
    return json_values


def arguments(
    schema: dict[str, Any], text: st.SearchStrategy[str] = st.text(max_size=30)
) -> st.SearchStrategy[Any]:
    """Arguments for a tool: schema-shaped dicts with hostile values and extra keys mixed in,
    the same as JSON text (also with ``Infinity`` and ``1e400``), or something not an object."""
    props: dict[str, Any] = schema.get("properties", {})
    shaped = st.fixed_dictionaries(
        {},
        optional={name: from_schema(p, text) | hostile for name, p in props.items()},
    )
    with_extra = st.builds(
        lambda args, extra: {**args, **extra},
        shaped,
        st.dictionaries(st.text(max_size=8) | st.sampled_from(["\ud800", "a\x00"]), hostile),
    )
    as_text = shaped.map(_as_text)
    return st.one_of(
        shaped,
        shaped,
        with_extra,
        as_text,
        st.sampled_from(
            [
                "[1, 2]",
                "Infinity",
                '{"x": NaN}',
                "{" * 10_000,
                "\ud800",
                "\x00",
                '{"a": "\\ud800"}',
                '{"a": "\\u0000"}',
            ]
        ),
        hostile,
    )


def _as_text(args: dict[str, Any]) -> str:
    """``args`` as JSON text, non-finite numbers spelled as Python writes them."""
    try:
        text = json.dumps(args)
    except (TypeError, ValueError, RecursionError):  # a non-string key, bytes, a set, deep
        return "{not json"
    first = next(iter(args), None)
    if first is None or not first.isidentifier():
        return text
    return text.replace(f'"{first}": ', f'"{first}": 1e400, "{first}_": ', 1)


def call(tool: str, args: Any, actor: str = "agent") -> dict[str, Any]:
    """A tool call as a server receives it (any arguments, not only a dict or text)."""
    return {"type": "tool_call", "tool": tool, "arguments": args, "actor": actor}


def check(ep: Episode, obs: Observation) -> None:
    """The contract: no env_error, and an observation a server can send."""
    assert ep.status != "env_error", obs.content
    assert obs.kind in ("tool_result", "tool_error", "user", "end"), obs
    if obs.kind == "tool_error":
        assert obs.error is not None and obs.error.code
    obs.model_dump_json()


# -- database worlds (built-in, tau2-retail, compiled from OpenAPI) --------------------------


@cache
def database_world(env_id: str) -> Environment:
    if env_id == "openapi":
        doc = compile_document(read_document(OPENAPI_DOC), OPENAPI_DOC.name)
        return OpenAPIEnvironment(parse_domain(doc, OPENAPI_DOC.name))
    if env_id.startswith("tau2") and TAU2_MISSING is not None:
        pytest.skip(TAU2_MISSING)
    return envfactory.make(env_id)


def _tools(env: Environment) -> list[tuple[str, dict[str, Any]]]:
    return [(t["function"]["name"], t["function"]["parameters"]) for t in env.tools("openai")]


@pytest.mark.parametrize("env_id", [*DATABASE, "openapi"])
def test_database_tools_never_void_the_episode(env_id: str) -> None:
    env = database_world(env_id)
    ep = env.episode()
    task = env.task(env.splits[0], env.difficulties[0], 0)

    @budget(60)
    @given(data=st.data())
    def calls(data: st.DataObject) -> None:
        tool, schema = data.draw(st.sampled_from(_tools(env)))
        args = data.draw(arguments(schema))
        ep.reset(task)
        before = ep.state_hash()
        obs = ep.step(call(tool, args))
        check(ep, obs)
        if obs.kind == "tool_error":
            assert ep.state_hash() == before
        assert ep.evaluate().reward is not None

    try:
        calls()
    finally:
        ep.close()


# -- terminal worlds -------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", TERMINAL)
def test_terminal_tools_never_void_the_episode(env_id: str) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    env = envfactory.make(env_id)
    ep = env.episode()
    task = env.task(env.splits[0], env.difficulties[0], 0)
    ep.reset(task)

    @budget(30)
    @given(data=st.data())
    def calls(data: st.DataObject) -> None:
        tool, schema = data.draw(st.sampled_from(_tools(env)))
        if ep.done:  # a legitimate end (over quota): start again
            ep.reset(task)
        obs = ep.step(call(tool, data.draw(arguments(schema, COMMAND_TEXT))))
        check(ep, obs)
        assert ep.status != "infra_error", obs.content

    try:
        calls()
    finally:
        ep.close()


# -- multi-agent worlds: every seat's tools --------------------------------------------------


@pytest.mark.parametrize("env_id", MULTI)
def test_seat_tools_never_void_the_match(env_id: str) -> None:
    env = envfactory.make(env_id)
    assert isinstance(env, MultiAgentEnvironment)
    ep = env.episode()
    task = env.task(env.splits[0], env.difficulties[0], 0)

    @budget(40)
    @given(data=st.data(), moves=st.integers(0, 6))
    def calls(data: st.DataObject, moves: int) -> None:
        ep.reset(task)
        scripted = {seat: env.scripted(seat, env.strengths[0]) for seat in env.agents}
        for seat, policy in scripted.items():
            policy.start(task, seat)
        for _ in range(moves):  # play on a little: later states have other options
            if ep.done:
                return
            seat = ep.current_actors()[0]
            ep.step(scripted[seat].act(ep.observe(seat)), seat=seat)
        if ep.done:
            return
        seat = data.draw(st.sampled_from(ep.current_actors()))
        tool = data.draw(st.sampled_from(env.seat_tools(seat)))
        args = data.draw(arguments(tool.schema()))
        obs = ep.step(call(tool.name, args, seat))
        check(ep, obs)
        verdict = ep.evaluate()
        assert all(r is not None for r in verdict.rewards.values())
        verdict.model_dump_json()
        assert ep.audit() == []

    try:
        calls()
    finally:
        ep.close()


# -- the action itself: its text fields and raw forms ----------------------------------------

BAD_TEXT = ["\ud800", "a\x00b", "x" * (MAX_CHARS + 1)]


@pytest.mark.parametrize("env_id", ["retail", "negotiation"])
@pytest.mark.parametrize("text", BAD_TEXT, ids=["surrogate", "nul", "huge"])
def test_bad_text_in_an_action_is_a_malformed_action(env_id: str, text: str) -> None:
    env = envfactory.make(env_id)
    ep = env.episode()
    ep.reset(env.task(env.splits[0], env.difficulties[0], 0))
    seat = "player_0" if isinstance(env, MultiAgentEnvironment) else "agent"
    actions: list[Any] = [
        Message(content=text, final=False, actor=seat),
        Message(content=text, final=True, actor=seat),
        ToolCall(tool="propose", actor=text),
        ToolCall(tool="propose", actor=seat, call_id=text),
        {"type": "message", "content": text, "actor": seat},
        {"type": "tool_call", "tool": text, "actor": seat},
    ]
    for action in actions:
        obs = ep.step(action)
        check(ep, obs)
        assert obs.error is not None and obs.error.code == "malformed_action", obs.content
        assert not ep.done
    ep.close()


@pytest.mark.parametrize(
    "raw",
    [
        '{"type": "tool_call", "tool": "get_order", "arguments": {"order_id": Infinity}}',
        '{"type": "message", "content": NaN}',
        b'{"type": "message", "content": "\\ud800"}',
        b"\xff\xfe",
        "[" * 100_000,
    ],
)
def test_raw_actions_with_non_json_constants_are_refused(retail: Environment, raw: Any) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    obs = ep.step(raw)
    check(ep, obs)
    assert obs.error is not None and obs.error.code == "malformed_action"
    ep.close()
