"""A rollout policy backed by a transformers model in this process.

It renders each call's context with the tokenizer's chat template, samples with
``model.generate`` and records the exact prompt ids, output ids and the sampler's logprob of
every output token, so its episodes are token-faithful like a vLLM server's. Tool calls are
read from the reply's text (Hermes / Qwen ``<tool_call>`` blocks): run it with
``HarnessConfig(tool_format="text")``.

Calls from concurrent episodes are batched: whatever calls are waiting when the model is free
(up to ``max_batch``) are generated together, left-padded, in a worker thread, so the event
loop keeps stepping environments meanwhile. :meth:`TransformersPolicy.from_path` loads the
embedded model or any local one (:mod:`envfactory.integrations.embedded`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envfactory.episode.types import Message
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest, RawAction
from envfactory.trajectory.record import ModelInfo


@dataclass
class Generated:
    """One reply: its tokens (up to and with the stop token) and their logprobs."""

    output_ids: list[int]
    logprobs: list[float]
    stopped: bool  # ended on a stop token (else on the token limit)


@dataclass
class _Call:
    prompt_ids: list[int]
    done: asyncio.Future[Generated] = field(repr=False)


class TransformersSession:
    def __init__(self, policy: TransformersPolicy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.final = ctx.harness.text_reply == "final"

    def replay(self, observations: list[Any]) -> None:
        return None  # stateless: the transcript is the whole state

    async def act(self, request: PolicyRequest) -> PolicyReply:
        p = self.policy
        prompt_ids = [int(t) for t in p.encode(request.messages)]
        out = await p.generate(prompt_ids)
        text = p.tokenizer.decode(out.output_ids, skip_special_tokens=True)
        plain, calls = parse_tool_calls(text)
        actions: list[RawAction] = list(calls)
        if not actions:
            actions.append(Message(content=plain, final=self.final))
        return PolicyReply(
            message={"role": "assistant", "content": text},
            actions=actions,
            prompt_ids=prompt_ids,
            output_ids=out.output_ids,
            output_logprobs=out.logprobs,
            finish_reason="stop" if out.stopped else "length",
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(out.output_ids),
        )


class TransformersPolicy:
    """``model`` (a causal LM) and its ``tokenizer`` (with a chat template) as a rollout
    policy. ``temperature`` 0 decodes greedily; ``stop_ids`` end a reply (default: the
    tokenizer's end of text)."""

    local = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        name: str | None = None,
        stop_ids: tuple[int, ...] | None = None,
        max_batch: int = 8,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name or str(getattr(model.config, "name_or_path", "") or "local-model")
        self.stop_ids = stop_ids or (tokenizer.eos_token_id,)
        self.max_batch = max_batch
        self._waiting: list[_Call] = []
        self._worker: asyncio.Task[None] | None = None

    @classmethod
    def from_path(cls, path: str | Path | None = None, **options: Any) -> TransformersPolicy:
        """The model at ``path`` (a folder or ``.gguf`` file; None: the embedded model)."""
        from envfactory.integrations.embedded import load

        local = load(path)
        return cls(
            local.model, local.tokenizer, name=local.name, stop_ids=local.stop_ids, **options
        )

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(
            name=self.name,
            provider="transformers",
            tool_format="text",
            sampling={"temperature": self.temperature, "max_new_tokens": self.max_new_tokens},
        )

    def encode(self, messages: list[dict[str, Any]]) -> list[int]:
        """The prompt ids of a context: the chat template with the generation prompt."""
        ids = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        return list(ids)

    def session(self, ctx: EpisodeContext) -> TransformersSession:
        return TransformersSession(self, ctx)

    async def generate(self, prompt_ids: list[int]) -> Generated:
        """One reply to ``prompt_ids``, generated in a batch with the calls waiting beside it."""
        call = _Call(prompt_ids, asyncio.get_running_loop().create_future())
        self._waiting.append(call)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await call.done

    async def _drain(self) -> None:
        while self._waiting:
            await asyncio.sleep(0)  # let the episodes that are ready queue their calls too
            batch, self._waiting = (
                self._waiting[: self.max_batch],
                self._waiting[self.max_batch :],
            )
            try:
                outs = await asyncio.to_thread(self._generate, [c.prompt_ids for c in batch])
            except Exception as exc:  # every caller hears of it
                for c in batch:
                    c.done.set_exception(exc)
                continue
            for c, out in zip(batch, outs, strict=True):
                c.done.set_result(out)

    def _generate(self, prompts: list[list[int]]) -> list[Generated]:
        import torch

        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        sample = self.temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                ids.to(self.model.device),
                attention_mask=mask.to(self.model.device),
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=None,
                top_k=None,
                return_dict_in_generate=True,
                output_scores=True,
                pad_token_id=pad,
                eos_token_id=list(self.stop_ids),
            )
            scores = self.model.compute_transition_scores(
                out.sequences, out.scores, normalize_logits=True
            )
        results = []
        for row in range(len(prompts)):
            tokens = [int(t) for t in out.sequences[row, width:]]
            end = next((i + 1 for i, t in enumerate(tokens) if t in self.stop_ids), None)
            kept = tokens if end is None else tokens[:end]
            logprobs = [float(x) for x in scores[row, : len(kept)]]
            results.append(Generated(kept, logprobs, end is not None))
        return results

    async def aclose(self) -> None:
        if self._worker is not None:
            await asyncio.gather(self._worker, return_exceptions=True)
