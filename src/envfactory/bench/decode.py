"""Batched decoding on the CPU, stock against envfactory's path, in one run.

A batch of replies over one shared prompt prefix, some rows padded (as concurrent episodes
are): transformers' dynamic cache (the prefix copied per row) and SDPA with repeated key and
value heads, against the shared prefix held once and attended once per step, the rest written
in place, and grouped attention (:mod:`envfactory.integrations.kv`). Same tokens, greedy; the
medians of ``repeats`` runs each, interleaved.

Then whole episodes: ``batch`` episodes of ``calls`` calls each through
:class:`~envfactory.integrations.local_model.TransformersPolicy`, every prompt the last one,
its reply and ``observation`` new tokens, with each episode's earlier keys and values reused
against every prompt read afresh (same tokens, greedy; medians, interleaved).

Last, ``waiting`` calls queued at once (a calibration cell's ten episodes), generated in
batches of at most 8 (8 + 2) against all in one batch: a decoding step on the CPU costs
mostly the reading of the weights, whatever the rows, so a straggler batch costs nearly a
full one (same tokens, greedy; medians, interleaved).

And ``ragged`` real requests (retail's, under its shared system prompt) whose replies end at
different lengths: a static batch (``model.generate``: every row decoded, padding, until the
longest reply ends) against envfactory's decoding, where a reply that ends leaves the batch
(same tokens, greedy; medians, interleaved).
"""

from __future__ import annotations

import asyncio
import os
import time
from statistics import median
from typing import Any

from pydantic import BaseModel, Field


def unavailable() -> str | None:
    """Why the embedded model cannot be decoded here (its package is missing), or None."""
    from envfactory.integrations.embedded import ModelNotFound, embedded_path

    try:
        embedded_path()
    except ModelNotFound as exc:
        return str(exc)
    return None


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
    episode_calls: int
    observation_tokens: int
    episode_fresh_s: float
    episode_reuse_s: float
    episode_speedup: float
    episode_same_tokens: bool
    waiting_calls: int
    split_batches_s: float = Field(description="the waiting calls in batches of 8 at most")
    one_batch_s: float = Field(description="the waiting calls in one batch")
    one_batch_speedup: float
    one_batch_same_tokens: bool
    ragged_calls: int
    ragged_reply_tokens: list[int] = Field(description="each reply's length, of at most 96")
    static_batch_s: float = Field(description="model.generate: every row to the last step")
    leaving_batch_s: float = Field(description="envfactory: a reply that ends leaves the batch")
    leaving_speedup: float
    leaving_same_tokens: bool
    load_avg: tuple[float, float, float]


def _episodes(
    local: Any,
    prefix: list[int],
    own: list[list[int]],
    observations: list[list[list[int]]],
    new: int,
    reuse: bool,
) -> list[list[int]]:
    """Every reply of ``len(own)`` greedy episodes run side by side: each call's prompt is the
    shared ``prefix``, the episode's tokens so far, and its next observation after the first."""
    from envfactory.integrations.local_model import Kept

    policy = _greedy(local, new, max_batch=len(own), reuse=reuse)
    sofar = [list(o) for o in own]
    kept: list[Kept | None] = [None] * len(own)
    replies: list[list[int]] = []

    async def call() -> list[Any]:
        calls = (
            policy.generate(prefix + s, len(prefix), None, k)
            for s, k in zip(sofar, kept, strict=True)
        )
        return list(await asyncio.gather(*calls))

    for step in range(len(observations[0])):
        for row, out in enumerate(asyncio.run(call())):
            kept[row] = out.kept
            replies.append(out.output_ids)
            sofar[row] += out.output_ids + observations[row][step]
    return replies


def _greedy(local: Any, new: int, max_batch: int, reuse: bool = True) -> Any:
    """A greedy :class:`TransformersPolicy` over the loaded model ``local``."""
    from envfactory.integrations.local_model import TransformersPolicy

    return TransformersPolicy(
        local.model, local.tokenizer, temperature=0, max_new_tokens=new,
        stop_ids=local.stop_ids, max_batch=max_batch, reuse=reuse,
    )  # fmt: skip


def _waiting_calls(
    policies: dict[int, Any], prefix: list[int], own: list[list[int]], repeats: int
) -> tuple[dict[int, float], dict[int, list[list[int]]]]:
    """The median seconds, and the replies, of the calls ``prefix + own[i]`` queued at once,
    under each policy (keyed by its ``max_batch``), interleaved."""

    async def together(policy: Any) -> list[list[int]]:
        calls = (policy.generate(prefix + o, len(prefix)) for o in own)
        return [g.output_ids for g in await asyncio.gather(*calls)]

    for policy in policies.values():  # the shared prefix read and kept before timing
        asyncio.run(together(policy))
    runs: dict[int, list[float]] = {n: [] for n in policies}
    replies: dict[int, list[list[int]]] = {}
    for _ in range(repeats):
        for n, policy in policies.items():
            start = time.perf_counter()
            replies[n] = asyncio.run(together(policy))
            runs[n].append(time.perf_counter() - start)
    return {n: median(t) for n, t in runs.items()}, replies


