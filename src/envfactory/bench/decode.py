"""Batched decoding on the CPU, stock against envfactory's path, in one run.

A batch of replies over one shared prompt prefix, some rows padded (as concurrent episodes
are): transformers' dynamic cache (the prefix copied per row) and SDPA with repeated key and
value heads, against the shared prefix held once and attended once per step, the rest written
in place, and grouped attention (:mod:`envfactory.integrations.kv`). Same tokens, greedy; the
medians of ``repeats`` runs each, interleaved.
"""

from __future__ import annotations

import os
import time
from statistics import median

from pydantic import BaseModel


class DecodeBench(BaseModel):
    model: str
    batch: int
    prefix_tokens: int
    own_tokens: int
    new_tokens: int
    stock_s: float
    envfactory_s: float
    speedup: float
    same_tokens: bool
    load_avg: tuple[float, float, float]


def bench_decode(
    batch: int = 8, prefix: int = 1500, own: int = 200, new: int = 32, repeats: int = 2
) -> DecodeBench:
    import torch
    from transformers import DynamicCache

    from envfactory.integrations.embedded import load
    from envfactory.integrations.kv import GROUPED_SDPA, shared_prefix_cache

    local = load()
    model = local.model
    gen = torch.Generator().manual_seed(0)
    shared = torch.randint(100, 40_000, (1, prefix), generator=gen)
    ids = torch.cat([shared.expand(batch, -1), torch.randint(100, 40_000, (batch, own))], 1)
    mask = torch.ones_like(ids)
    mask[: batch // 2, prefix : prefix + own // 4] = 0  # half the rows padded
    with torch.no_grad():
        kept = model(shared, use_cache=True).past_key_values

    def stock_cache() -> DynamicCache:
        cache = DynamicCache()
        for i, layer in enumerate(kept.layers):
            keys, values = layer.keys.repeat(batch, 1, 1, 1), layer.values.repeat(batch, 1, 1, 1)
            cache.update(keys, values, i)
        return cache

    paths = {
        "stock": ("sdpa", stock_cache),
        "envfactory": (GROUPED_SDPA, lambda: shared_prefix_cache(kept, batch, own + new)),
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    tokens: dict[str, torch.Tensor] = {}
    try:
        for _ in range(repeats):
            for name, (attention, cache) in paths.items():
                model.set_attn_implementation(attention)
                start = time.perf_counter()
                with torch.no_grad():
                    out = model.generate(
                        ids, attention_mask=mask, past_key_values=cache(), max_new_tokens=new,
                        min_new_tokens=new, do_sample=False, pad_token_id=0,
                    )  # fmt: skip
                times[name].append(time.perf_counter() - start)
                tokens[name] = out
    finally:
        model.set_attn_implementation(GROUPED_SDPA)
    stock, ours = median(times["stock"]), median(times["envfactory"])
    return DecodeBench(
        model=local.name,
        batch=batch,
        prefix_tokens=prefix,
        own_tokens=own,
        new_tokens=new,
        stock_s=round(stock, 2),
        envfactory_s=round(ours, 2),
        speedup=round(stock / ours, 2),
        same_tokens=bool(torch.equal(tokens["stock"], tokens["envfactory"])),
        load_avg=os.getloadavg(),
    )
