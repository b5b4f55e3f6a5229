"""The supervised warm start: the oracle's train transcripts, loss on the assistant's tokens
only, each transcript its own forward pass with the padded batch's gradients."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from envfactory.rollout.types import TaskRef
from envfactory.training.grpo_cpu import HARNESS, TrainSettings, run
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


def test_a_warm_started_run_reports_the_model_as_given_after_sft_and_after_grpo(
    tiny: Path, tmp_path: Path
) -> None:
    s = TrainSettings(
        worlds=["hotel"], eval_worlds=["airline"], steps=1, prompts_per_step=1, group_size=2,
        eval_tasks=2, max_new_tokens=16, threads=1, sft_tasks=3,
    )  # fmt: skip
    result = run(s, tmp_path, str(tiny), name="warm")
    assert result["sft_demonstrations"] == 3  # the oracle solved the three train tasks shown
    first, last = result["sft_loss"]
    assert first > 0 and last > 0
    for stage in ("base", "before", "after"):
        assert result[stage]["tasks"] == 2 and result[stage]["split"] == "test"
    gain = result["before"]["success"] - result["base"]["success"]
    assert result["sft_gain"] == pytest.approx(gain)
    assert (tmp_path / "warm.json").is_file() and (tmp_path / "warm.png").stat().st_size > 0
