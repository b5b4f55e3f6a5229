"""Trainer formats derived from an episode record: chat messages, token sequences, steps."""

from __future__ import annotations

from pydantic import BaseModel, Field

from envfactory.contract.errors import EnvFactoryError
from envfactory.trajectory.record import CallRecord, ChatMessage, EpisodeRecord


class MissingTokens(EnvFactoryError):
    """A call has no token ids (the server did not return them), so there is no sequence."""


def to_messages(record: EpisodeRecord, call: int | None = None) -> list[ChatMessage]:
    """The chat transcript. With ``call``: exactly the context the policy was given for that
    call (after any truncation or summary) followed by its reply."""
    if call is None:
        return list(record.messages)
    c = record.calls[call]
    return [*record.context(c), record.messages[c.message_index]]


class SequenceRow(BaseModel):
    """Token ids of one or more calls merged by prefix; ``loss_mask`` is 1 on model output."""

    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float] | None = Field(
        description="the sampler's logprob per token (0 where loss_mask is 0); None when a "
        "merged call came without logprobs"
    )
    calls: list[int] = Field(description="indices of the calls merged into this row")
    advantages: list[float] | None = Field(
        None,
        description="per token: the advantage of the call that produced it (0 where loss_mask "
        "is 0); None when no advantage has been assigned",
    )


class TokenSequence(BaseModel):
    """An episode as token rows. More than one row means the chat template rewrote earlier
    turns (a call's prompt did not extend the tokens before it), so they cannot be merged."""

    episode_id: str
    actor: str
    reward: float | None
    advantage: float | None
    rows: list[SequenceRow]

    @property
    def rewritten(self) -> bool:
        return len(self.rows) > 1


def _tokens(record: EpisodeRecord, call: CallRecord) -> tuple[list[int], list[int]]:
    if call.prompt_ids is None or call.output_ids is None:
        raise MissingTokens(
            f"call {call.index} of {record.episode_id} has no token ids; ask the server for them "
            "(vLLM: return_token_ids) or tokenise the messages with the model's tokenizer"
        )
    return call.prompt_ids, call.output_ids


def to_sequence(record: EpisodeRecord, actor: str = "agent") -> TokenSequence:
    """Merge ``actor``'s calls by prefix into ``input_ids`` / ``loss_mask`` / ``logprobs``:
    a call whose prompt extends the row so far adds its new prompt tokens (masked) and its
    output (trained on); any other call starts a new row."""
    rows: list[SequenceRow] = []
    for call in record.calls:
        if call.actor != actor:
            continue
        prompt, output = _tokens(record, call)
        row = rows[-1] if rows else None
        if row is None or prompt[: len(row.input_ids)] != row.input_ids:
            row = SequenceRow(input_ids=[], loss_mask=[], logprobs=[], calls=[])
            rows.append(row)
        new_prompt = prompt[len(row.input_ids) :]
        adv = call.advantage if call.advantage is not None else record.advantage
        if adv is not None or row.advantages is not None:
            row.advantages = row.advantages or [0.0] * len(row.input_ids)
            row.advantages += [0.0] * len(new_prompt) + [adv or 0.0] * len(output)
        row.input_ids += new_prompt + output
        row.loss_mask += [0] * len(new_prompt) + [1] * len(output)
        row.calls.append(call.index)
        lp = call.output_logprobs
        if row.logprobs is not None and lp is not None and len(lp) == len(output):
            row.logprobs += [0.0] * len(new_prompt) + list(lp)
        else:
            row.logprobs = None
    return TokenSequence(
        episode_id=record.episode_id,
        actor=actor,
        reward=record.reward,
        advantage=record.advantage,
        rows=rows,
    )


class StepRow(BaseModel):
    """One model call as a training row: what the policy saw, what it said, what followed."""

    episode_id: str
    group_id: str
    task_id: str
    call_index: int
    actor: str
    messages: list[ChatMessage]
    response: ChatMessage
    prompt_ids: list[int] | None
    output_ids: list[int] | None
    output_logprobs: list[float] | None
    finish_reason: str | None
    state_hash: str | None = Field(description="the state after the call's last step")
    step_reward: float | None
    reward: float | None
    advantage: float | None
    step_advantage: float | None = Field(
        None, description="this call's own advantage (turn-level credit), when assigned"
    )
    status: str
    last: bool


def to_steps(record: EpisodeRecord) -> list[StepRow]:
    """One row per call, with the state hash and step reward its actions led to."""
    after: dict[int, str] = {}
    rewards: dict[int, float] = {}
    for step in record.steps:
        after[step.call_index] = step.state_hash
        if step.reward is not None:
            rewards[step.call_index] = rewards.get(step.call_index, 0.0) + step.reward
    rows = []
    for call in record.calls:
        rows.append(
            StepRow(
                episode_id=record.episode_id,
                group_id=record.group_id,
                task_id=record.task_id,
                call_index=call.index,
                actor=call.actor,
                messages=list(record.context(call)),
                response=record.messages[call.message_index],
                prompt_ids=call.prompt_ids,
                output_ids=call.output_ids,
                output_logprobs=call.output_logprobs,
                finish_reason=call.finish_reason,
                state_hash=after.get(call.index),
                step_reward=rewards.get(call.index),
                reward=record.reward,
                advantage=record.advantage,
                step_advantage=call.advantage,
                status=record.status,
                last=call.index == len(record.calls) - 1,
            )
        )
    return rows
