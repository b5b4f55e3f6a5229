"""End to end: the engine, an OpenAI-compatible policy, and a real server on loopback."""

from __future__ import annotations

import pytest
from chat_server import ChatServer, encode, logprob
from openai_runs import run_openai

from envfactory.contract.errors import EnvFactoryError
from envfactory.harness import HarnessConfig
from envfactory.rollout import EngineConfig, TaskRef
from envfactory.trajectory import to_messages, to_sequence, to_steps

REFS = [
    TaskRef(env, "train", d, i) for env in ("retail", "hotel") for d in range(1, 6) for i in (0, 1)
]


@pytest.mark.parametrize("tool_format", ["native", "text"])
def test_oracle_through_the_server_scores_one(server: ChatServer, tool_format: str) -> None:
    harness = HarnessConfig(tool_format=tool_format)  # type: ignore[arg-type]
    summary, records = run_openai(server, REFS, harness=harness, sampling={"temperature": 0.7})
    assert summary.episodes == len(REFS) == len(records)
    assert summary.status_counts["completed"] == len(REFS)
    assert summary.reward_mean == 1.0
    assert all(r.reward == 1.0 and r.status == "completed" for r in records)
    assert summary.tokens["prompt"] > 0 and summary.tokens["completion"] > 0
    for r in records:
        assert r.model.provider == "openai" and r.model.name == "scripted-brain"
        for call in r.calls:
            assert call.prompt_ids and call.output_ids and call.output_logprobs
            assert len(call.output_logprobs) == len(call.output_ids)
        assert len(r.steps) >= len(r.calls) - 1
        assert all(len(s.state_hash) == 16 or s.state_hash for s in r.steps)
    # every request of an episode carried its id in the session header, the key, and sampling
    sessions = {q["session"] for q in server.state.requests}
    assert sessions == {r.episode_id for r in records}
    for q in server.state.requests:
        assert q["authorization"] == "Bearer test-key"
        assert q["body"]["temperature"] == 0.7 and q["body"]["return_token_ids"] is True
        assert ("tools" in q["body"]) == (tool_format == "native")


def test_text_mode_transcript_uses_tool_call_tags(server: ChatServer) -> None:
    _, records = run_openai(server, REFS[:2], harness=HarnessConfig(tool_format="text"))
    messages = to_messages(records[0])
    assert "<tools>" in messages[0]["content"]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert "<tool_call>" in assistant[0]["content"] and "tool_calls" not in assistant[0]
    assert any(m["content"].startswith("<tool_response>") for m in messages if m["role"] == "user")


def test_to_sequence_reproduces_the_server_tokens(server: ChatServer) -> None:
    _, records = run_openai(server, REFS[4:6])
    for r in records:
        seq = to_sequence(r)
        assert not seq.rewritten and len(seq.rows) == 1
        row, last = seq.rows[0], r.calls[-1]
        assert last.prompt_ids is not None and last.output_ids is not None
        assert row.input_ids == last.prompt_ids + last.output_ids
        assert sum(row.loss_mask) == sum(len(c.output_ids or []) for c in r.calls)
        assert row.logprobs is not None
        trained = [lp for lp, m in zip(row.logprobs, row.loss_mask, strict=True) if m]
        assert trained == [lp for c in r.calls for lp in (c.output_logprobs or [])]
        # the ids are the server's own: re-encode the final prompt and compare
        request = [q for q in server.state.requests if q["session"] == r.episode_id][-1]
        assert request["turn"] == len(r.calls) - 1
        assert last.output_logprobs == [logprob(t, j) for j, t in enumerate(last.output_ids)]
        assert (
            encode("<|im_start|>assistant\n")
            == last.prompt_ids[-len(encode("<|im_start|>assistant\n")) :]
        )


def test_to_sequence_detects_a_rewritten_prefix(server: ChatServer) -> None:
    server.state.think = True
    server.state.strip_thinking = True  # the template drops earlier turns' reasoning
    _, records = run_openai(server, REFS[6:7])
    r = records[0]
    seq = to_sequence(r)
    assert seq.rewritten and len(seq.rows) == len(r.calls)
    for row in seq.rows:
        call = r.calls[row.calls[-1]]
        assert row.input_ids == (call.prompt_ids or []) + (call.output_ids or [])


def test_to_steps_and_to_messages_line_up(server: ChatServer) -> None:
    _, records = run_openai(server, REFS[:1])
    r = records[0]
    steps = to_steps(r)
    assert len(steps) == len(r.calls) and steps[-1].last
    for s in steps:
        assert s.messages == r.messages[: r.calls[s.call_index].n_messages]
        assert s.response["role"] == "assistant" and s.reward == 1.0
    hashes = [s.state_hash for s in steps if s.state_hash]
    assert hashes and hashes[-1] == r.steps[-1].state_hash
    assert to_messages(r, 0)[-1] == r.messages[r.calls[0].message_index]


@pytest.mark.parametrize("strategy", ["recent", "summary"])
def test_truncated_context_is_what_the_model_saw(server: ChatServer, strategy: str) -> None:
    """The transcript keeps everything; each call records the context actually sent. (The
    brain reads its progress from what it is shown, so, like a model, it loses its way when
    the window hides its earlier turns.)"""
    harness = HarnessConfig(
        max_turns=6,
        context={"strategy": strategy, "window": 1},  # type: ignore[arg-type]
    )
    _, records = run_openai(server, [TaskRef("retail", "train", 5, 0)], harness=harness)
    r = records[0]
    sent = [q["body"]["messages"] for q in server.state.requests if q["session"] == r.episode_id]
    assert len(sent) == len(r.calls) == 6 and r.status == "truncated"
    assert [r.context(c) for c in r.calls] == sent
    windowed = [c for c in r.calls if c.context is not None]
    assert len(windowed) == 4  # calls 2..5 had more than one earlier turn
    for c in windowed:
        assert c.context is not None
        assert sum(m["role"] == "assistant" for m in c.context) == 1
        assert c.context[1] == r.messages[1]
        summarised = "# Earlier in this conversation" in c.context[0]["content"]
        assert summarised == (strategy == "summary")
    assert len(r.messages) > max(len(c.context or []) for c in r.calls)


def test_group_size_and_oversampling(server: ChatServer) -> None:
    config = EngineConfig(group_size=3, oversample=2, concurrency=16)
    summary, records = run_openai(server, REFS[:4], config=config)
    by_group: dict[str, list[int]] = {}
    for r in records:
        by_group.setdefault(r.group_id, []).append(r.sample_index)
    assert all(len(v) == 3 for v in by_group.values()) and len(by_group) == 4
    assert summary.groups["complete"] == 4
    assert summary.discarded == 4 * 2
    assert len({r.episode_id for r in records}) == len(records)


def test_tool_choice_first_asks_the_server_for_a_call_on_the_first_turn_only(
    server: ChatServer,
) -> None:
    harness = HarnessConfig(tool_choice="first")
    _, records = run_openai(server, REFS[2:4], harness=harness)
    assert all(r.reward == 1.0 and r.model.tool_format == "native" for r in records)
    turns = {(q["session"], q["turn"]): q["body"] for q in server.state.requests}
    assert {t for _, t in turns} >= {0, 1}
    for (_, turn), body in turns.items():
        assert body.get("tool_choice") == ("required" if turn == 0 else None)


def test_the_grammar_format_is_refused_behind_an_api(server: ChatServer) -> None:
    """Grammar decoding needs the model in this process: the engine says so before any
    episode starts."""
    with pytest.raises(EnvFactoryError, match="constrains a local model"):
        run_openai(server, REFS[:1], harness=HarnessConfig(tool_format="grammar"))
