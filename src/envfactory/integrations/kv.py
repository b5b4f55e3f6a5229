"""Cheaper batched decoding on the CPU: a shared prompt's keys and values held once and read
once per step, the rest written in place.

Three costs dominate a batch decoding step over a long shared prompt, and none is arithmetic:

- transformers' dynamic cache concatenates each layer's keys and values with the new token's,
  a copy of the whole cache at every generated token. :func:`shared_prefix_cache` writes each
  row's own keys and values into buffers with room for the reply, in place.
- a batch over one shared prefix (the system prompt) held it once per row, and every row read
  its own copy at every step. The cache holds it once; :func:`grouped_sdpa` attends every row's
  queries to it in one product, attends each row to its own part under the padding mask, and
  merges the two by their log-sum-exp (as split or "cascade" attention does).
- with a padding mask, grouped-query attention repeats every key and value head for each query
  head that shares it (three copies for SmolLM2). :func:`grouped_sdpa` instead stacks the query
  heads of a group along the query axis, so each key and value head is read as it is.

They give the stock numbers (tests/integrations/test_kv.py).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface
from transformers.cache_utils import Cache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

GROUPED_SDPA = "envfactory_grouped_sdpa"


class SharedPrefixLayer(DynamicLayer):  # type: ignore[misc]
    """A layer's keys and values as a prefix shared by every row of the batch (``[1, kv, p,
    d]``, held once) and each row's own part, in buffers with room reserved for what comes
    next (the room doubles when it runs out). ``update`` returns the rows' own parts, each
    carrying the shared prefix as ``.prefix`` for :func:`grouped_sdpa`, the only attention that
    reads it."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, batch: int, room: int) -> None:
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self.prefix = (keys, values)
        self.filled = 0
        self._keys = keys.new_empty(batch, keys.shape[1], room, keys.shape[3])
        self._values = values.new_empty(batch, values.shape[1], room, values.shape[3])

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
        self.keys.prefix = self.prefix
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return int(self.prefix[0].shape[2]) + self.filled

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows ``indices`` (the shared prefix stays as it is)."""
        self._keys = self._keys[indices]
        self._values = self._values[indices]


def _grown(buffer: torch.Tensor, filled: int, needed: int) -> torch.Tensor:
    bigger = buffer.new_empty(*buffer.shape[:2], max(needed, 2 * buffer.shape[2]), buffer.shape[3])
    bigger[:, :, :filled] = buffer[:, :, :filled]
    return bigger


def shared_prefix_cache(prefix: Cache, batch: int, room: int) -> Cache:
    """A cache for a batch of ``batch`` rows that all start with ``prefix`` (a one-row cache),
    held once, with ``room`` positions reserved per row for the rest. Only a model attending
    with :func:`grouped_sdpa` can read it (see :func:`use_grouped_sdpa`)."""
    return Cache(
        layers=[SharedPrefixLayer(layer.keys, layer.values, batch, room) for layer in prefix.layers]
    )


_attend_with_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def _merged(
    first: tuple[torch.Tensor, torch.Tensor], second: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """Attention over two disjoint key sets from each one's output and log-sum-exp."""
    (out_a, lse_a), (out_b, lse_b) = first, second
    top = torch.maximum(lse_a, lse_b)
    w_a, w_b = torch.exp(lse_a - top).unsqueeze(-1), torch.exp(lse_b - top).unsqueeze(-1)
    return (out_a * w_a + out_b * w_b) / (w_a + w_b)


OwnMask = tuple[torch.Tensor, torch.Tensor]  # additive bias [b or 1, 1, n, own]; blind queries
_last_own_mask: tuple[Any, tuple[Any, ...], OwnMask] | None = None  # the last mask built


def _own_mask(
    attention_mask: torch.Tensor | None,
    t: int,
    past: int,
    own: int,
    groups: int,
    dtype: torch.dtype,
) -> OwnMask:
    """The mask of the rows' own keys (after ``past`` shared ones) for ``t`` queries of each of
    ``groups`` stacked heads: an additive bias (0 where seen, -inf where not) and the queries
    that see none of them. Every layer of a forward pass gets the same mask, so the last one
    built is kept and reused while the same mask comes back (it is held, so no other tensor
    can take its identity)."""
    global _last_own_mask
    shape = (t, past, own, groups, dtype)
    last = _last_own_mask
    if last is not None and last[0] is attention_mask and last[1] == shape:
        return last[2]
    if attention_mask is None:  # no padding: causal within the rows' own parts
        seen = torch.ones(1, 1, t, own, dtype=torch.bool).tril(own - t)
    else:
        mask = attention_mask[..., : past + own][..., -own:]
        seen = mask if mask.dtype == torch.bool else mask == 0
    seen = seen.repeat(1, 1, groups, 1) if seen.shape[2] == t else seen
    built = (torch.zeros(seen.shape, dtype=dtype).masked_fill(~seen, -torch.inf), ~seen.any(-1))
    _last_own_mask = (attention_mask, shape, built)
    return built


def _prefixed_attention(
    stacked: torch.Tensor,
    prefix: tuple[torch.Tensor, torch.Tensor],
    key: torch.Tensor,
    value: torch.Tensor,
    own_mask: OwnMask,
    scaling: float | None,
) -> torch.Tensor:
    """``stacked`` queries ``[b, kv, n, d]`` over the shared ``prefix`` keys and values (every
    row's queries in one product, no mask: a prefix has no padding) and over each row's own
    ``key`` and ``value`` under ``own_mask``."""
    b, kv, n, d = stacked.shape
    flat = stacked.transpose(0, 1).reshape(1, kv, b * n, d)
    out, lse = _attend_with_lse(flat, *prefix, 0.0, False, scale=scaling)[:2]
    on_prefix = (out.reshape(kv, b, n, d).transpose(0, 1), lse.reshape(kv, b, n).transpose(0, 1))
    bias, blind = own_mask
    out, lse = _attend_with_lse(stacked, key, value, 0.0, False, attn_mask=bias, scale=scaling)[:2]
    lse = lse.masked_fill(blind, -torch.inf)  # a padding query sees none of its own
    return _merged(on_prefix, (out, lse))


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
    heads that share a key head one after another (as the stock path orders them). Keys from a
    :func:`shared_prefix_cache` carry their shared prefix, attended once for the batch."""
    groups = query.shape[1] // key.shape[1]
    prefix = getattr(key, "prefix", None)
    b, h, t, d = query.shape
    stacked = query.reshape(b, key.shape[1], groups * t, d)
    if prefix is not None:
        past, own = prefix[0].shape[2], key.shape[2]
        own_mask = _own_mask(attention_mask, t, past, own, groups, query.dtype)
        out = _prefixed_attention(stacked, prefix, key, value, own_mask, scaling)
    elif attention_mask is None or groups == 1 or dropout or not torch.is_floating_point(query):
        stock: tuple[torch.Tensor, None] = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, **kwargs
        )
        return stock
    else:
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
