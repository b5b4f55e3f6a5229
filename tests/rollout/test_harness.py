"""The harness: prompts, tool exposure, text tool calls, context strategies, wire parsing."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import pytest

import envfactory
from envfactory.harness import (
    ContextBuilder,
    ContextConfig,
    HarnessConfig,
    exposed_tools,
    parse_tool_calls,
    render_call,
    system_prompt,
)
from envfactory.policies.base import TransientFault
from envfactory.policies.openai import parse_completion, retry_after


def test_system_prompt_states_the_rules_and_text_mode_lists_tools() -> None:
    env = envfactory.make("retail")
    task = env.task("train", 3, 0).public
    tools = exposed_tools(task, env.tools(), HarnessConfig())
    native = system_prompt(task, tools, HarnessConfig())
    assert task.persona in native and all(rule in native for rule in task.rules)
    assert "<tools>" not in native
    text = system_prompt(task, tools, HarnessConfig(tool_format="text"))
    assert "<tools>" in text and '"name":"get_order"' in text.replace(" ", "")
    custom = system_prompt(task, tools, HarnessConfig(system_prompt="{env_id}: {rules}"))
    assert custom.startswith("retail: - ")


def test_tool_exposure_narrows_the_tools() -> None:
    env = envfactory.make("retail")
    task = env.task("train", 1, 0).public
    tools = exposed_tools(task, env.tools(), HarnessConfig(tools=["get_order", "nope"]))
    assert [t["function"]["name"] for t in tools] == ["get_order"]


def test_parse_tool_calls() -> None:
    text = (
        "Let me look.\n"
        + render_call("get_order", {"order_id": "ORD-00001"})
        + '\n<tool_call>\n{"name": "get_customer", "arguments": {"customer_id": "C-1"}}\n'
        + '</tool_call>\n<tool_call>{"name": "cancel_order", "arguments": {oops</tool_call>'
        + "<tool_call>nothing here</tool_call><tool_call>"
        + '{"name": "list_payment_methods", "arguments": {"customer_id": "C-2"}}'
    )
    plain, calls = parse_tool_calls(text)
    assert plain == "Let me look."
    assert calls[0] == {
        "type": "tool_call",
        "tool": "get_order",
        "arguments": {"order_id": "ORD-00001"},
    }
    assert calls[1]["tool"] == "get_customer"
    assert calls[2]["tool"] == "cancel_order" and isinstance(calls[2]["arguments"], str)
    assert "tool" not in calls[3]
    assert calls[4]["tool"] == "list_payment_methods"  # unclosed at the end of the reply
    assert parse_tool_calls("Just text.") == ("Just text.", [])


def test_bad_text_calls_become_error_observations() -> None:
    env = envfactory.make("retail")
    ep = env.episode()
    ep.reset(env.task("train", 1, 0))
    _, calls = parse_tool_calls(
        '<tool_call>nothing</tool_call><tool_call>{"name": "get_order", x}</tool_call>'
    )
    kinds = [ep.step(c) for c in calls]
    assert [o.kind for o in kinds] == ["tool_error", "tool_error"]
    assert [o.error.code for o in kinds if o.error] == ["malformed_action", "invalid_arguments"]


def transcript(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "request"},
    ]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": f"t{i}", "arguments": "{}"}}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
    return msgs


def test_context_strategies() -> None:
    msgs = transcript(5)
    keep = ContextBuilder(ContextConfig())
    assert asyncio.run(keep.build(msgs)) == (msgs, False)
    recent = ContextBuilder(ContextConfig(strategy="recent", window=2))
    shown, cut = asyncio.run(recent.build(msgs))
    assert cut and shown == msgs[:2] + msgs[-4:]
    assert asyncio.run(recent.build(transcript(2))) == (transcript(2), False)

    seen: list[list[dict[str, Any]]] = []

    async def summarise(dropped: list[dict[str, Any]]) -> str:
        seen.append(dropped)
        return f"{len(dropped)} messages"

    summary = ContextBuilder(ContextConfig(strategy="summary", window=2), summarise)
    shown, cut = asyncio.run(summary.build(msgs))
    assert cut and shown[0]["content"] == "sys\n\n# Earlier in this conversation\n6 messages"
    assert shown[1:] == [msgs[1], *msgs[-4:]] and msgs[0]["content"] == "sys"
    asyncio.run(summary.build(msgs))
    assert len(seen) == 1  # cached while the cut does not move
    digest = ContextBuilder(ContextConfig(strategy="summary", window=1))
    shown, _ = asyncio.run(digest.build(msgs))
    assert "you called t0({})" in shown[0]["content"] and "-> result 0" in shown[0]["content"]
    with pytest.raises(ValueError, match="unknown summariser"):
        ContextBuilder(ContextConfig(strategy="summary", summariser="nope"))


def test_parse_completion_reads_vllm_token_fields() -> None:
    data = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "Hi", "reasoning_content": "hmm"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {"token": "token_id:7", "logprob": -0.5},
                        {"token": "token_id:2", "logprob": -0.1},
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        "prompt_token_ids": [1, 2, 3],
    }
    reply = parse_completion(data, 0, text_reply_final=False)
    assert reply.prompt_ids == [1, 2, 3] and reply.output_ids == [7, 2]  # from the logprobs
    assert reply.output_logprobs == [-0.5, -0.1] and reply.finish_reason == "stop"
    assert reply.message == {"role": "assistant", "content": "Hi", "reasoning_content": "hmm"}
    assert reply.actions[0].final is False  # type: ignore[union-attr]
    data["choices"][0]["token_ids"] = [9, 9]  # type: ignore[index]
    assert parse_completion(data, 0, True).output_ids == [9, 9]
    for bad in ({}, {"choices": []}, {"choices": [{"message": {"content": 3}}]}, [1]):
        with pytest.raises(TransientFault, match="malformed response"):
            parse_completion(bad, 0, True)


def test_parse_completion_native_tool_calls() -> None:
    call = {"id": "x1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}
    nameless = {"type": "function", "function": {"arguments": "{}"}}
    data = {"choices": [{"message": {"content": None, "tool_calls": [call, nameless]}}]}
    reply = parse_completion(data, 4, True)
    assert reply.actions == [
        {"type": "tool_call", "arguments": "{}", "call_id": "x1", "tool": "get_order"},
        {"type": "tool_call", "arguments": "{}", "call_id": "call_4_1"},
    ]
    assert [c["id"] for c in reply.message["tool_calls"]] == ["x1", "call_4_1"]


def test_retry_after() -> None:
    assert retry_after("3") == 3.0 and retry_after(None) is None and retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(later) or 0) <= 31
