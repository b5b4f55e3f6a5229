"""GRPO's loss with each distinct prompt read once: a group's episodes share their prompt (the
task's request under the world's system prompt and tools, most of each sequence), so the
model runs over it once, its keys and values (with their gradients) are repeated for the
group's rows, and only the completions are run per row. The per-token log-probabilities are
TRL's (its fused head, temperature and masks), and so are their gradients: the prompt's part
reaches the weights through the repeated keys and values, summed over the rows as the stock
path sums them. TRL shuffles a step's rows before it splits them into micro-batches; here they
are regrouped so that a group's rows share a micro-batch (the step's gradient is the sum over
its micro-batches, so the update is the same).
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer
from trl.trainer.utils import split_tensor_dict

Rows = dict[str, Any]  # a batch: tensors and lists by row, 0-dim tensors for the whole


def _joined(values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, list):
        return [row for v in values for row in v]
    if isinstance(first, torch.Tensor) and first.ndim > 0:
        return torch.cat(values)
    return first  # None, or a 0-dim tensor of the whole step


def _picked(value: Any, order: torch.Tensor) -> Any:
    if isinstance(value, list):
        return [value[i] for i in order.tolist()]
    if isinstance(value, torch.Tensor) and value.ndim > 0:
        return value[order]
    return value


def by_prompt(parts: list[Rows]) -> list[Rows]:
    """The micro-batches ``parts`` of one step with their rows regrouped by prompt (a stable
    sort), so that rows with one prompt are in one micro-batch where they fit."""
    whole = {key: _joined([p[key] for p in parts]) for key in parts[0]}
    _, which = torch.unique(whole["prompt_ids"], dim=0, return_inverse=True)
    order = torch.argsort(which, stable=True)
    regrouped = {key: _picked(value, order) for key, value in whole.items()}
    return split_tensor_dict(regrouped, len(parts))  # type: ignore[no-any-return]


class SharedPromptGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
    """``GRPOTrainer`` whose loss runs the model over each distinct prompt of a batch once."""

    _buffered_inputs: list[Rows] | None

    def _prepare_inputs(self, generation_batch: Any) -> Any:
        every = self.args.steps_per_generation * self.num_iterations
        fresh = self.model.training and (self._step % every == 0 or self._buffered_inputs is None)
        inputs = super()._prepare_inputs(generation_batch)
        if fresh:  # the step's rows were generated, shuffled and split just now
            assert self._buffered_inputs is not None  # set by the call above
            self._buffered_inputs = by_prompt(self._buffered_inputs)
            inputs = self._buffered_inputs[self._step % self.args.steps_per_generation]
        return inputs

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **media: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        head = input_ids.size(1) - logits_to_keep - 1  # the prompt less its last token
        if compute_aux_loss or head < 1 or any(v is not None for v in media.values()):
            return super()._get_per_token_logps_and_entropies(  # type: ignore[no-any-return]
                model, input_ids, attention_mask, logits_to_keep, batch_size,
                compute_entropy, compute_aux_loss, **media,
            )  # fmt: skip
        prompts = torch.cat([input_ids[:, :head], attention_mask[:, :head]], dim=1)
        _, which = torch.unique(prompts, dim=0, return_inverse=True)
        parts, order = [], []
        for group in range(int(which.max()) + 1):
            rows = (which == group).nonzero().squeeze(1)
            parts.append(
                self._rows_of_one_prompt(model, input_ids[rows], attention_mask[rows], head)
            )
            order.append(rows)
        back = torch.argsort(torch.cat(order))  # the groups' rows back in the batch's order
        logps = torch.cat([p.log_probs for p in parts])[back][:, -logits_to_keep:]
        entropies = None
        if compute_entropy:
            entropies = torch.cat([p.entropy for p in parts])[back][:, -logits_to_keep:]
        return logps, entropies, None

    def _rows_of_one_prompt(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, head: int
    ) -> Any:
        """TRL's fused output for rows that share their first ``head`` tokens (and mask): those
        read once, the rest (the prompt's last token, then the completion) per row."""
        with self.accelerator.autocast():
            cache = model(
                input_ids=input_ids[:1, :head],
                attention_mask=attention_mask[:1, :head],
                use_cache=True,
                logits_to_keep=1,
            ).past_key_values
            cache.batch_repeat_interleave(input_ids.size(0))
            tail = input_ids[:, head:]
            labels = tail.masked_fill(attention_mask[:, head:] == 0, -100)
            labels[:, 0] = -100  # the prompt's last token is not scored
            return model(
                input_ids=tail,
                attention_mask=attention_mask,
                past_key_values=cache,
                labels=labels,
                fused_lm_head=True,
            )
