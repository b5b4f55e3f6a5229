"""GRPO's loss with each distinct prompt read once: a group's episodes share their prompt (the
task's request under the world's system prompt and tools, most of each sequence), so the
model runs over it once, its keys and values (with their gradients) are repeated for the
group's rows, and only the completions are run per row. The per-token log-probabilities are
TRL's (its fused head, temperature and masks), and so are their gradients: the prompt's part
reaches the weights through the repeated keys and values, summed over the rows as the stock
path sums them.
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer


class SharedPromptGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
    """``GRPOTrainer`` whose loss runs the model over each distinct prompt of a batch once."""

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
