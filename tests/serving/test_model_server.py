"""``envfactory serve-model``: the embedded model behind a real OpenAI-compatible server on
loopback, called by the official ``openai`` client, by httpx, and by envfactory's own rollout
command. The model is loaded once for the module; replies are kept short (CPU generation)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from envfactory.serving.model_server import (
    ChatRequest,
    ModelPool,
    RunningModel,
    _tool_calls,
    prompt_messages,
    running_model,
)

pytest.importorskip("transformers")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_room",
            "description": "Find a free hotel room for a number of guests.",
            "parameters": {
                "type": "object",
                "properties": {"guests": {"type": "integer"}},
                "required": ["guests"],
            },
        },
    }
]
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You book hotel rooms."},
    {"role": "user", "content": "A room for two, please."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "find_room", "arguments": '{"guests": 2}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"room": "R-101"}'},
]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningModel]:
    pool = ModelPool.load(None, max_batch=8, max_tokens=64)
    with running_model(pool) as running:
        yield running


def _decode(server: RunningModel, ids: list[int]) -> str:
    return str(server.pool.tokenizer.decode(ids))


def _check_tokens(data: dict[str, Any]) -> None:
    """Token ids, logprobs and usage agree, as OpenAIPolicy reads them."""
    choice = data["choices"][0]
    usage = data["usage"]
    assert usage["prompt_tokens"] == len(data["prompt_token_ids"]) > 0
    assert usage["completion_tokens"] == len(choice["token_ids"]) > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    lps = [t["logprob"] for t in choice["logprobs"]["content"]]
    assert len(lps) == usage["completion_tokens"]
    assert all(lp <= 0 for lp in lps)


def test_openai_client_with_tools(server: RunningModel) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list().data] == [server.pool.name]
    reply = client.chat.completions.create(
        model="any-name",
        messages=[
            {"role": "system", "content": "You book hotel rooms."},
            {"role": "user", "content": "Find a room for 2 guests."},
        ],
        tools=TOOLS,  # type: ignore[arg-type]
        temperature=0.7,
        max_tokens=20,
        logprobs=True,
        extra_body={"return_token_ids": True},
    )
    assert reply.object == "chat.completion" and reply.model == "any-name"
    data = reply.model_dump()
    _check_tokens(data)
    choice = reply.choices[0]
    assert choice.finish_reason in ("stop", "length", "tool_calls")
    assert choice.message.role == "assistant"
    if choice.message.tool_calls:  # the tiny model rarely calls; when it does, well formed
        for call in choice.message.tool_calls:
            assert call.id and call.type == "function" and call.function.name
            assert isinstance(call.function.arguments, str)
    else:
        assert isinstance(choice.message.content, str)
    prompt = _decode(server, data["prompt_token_ids"])
    assert "<tools>" in prompt and '"find_room"' in prompt and "<tool_call>" in prompt
    assert prompt.startswith("<|im_start|>system\nYou book hotel rooms.")


def test_tool_history_is_rendered_as_text(server: RunningModel) -> None:
    body = {
        "model": server.pool.name,
        "messages": HISTORY,
        "tools": TOOLS,
        "max_completion_tokens": 16,
        "temperature": 0,
        "logprobs": True,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
    }
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    data = response.json()
    _check_tokens(data)
    choice = data["choices"][0]
    named = [t["token"] for t in choice["logprobs"]["content"]]
    assert named == [f"token_id:{i}" for i in choice["token_ids"]]
    prompt = _decode(server, data["prompt_token_ids"])
    assert '<tool_call>\n{"name": "find_room", "arguments": {"guests": 2}}\n</tool_call>' in prompt
    assert '<|im_start|>user\n<tool_response>\n{"room": "R-101"}\n</tool_response>' in prompt
    # tool_choice none: no tools in the prompt, and the reply is text
    body |= {"tool_choice": "none"}
    data = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120).json()
    assert "<tools>" not in _decode(server, data["prompt_token_ids"])
    assert "tool_calls" not in data["choices"][0]["message"]


def test_messages_become_template_turns() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "ok"}]}
    request = ChatRequest.model_validate({"messages": [*HISTORY[1:], parts], "tools": TOOLS})
    turns = prompt_messages(request, with_tools=True)
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user", "user"]
    assert turns[0]["content"].startswith("# Tools") and "find_room" in turns[0]["content"]
    assert turns[2]["content"].startswith("<tool_call>")
    assert turns[3]["content"] == '<tool_response>\n{"room": "R-101"}\n</tool_response>'
    assert turns[4]["content"] == "ok"


def test_reply_text_becomes_tool_calls() -> None:
    parsed = _tool_calls(
        'Let me look.\n<tool_call>\n{"name": "find_room", "arguments": {"guests": 2}}\n</tool_call>'
    )
    assert parsed is not None
    plain, calls = parsed
    assert plain == "Let me look."
    assert calls[0].function.name == "find_room"
    assert json.loads(calls[0].function.arguments) == {"guests": 2}
    assert _tool_calls("no call here") is None
    assert _tool_calls("<tool_call>not json at all</tool_call>") is None  # no name: stays text


def test_concurrent_requests_are_batched(server: RunningModel) -> None:
    before = len(server.pool.batches)
    body = {
        "messages": [{"role": "user", "content": "Name a colour."}],
        "max_tokens": 12,
        "temperature": 0.8,
        "logprobs": True,
        "return_token_ids": True,
    }

    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=120) as client:
            return await asyncio.gather(
                *(client.post("/chat/completions", json=body) for _ in range(4))
            )

    responses = asyncio.run(main())
    assert [r.status_code for r in responses] == [200] * 4
    for r in responses:
        _check_tokens(r.json())
    sizes = server.pool.batches[before:]
    assert sum(sizes) == 4 and max(sizes) > 1, sizes


def test_rollout_command_runs_an_episode(server: RunningModel, tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "envfactory.cli.main", "rollout", "--envs", "hotel"]
    command += ["--policy", "openai", "--base-url", server.base_url, "--model", "smol"]
    command += ["--n-tasks", "1", "--max-turns", "2", "--max-tokens", "16"]
    command += ["--tool-format", "text", "--out", str(out), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["episodes"] == 1 and summary["retries"] == 0, summary
    (line,) = (out / "episodes.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["status"] in ("completed", "truncated")
    assert record["calls"] and record["model"]["provider"] == "openai"
    for call in record["calls"]:
        assert call["prompt_ids"] and call["output_ids"]
        assert len(call["output_logprobs"]) == len(call["output_ids"]) == call["completion_tokens"]
        assert len(call["prompt_ids"]) == call["prompt_tokens"]
        assert call["finish_reason"] in ("stop", "length")


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"messages": [', "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"model": "x"}', "messages"),
        (b'{"messages": []}', "messages"),
        (b'{"messages": [{"role": "wizard", "content": "hi"}]}', "role"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream": true}', "streaming"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "n": 2}', "n = 1"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": -1}', "temperature"),
        (
            b'{"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}',
            "tool_choice",
        ),
        (
            b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
            "text content",
        ),
    ],
)
def test_malformed_requests_are_refused(server: RunningModel, raw: bytes, words: str) -> None:
    response = httpx.post(
        f"{server.base_url}/chat/completions",
        content=raw,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert words in error["message"] and error["type"] == "invalid_request_error"


def test_a_prompt_past_the_context_is_refused(server: RunningModel) -> None:
    words = "hotel " * (server.pool.context + 10)
    body = {"messages": [{"role": "user", "content": words}], "max_tokens": 4}
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
    assert response.status_code == 400
    assert "maximum context length" in response.json()["error"]["message"]  # OpenAIPolicy: overflow


def test_openai_client_hears_why_streaming_is_refused(server: RunningModel) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="streaming is not supported"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )


def test_token_guards_the_routes(server: RunningModel) -> None:
    with running_model(server.pool, token="s3cret") as guarded:
        assert httpx.get(f"{guarded.base_url}/models").status_code == 401
        assert httpx.get(f"{guarded.url}/health").status_code == 200
        ok = httpx.get(f"{guarded.base_url}/models", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json()["data"][0]["id"] == server.pool.name


def test_the_llm_user_is_played_by_the_real_model(server: RunningModel) -> None:
    """The LLM user simulator over serve-model: the embedded model plays the user, sees only
    the request and profile, and what it says is recorded as the user's turn; whatever it
    says, an episode whose gold plan ran scores 1 (the user is no judge)."""
    from envfactory.contract.actions import Message, ToolCall
    from envfactory.contract.config import EpisodeConfig, UserConfig
    from envfactory.policies.scripted import answer_text
    from envfactory.registry import make

    env = make("retail")
    task = env.task("train", 1, 0)
    config = EpisodeConfig(user=UserConfig(kind="llm", base_url=server.base_url, model="any"))
    ep = env.episode(config)
    ep.reset(task)
    said = ep.step(Message(content="Could you tell me your name, please?", final=False))
    assert said.kind == "user" and said.content.strip()
    for step in task.hidden.gold_plan:
        assert ep.step(ToolCall(tool=step.tool, arguments=step.arguments)).kind == "tool_result"
    ep.step(Message(content=answer_text(task.hidden.answers), final=True))
    assert ep.evaluate().reward == 1.0
    ep.close()