def _ragged_calls(
    local: Any, calls: int, new: int, repeats: int
) -> tuple[float, float, list[list[int]], list[list[int]]]:
    """The median seconds of ``calls`` retail requests (validation, difficulty 1) decoded
    together over their shared system prompt, greedy, as a static batch and with finished
    replies leaving, interleaved; and each way's replies."""
    import torch

    import envfactory
    from envfactory.harness.config import HarnessConfig
    from envfactory.harness.prompt import exposed_tools, opening

    policy = _greedy(local, new, max_batch=calls)
    env, harness = envfactory.make("retail"), HarnessConfig(tool_format="text")
    prompts = []
    for i in range(calls):
        public = env.task("validation", 1, i).public
        tools = exposed_tools(public, env.tools("openai"), harness)
        prompts.append(policy.encode(opening(public, tools, harness)))
    shared = next((i for i, t in enumerate(zip(*prompts, strict=False)) if len(set(t)) > 1), 0)
    prefix = prompts[0][:shared]  # the system prompt

    def static() -> list[list[int]]:
        batch = policy._batch(prompts, prefix, None)
        with torch.no_grad():
            out = local.model.generate(
                batch.ids, attention_mask=batch.mask, past_key_values=batch.cache,
                max_new_tokens=new, do_sample=False, top_p=None, top_k=None, temperature=None,
                pad_token_id=0, eos_token_id=list(local.stop_ids),
            )  # fmt: skip
        rows = out[:, batch.ids.shape[1] :].tolist()
        ends = [next((i + 1 for i, t in enumerate(r) if t in local.stop_ids), None) for r in rows]
        return [r[:end] for r, end in zip(rows, ends, strict=True)]

    def leaving() -> list[list[int]]:
        return [g.output_ids for g in policy._generate(prompts, prefix)]

    ways = {"static": static, "leaving": leaving}
    leaving()  # the system prompt read and kept before timing
    runs: dict[str, list[float]] = {name: [] for name in ways}
    replies: dict[str, list[list[int]]] = {}
    for _ in range(repeats):
        for name, way in ways.items():
            start = time.perf_counter()
            replies[name] = way()
            runs[name].append(time.perf_counter() - start)
    return median(runs["static"]), median(runs["leaving"]), replies["static"], replies["leaving"]


def bench_decode(
    batch: int = 8,
    prefix: int = 1500,
    own: int = 200,
    new: int = 32,
    repeats: int = 2,
    calls: int = 6,
    observation: int = 200,
    waiting: int = 10,
    ragged: int = 10,
    reply: int = 96,
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
    rows = 2  # episodes side by side
    opening = [ids[row, prefix:].tolist() for row in range(rows)]
    seen = [
        [torch.randint(100, 40_000, (observation,), generator=gen).tolist() for _ in range(calls)]
        for _ in range(rows)
    ]
    runs: dict[bool, list[float]] = {True: [], False: []}
    replies: dict[bool, list[list[int]]] = {}
    for _ in range(repeats):
        for reuse in (False, True):
            start = time.perf_counter()
            replies[reuse] = _episodes(local, shared[0].tolist(), opening, seen, new, reuse)
            runs[reuse].append(time.perf_counter() - start)
    fresh, reused = median(runs[False]), median(runs[True])
    split, whole = min(8, waiting - 1), waiting
    policies = {n: _greedy(local, new, max_batch=n) for n in (split, whole)}
    queued = [torch.randint(100, 40_000, (own,), generator=gen).tolist() for _ in range(waiting)]
    batched, answers = _waiting_calls(policies, shared[0].tolist(), queued, repeats)
    stock, ours = median(times["stock"]), median(times["envfactory"])
    static_s, leaving_s, static, leaving = _ragged_calls(local, ragged, reply, repeats)
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
        episode_calls=calls,
        observation_tokens=observation,
        episode_fresh_s=round(fresh, 2),
        episode_reuse_s=round(reused, 2),
        episode_speedup=round(fresh / reused, 2),
        episode_same_tokens=replies[True] == replies[False],
        waiting_calls=waiting,
        split_batches_s=round(batched[split], 2),
        one_batch_s=round(batched[whole], 2),
        one_batch_speedup=round(batched[split] / batched[whole], 2),
        one_batch_same_tokens=answers[split] == answers[whole],
        ragged_calls=ragged,
        ragged_reply_tokens=[len(r) for r in leaving],
        static_batch_s=round(static_s, 2),
        leaving_batch_s=round(leaving_s, 2),
        leaving_speedup=round(static_s / leaving_s, 2),
        leaving_same_tokens=static == leaving,
        load_avg=os.getloadavg(),
    )
