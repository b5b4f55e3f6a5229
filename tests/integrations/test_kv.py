"""The CPU decoding shortcuts give the stock numbers: grouped-query attention without repeated
keys and values, and a cache written in place (it grows when its room runs out)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from envfactory.integrations.embedded import load
from envfactory.integrations.kv import GROUPED_SDPA, grouped_sdpa, reserved_cache

pytestmark = pytest.mark.integrations


@pytest.mark.parametrize("queries", [1, 7])
def test_grouped_attention_matches_the_stock_path_under_a_padding_mask(queries: int) -> None:
    torch.manual_seed(0)
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True, training=False)
    q = torch.randn(2, 9, queries, 16)
    k, v = torch.randn(2, 3, 20, 16), torch.randn(2, 3, 20, 16)
    mask = torch.ones(2, 1, queries, 20, dtype=torch.bool).tril(diagonal=20 - queries)
    mask[0, :, :, 3:8] = False  # the first row's padding
    stock, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=0.25)  # type: ignore[arg-type]
    grouped, _ = grouped_sdpa(module, q, k, v, mask, scaling=0.25)  # type: ignore[arg-type]
    assert grouped.shape == stock.shape == (2, queries, 9, 16)
    assert torch.allclose(grouped, stock, atol=1e-6)


def test_the_reserved_cache_generates_what_the_dynamic_cache_does() -> None:
    local = load()
    model = local.model
    assert model.config._attn_implementation == GROUPED_SDPA
    prefix = local.tokenizer.encode("You are a helpful assistant. Answer briefly.")
    own = [
        local.tokenizer.encode(" What is the capital of France?"),
        local.tokenizer.encode(" Name a colour."),
    ]
    width = max(map(len, own))
    pad = local.tokenizer.pad_token_id
    ids = torch.tensor([prefix + [pad] * (width - len(o)) + o for o in own])
    mask = torch.tensor([[1] * len(prefix) + [0] * (width - len(o)) + [1] * len(o) for o in own])
    with torch.no_grad():
        kept = model(torch.tensor([prefix]), use_cache=True).past_key_values

        def generate(cache: object) -> torch.Tensor:
            out = model.generate(
                ids, attention_mask=mask, past_key_values=cache, max_new_tokens=10,
                min_new_tokens=10, do_sample=False, pad_token_id=pad,
            )  # fmt: skip
            return out[:, ids.shape[1] :]

        dynamic = DynamicCache()
        for i, layer in enumerate(kept.layers):
            dynamic.update(layer.keys.repeat(2, 1, 1, 1), layer.values.repeat(2, 1, 1, 1), i)
        reserved = reserved_cache(kept, batch=2, room=3)  # too little: it must grow
        assert torch.equal(generate(reserved), generate(dynamic))
    layer = reserved.layers[0]
    assert layer.filled == len(prefix) + width + 9 and layer.keys.shape[2] == layer.filled
