"""A supervised warm start: the gold plans of **train** tasks, played by the scripted oracle
through the same harness a model sees, as demonstrations. Loss on the assistant's tokens only."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from envfactory.harness.config import HarnessConfig
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.engine import Listener, RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import ChatMessage, EpisodeRecord

IGNORE = -100  # label of a token no loss is taken on


def solved(
    refs: list[TaskRef], harness: HarnessConfig, on_episode: Listener | None = None
) -> list[EpisodeRecord]:
    """The oracle's episodes of ``refs`` that it solved (reward 1.0), in the order of ``refs``,
    played through ``harness``; ``on_episode`` sees every finished episode, solved or not."""
    engine = RolloutEngine(
        ScriptedPolicy("oracle"), harness=harness, config=EngineConfig(), on_episode=on_episode
    )

    async def play() -> None:
        try:
            await engine.run(refs)
        finally:
            await engine.aclose()

    asyncio.run(play())
    order = {ref.group_id: i for i, ref in enumerate(refs)}
    return sorted((r for r in engine.records if r.reward == 1.0), key=lambda r: order[r.group_id])


def demonstrations(refs: list[TaskRef], harness: HarnessConfig) -> list[list[ChatMessage]]:
    """The oracle's transcripts of ``refs`` (those it solved), as the model would see them."""
    return [r.messages for r in solved(refs, harness)]


def labelled(tokenizer: Any, messages: list[ChatMessage]) -> tuple[list[int], list[int]]:
    """A transcript's token ids, and labels that are the ids on the assistant's turns (its
    end-of-turn token included) and ``IGNORE`` elsewhere."""
    ids: list[int] = []
    labels: list[int] = []
    for i, message in enumerate(messages):
        upto = tokenizer.apply_chat_template(
            messages[: i + 1], tokenize=True, return_dict=False, add_generation_prompt=False
        )
        new = list(upto[len(ids) :])
        if message["role"] == "assistant":
            prompt = tokenizer.apply_chat_template(
                messages[:i], tokenize=True, return_dict=False, add_generation_prompt=True
            )
            head = len(prompt) - len(ids)  # the "<|im_start|>assistant\n" opening
            labels += [IGNORE] * head + new[head:]
        else:
            labels += [IGNORE] * len(new)
        ids += new
    return ids, labels


def warm_start(
    model: Any,
    tokenizer: Any,
    transcripts: list[list[ChatMessage]],
    *,
    epochs: int = 1,
    learning_rate: float = 5e-5,
    batch_size: int = 4,
    seed: int = 0,
) -> list[float]:
    """Fine-tune ``model`` in place on the transcripts, ``batch_size`` a step; returns the loss
    of each step."""
    import torch

    examples = [labelled(tokenizer, t) for t in transcripts]
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    losses: list[float] = []
    model.train()
    for _ in range(epochs):
        rng.shuffle(examples)
        for start in range(0, len(examples), batch_size):
            losses.append(backward(model, examples[start : start + batch_size]))
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
    model.eval()
    return losses


def backward(model: Any, batch: list[tuple[list[int], list[int]]]) -> float:
    """Add to ``model``'s gradients those of the batch's loss (the mean over its labelled
    tokens, as of the padded batch), and return that loss. Each transcript is its own forward
    pass, weighted by its labelled tokens: unpadded, attention needs no mask and runs causal,
    in memory linear in the length (a padded batch of four 3,000-token transcripts needs more
    than 24 GB). Logits are made only where a labelled token is predicted: a few hundred
    positions of thousands, each a row of the whole vocabulary."""
    import torch

    # the positions whose next token is labelled: where logits are made
    scored = [
        [at for at in range(len(ids) - 1) if labels[at + 1] != IGNORE] for ids, labels in batch
    ]
    total = sum(map(len, scored)) or 1
    loss_sum = 0.0
    for (ids, labels), at in zip(batch, scored, strict=True):
        if at:
            logits = model(input_ids=torch.tensor([ids]), logits_to_keep=torch.tensor(at))
            targets = torch.tensor([labels[i + 1] for i in at])
            loss = torch.nn.functional.cross_entropy(logits.logits[0].float(), targets)
            (loss * (len(at) / total)).backward()
            loss_sum += float(loss.detach()) * len(at) / total
    return loss_sum
