"""The CPU decoding shortcuts give the stock numbers: grouped-query attention without repeated
keys and values, and a cache that holds a shared prefix once and writes the rest in place (it
grows when its room runs out)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from envfactory.integrations.embedded import load
from envfactory.integrations.kv import GROUPED_SDPA, grouped_sdpa, shared_prefix_cache

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


@pytest.mark.parametrize("padded", [True, False])
def test_shared_prefix_generates_what_the_dynamic_cache_does(padded: bool) -> None:
    """Greedy tokens through the shared-prefix cache equal those through transformers' own
    cache holding the prefix once per row, with padding (rows of different lengths, and a room
    too small, so it grows) and without (no mask: causal within the rows' own parts)."""
    local = load()
    model = local.model
    assert model.config._attn_implementation == GROUPED_SDPA
    prefix = local.tokenizer.encode("You are a helpful assistant. Answer briefly.")
    other = " Name a colour." if padded else " What is the capital of Spain?"
    questions = [" What is the capital of France?", other]
    own = [local.tokenizer.encode(q) for q in questions]
    assert (len(own[0]) != len(own[1])) == padded
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
        shared = shared_prefix_cache(kept, batch=2, room=3 if padded else 64)
        assert torch.equal(generate(shared), generate(dynamic))
        assert shared.layers[0].prefix[0].shape[0] == 1  # held once, not per row


def test_prefixed_attention_matches_attention_over_the_whole_sequence() -> None:
    torch.manual_seed(1)
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True, training=False)
    cache = shared_prefix_cache(
        SimpleNamespace(layers=[SimpleNamespace(keys=torch.randn(1, 3, 12, 16),
                                                values=torch.randn(1, 3, 12, 16))]),
        batch=2, room=2,
    )  # fmt: skip
    layer = cache.layers[0]
    q = torch.randn(2, 9, 4, 16)
    own_k, own_v = layer.update(torch.randn(2, 3, 4, 16), torch.randn(2, 3, 4, 16))
    mask = torch.ones(2, 1, 4, 16, dtype=torch.bool).tril(diagonal=12)
    mask[0, :, :, 12:14] = False  # the first row's padding: its first two own tokens
    whole_k = torch.cat([layer.prefix[0].expand(2, -1, -1, -1), own_k], dim=2)
    whole_v = torch.cat([layer.prefix[1].expand(2, -1, -1, -1), own_v], dim=2)
    stock, _ = sdpa_attention_forward(module, q, whole_k, whole_v, mask, scaling=0.25)  # type: ignore[arg-type]
    ours, _ = grouped_sdpa(module, q, own_k, own_v, mask, scaling=0.25)  # type: ignore[arg-type]
    assert torch.allclose(ours[1], stock[1], atol=1e-5)
    assert torch.allclose(ours[0, 2:], stock[0, 2:], atol=1e-5)  # padding queries' outputs unused


def test_the_decode_benchmark_compares_like_with_like() -> None:
    """`bench --decode` at tiny sizes: every comparison (stock against envfactory's batch
    decoding, whole episodes read afresh against reused, waiting calls in split batches
    against one, a static batch against replies that leave it) gives the same tokens."""
    from envfactory.bench.decode import bench_decode

    got = bench_decode(
        batch=2, prefix=32, own=8, new=2, repeats=1, calls=3, observation=8, waiting=3,
        ragged=2, reply=8,
    )  # fmt: skip
    assert got.same_tokens and got.episode_same_tokens and got.one_batch_same_tokens
    assert got.leaving_same_tokens and len(got.ragged_reply_tokens) == 2
    assert got.episode_calls == 3 and got.episode_fresh_s > 0 and got.episode_reuse_s > 0
    assert got.waiting_calls == 3 and got.split_batches_s > 0 and got.one_batch_s > 0
