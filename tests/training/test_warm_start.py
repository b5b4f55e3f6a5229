"""The supervised warm start: the oracle's train transcripts, loss on the assistant's tokens
only, each transcript its own forward pass with the padded batch's gradients."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from envfactory.rollout.types import TaskRef
from envfactory.training.grpo_cpu import HARNESS
from envfactory.training.sft import IGNORE, backward, demonstrations, labelled, warm_start

pytestmark = pytest.mark.integrations


def test_the_labels_are_the_assistants_tokens_and_the_step_is_the_padded_batchs(
    tiny: Path,
) -> None:
    import torch

    from envfactory.integrations.embedded import load

    local = load(tiny)  # kept by the loader for every caller: trained here as a copy
    shown = demonstrations([TaskRef("hotel", "train", 1, i) for i in range(3)], HARNESS)
    assert len(shown) == 3  # the oracle solves each, two calls in two turns
    examples = [labelled(local.tokenizer, t) for t in shown]
    for (ids, labels), transcript in zip(examples, shown, strict=True):
        assert len(ids) == len(labels)
        kept = [i for i, lab in zip(ids, labels, strict=True) if lab != IGNORE]
        said = local.tokenizer.decode(kept)
        for message in transcript:
            assert (message["role"] == "assistant") == (message["content"] in said)
    assert len({len(ids) for ids, _ in examples}) > 1  # lengths differ: a padded batch pads

    model = copy.deepcopy(local.model)
    model.zero_grad()
    loss = backward(model, examples)
    ours = [p.grad.clone() for p in model.parameters()]

    model.zero_grad()
    width = max(len(ids) for ids, _ in examples)
    pad = local.tokenizer.pad_token_id or 0
    padded = model(
        input_ids=torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in examples]),
        attention_mask=torch.tensor(
            [[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in examples]
        ),
        labels=torch.tensor([lab + [IGNORE] * (width - len(lab)) for _, lab in examples]),
    ).loss
    padded.backward()
    assert loss == pytest.approx(float(padded.detach()), rel=1e-5)
    for mine, theirs in zip(ours, (p.grad for p in model.parameters()), strict=True):
        assert torch.allclose(mine, theirs, atol=1e-6, rtol=1e-4)

    losses = warm_start(model, local.tokenizer, shown, epochs=8, learning_rate=1e-2, batch_size=3)
    assert len(losses) == 8 and losses[-1] < 0.8 * losses[0]  # it learns the transcripts
    assert not model.training
