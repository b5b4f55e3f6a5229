"""The loss with each distinct prompt read once gives the stock loss's log-probabilities,
entropies and gradients: on the tiny model, a batch of two groups of rows (one prompt
left-padded, rows in mixed order, completions of different lengths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envfactory.training.grpo_cpu import TrainSettings, trainer_for

pytestmark = pytest.mark.integrations


def test_shared_prompts_give_the_stock_log_probabilities_and_gradients(tiny: Path) -> None:
    import copy

    import torch
    from trl import GRPOTrainer

    from envfactory.integrations.embedded import load
    from envfactory.training.shared_prompt import SharedPromptGRPOTrainer

    local = load(tiny)  # kept by the loader for every caller: trained here as a copy
    s = TrainSettings(worlds=["hotel"], steps=1, prompts_per_step=2, group_size=2, threads=1)
    trainer, _ = trainer_for(copy.deepcopy(local.model), local.tokenizer, local.stop_ids, s)
    assert isinstance(trainer, SharedPromptGRPOTrainer)
    model, pad = trainer.model, local.tokenizer.pad_token_id or 0
    torch.manual_seed(0)
    vocab = model.config.vocab_size
    long, short = torch.randint(3, vocab, (12,)), torch.randint(3, vocab, (9,))
    short = torch.cat([torch.full((3,), pad), short])  # left-padded to the long prompt
    completions = torch.randint(3, vocab, (5, 6))
    prompts = torch.stack([long, short, long, short, long])  # groups interleaved
    prompt_mask = torch.stack([torch.ones(12), (short != pad).float()] * 2 + [torch.ones(12)])
    completion_mask = torch.ones(5, 6)
    completion_mask[1, 4:] = 0  # replies of different lengths: right padding
    completion_mask[4, 2:] = 0
    input_ids = torch.cat([prompts, completions], dim=1)
    mask = torch.cat([prompt_mask, completion_mask], dim=1).long()

    def measured(method: object) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        model.zero_grad()
        logps, entropies, _ = method(trainer, model, input_ids, mask, 6, compute_entropy=True)  # type: ignore[operator]
        (logps * completion_mask).sum().backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        return logps.detach(), entropies.detach(), grads

    stock = measured(GRPOTrainer._get_per_token_logps_and_entropies)
    shared = measured(SharedPromptGRPOTrainer._get_per_token_logps_and_entropies)
    assert stock[0].shape == shared[0].shape == (5, 6)
    kept = completion_mask.bool()
    assert torch.allclose(stock[0][kept], shared[0][kept], atol=1e-5)
    assert torch.allclose(stock[1][kept], shared[1][kept], atol=1e-5)
    assert len(stock[2]) == len(shared[2]) == len(list(model.parameters()))
    for ours, theirs in zip(shared[2], stock[2], strict=True):
        assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-4)


def test_a_steps_shuffled_rows_are_regrouped_by_prompt() -> None:
    """TRL shuffles a step's rows before it splits them into micro-batches: regrouped, each
    micro-batch holds one prompt's rows, every row keeps its own values (tensors and lists
    alike) and the step's totals stay as they were."""
    import torch

    from envfactory.training.shared_prompt import by_prompt

    prompts = torch.tensor([[7, 1], [5, 2], [7, 1], [6, 3], [5, 2], [6, 3]])  # shuffled
    parts = [
        {
            "prompt_ids": prompts[i : i + 2],
            "advantages": torch.arange(6.0)[i : i + 2],
            "tasks": ["a", "b", "a", "c", "b", "c"][i : i + 2],
            "num_items_in_batch": torch.tensor(42),
            "tool_mask": None,
        }
        for i in (0, 2, 4)
    ]
    regrouped = by_prompt(parts)
    assert len(regrouped) == 3
    for part in regrouped:
        assert len({tuple(row) for row in part["prompt_ids"].tolist()}) == 1
        assert len(set(part["tasks"])) == 1
        assert part["num_items_in_batch"] == 42 and part["tool_mask"] is None
    rows = sorted(
        (tuple(p.tolist()), float(a), t)
        for part in regrouped
        for p, a, t in zip(part["prompt_ids"], part["advantages"], part["tasks"], strict=True)
    )
    given = sorted(zip(map(tuple, prompts.tolist()), map(float, range(6)), "abacbc", strict=True))
    assert rows == given
