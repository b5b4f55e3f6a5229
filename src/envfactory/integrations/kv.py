"""Cheaper batched decoding on the CPU: keys and values written in place, read once per step.

Two costs dominate a batch decoding step over a long shared prompt, and neither is arithmetic:

- transformers' dynamic cache concatenates each layer's keys and values with the new token's,
  a copy of the whole cache at every generated token. :func:`reserved_cache` holds them in
  buffers with room for the reply, written in place.
- with a padding mask, grouped-query attention repeats every key and value head for each query
  head that shares it (three copies for SmolLM2). :func:`grouped_sdpa` instead stacks the query
  heads of a group along the query axis, so each key and value head is read as it is.

Both give the same numbers as the stock paths (tests/integrations/test_kv.py).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

GROUPED_SDPA = "envfactory_grouped_sdpa"


class ReservedLayer(DynamicLayer):  # type: ignore[misc]
    """A layer's keys and values in buffers with room reserved for what comes next; the cache
    the model reads is a view of the filled part (the room doubles when it runs out)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self.filled = 0
        self._keys = keys.new_empty(*keys.shape[:2], keys.shape[2] + room, keys.shape[3])
        self._values = values.new_empty(*values.shape[:2], values.shape[2] + room, values.shape[3])
        self.update(keys, values)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        end = self.filled + key_states.shape[2]
        if end > self._keys.shape[2]:
            self._keys = _grown(self._keys, self.filled, end)
            self._values = _grown(self._values, self.filled, end)
        self._keys[:, :, self.filled : end] = key_states
        self._values[:, :, self.filled : end] = value_states
        self.filled = end
        self.keys = self._keys[:, :, :end]
        self.values = self._values[:, :, :end]
        return self.keys, self.values


def _grown(buffer: torch.Tensor, filled: int, needed: int) -> torch.Tensor:
    bigger = buffer.new_empty(*buffer.shape[:2], max(needed, 2 * buffer.shape[2]), buffer.shape[3])
    bigger[:, :, :filled] = buffer[:, :, :filled]
    return bigger


def reserved_cache(prefix: Cache, batch: int, room: int) -> Cache:
    """A cache holding ``prefix``'s keys and values once per row of a batch of ``batch``, with
    ``room`` more positions reserved per layer."""
    return Cache(
        layers=[
            ReservedLayer(
                layer.keys.expand(batch, -1, -1, -1), layer.values.expand(batch, -1, -1, -1), room
            )
            for layer in prefix.layers
        ]
    )


def grouped_sdpa(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Scaled dot-product attention for grouped-query heads under a mask, without repeating the
    keys and values: query ``[b, h, t, d]`` becomes ``[b, kv, (h / kv) * t, d]``, the query
    heads that share a key head one after another (as the stock path orders them)."""
    groups = query.shape[1] // key.shape[1]
    if attention_mask is None or groups == 1 or dropout or not torch.is_floating_point(query):
        stock: tuple[torch.Tensor, None] = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, **kwargs
        )
        return stock
    b, h, t, d = query.shape
    stacked = query.reshape(b, key.shape[1], groups * t, d)
    mask = attention_mask[..., : key.shape[2]]
    mask = mask.repeat(1, 1, groups, 1) if mask.shape[2] == t else mask
    out = torch.nn.functional.scaled_dot_product_attention(
        stacked, key, value, attn_mask=mask, scale=scaling
    )
    return out.reshape(b, h, t, d).transpose(1, 2).contiguous(), None


AttentionInterface.register(GROUPED_SDPA, grouped_sdpa)
AttentionMaskInterface.register(GROUPED_SDPA, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])


def use_grouped_sdpa(model: Any) -> None:
    """Make ``model`` (a transformers model on the CPU, attention through SDPA) attend with
    :func:`grouped_sdpa`."""
    if getattr(model.config, "_attn_implementation", None) == "sdpa":
        model.set_attn_implementation(GROUPED_SDPA)
