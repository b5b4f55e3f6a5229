"""A rollout policy backed by a transformers model in this process.

It renders each call's context with the tokenizer's chat template, samples with
``model.generate`` and records the exact prompt ids, output ids and the sampler's logprob of
every output token, so its episodes are token-faithful like a vLLM server's. Tool calls are
read from the reply's text (Hermes / Qwen ``<tool_call>`` blocks): run it with
``HarnessConfig(tool_format="text")``, or ``"grammar"`` to decode every reply under the grammar
of a message or one well-formed call of an exposed tool (:mod:`envfactory.harness.grammar`).

Calls from concurrent episodes are batched: whatever calls are waiting when the model is free
(up to ``max_batch``, and fewer when their prompts are long: see ``ATTENTION_BUDGET``) are
generated together, in a worker thread, so the event loop keeps stepping environments
meanwhile. The system prompt (a world's rules and tools, most of every prompt) is read once:
its keys and values are kept and shared by every call that starts with it, and only each
call's own tokens are read. A prompt that leaves no room for the reply in the model's context
is refused with :class:`~envfactory.policies.base.ContextOverflow` (the episode is truncated,
as a server's "context length exceeded" truncates it). :meth:`TransformersPolicy.from_path`
loads the embedded model or any local one (:mod:`envfactory.integrations.embedded`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envfactory.episode.types import Message
from envfactory.harness.grammar import Choices, reply_grammar
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.integrations.embedded import END_OF_TURN
from envfactory.policies.base import (
    ContextOverflow,
    EpisodeContext,
    PolicyReply,
    PolicyRequest,
    RawAction,
)
from envfactory.trajectory.record import ModelInfo

PREFIX_MIN = 64  # a shared system prompt shorter than this is read again with each call
PREFIXES_KEPT = 4  # system prompts whose keys and values are kept (a few worlds at once)
# Rows x (own prompt tokens)^2 in one batch: reading the prompts materialises attention
# weights of that many entries per head, so a batch of long prompts (a tool result of
# thousands of tokens) would take tens of gigabytes. 2**26 is one 8k-token prompt, four of 4k.
ATTENTION_BUDGET = 1 << 26


@dataclass
class Generated:
    """One reply: its tokens (up to and with the stop token) and their logprobs."""

    output_ids: list[int]
    logprobs: list[float]
    stopped: bool  # ended on a stop token (else on the token limit)


@dataclass
class PendingCall:
    """A call waiting for the model, and where its reply goes."""

    prompt_ids: list[int]
    prefix: int  # leading tokens shared by other calls (the system prompt), 0: none
    grammar: str | None  # the grammar the reply must follow, None: free text
    done: asyncio.Future[Generated] = field(repr=False)


class TransformersSession:
    def __init__(self, policy: TransformersPolicy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.final = ctx.harness.text_reply == "final"
        self.system: tuple[str, list[int]] | None = None  # the system turn and its tokens
        self.harness = ctx.harness
        self.tools = ctx.tools
        self.choices: Choices | None = None  # what the world offers now (a page's ids)

    def replay(self, observations: list[Any]) -> None:
        self._see(observations)  # the transcript is the rest of the state

    def _see(self, observations: list[Any]) -> None:
        """Keep the latest ``choices`` the world offered (an error leaves the page as it was)."""
        for obs in observations:
            offered = obs.data.get("choices") if isinstance(obs.data, dict) else None
            if isinstance(offered, dict):
                self.choices = offered

    async def act(self, request: PolicyRequest) -> PolicyReply:
        p = self.policy
        self._see(request.observations)
        prompt_ids = [int(t) for t in p.encode(request.messages)]
        if p.context and len(prompt_ids) + p.max_new_tokens > p.context:
            raise ContextOverflow(
                f"a prompt of {len(prompt_ids)} tokens leaves no room for {p.max_new_tokens} "
                f"more in the model's context of {p.context}"
            )
        out = await p.generate(
            prompt_ids, self._prefix(request.messages, prompt_ids), self._grammar(request)
        )
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

    def _grammar(self, request: PolicyRequest) -> str | None:
        if self.harness.tool_format != "grammar":
            return None
        required = self.harness.call_required(request.call_index)
        return reply_grammar(self.tools, required, self.choices)

    def _prefix(self, messages: list[dict[str, Any]], prompt_ids: list[int]) -> int:
        """How many leading tokens are the system turn (the rules and tools every episode of a
        world shares), when the template renders it as a prefix; 0 otherwise."""
        if not messages or messages[0].get("role") != "system":
            return 0
        content = str(messages[0].get("content"))
        if self.system is None or self.system[0] != content:
            ids = self.policy.tokenizer.apply_chat_template(
                messages[:1], add_generation_prompt=False, tokenize=True, return_dict=False
            )
            self.system = (content, [int(t) for t in ids])
        ids = self.system[1]
        shared = len(ids) >= PREFIX_MIN and prompt_ids[: len(ids)] == ids
        return len(ids) if shared and len(ids) < len(prompt_ids) else 0


class TransformersPolicy:
    """``model`` (a causal LM) and its ``tokenizer`` (with a chat template) as a rollout
    policy. ``temperature`` 0 decodes greedily; ``stop_ids`` end a reply (default: the
    tokenizer's end of text)."""

    local = True
    decodes_grammar = True  # can run tool_format "grammar"

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
        from envfactory.integrations.kv import use_grouped_sdpa

        use_grouped_sdpa(model)  # reads a shared prompt prefix once per batch
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name or str(getattr(model.config, "name_or_path", "") or "local-model")
        self.stop_ids = stop_ids or (tokenizer.eos_token_id,)
        self.end_id = tokenizer.get_vocab().get(END_OF_TURN, self.stop_ids[0])  # ends a reply
        self.max_batch = max_batch
        self.context: int | None = getattr(model.config, "max_position_embeddings", None)
        self._waiting: list[PendingCall] = []
        self._prefixes: dict[tuple[int, ...], Any] = {}  # prefix tokens -> their keys, values
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

    async def generate(
        self, prompt_ids: list[int], prefix: int = 0, grammar: str | None = None
    ) -> Generated:
        """One reply to ``prompt_ids``, generated in a batch with the calls waiting beside it;
        its first ``prefix`` tokens (a system prompt other calls share) are read once and
        their keys and values kept. A ``grammar`` (Lark, llguidance's dialect) constrains it."""
        loop = asyncio.get_running_loop()
        call = PendingCall(prompt_ids, prefix, grammar, loop.create_future())
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
                outs = await asyncio.to_thread(self._generate_calls, batch)
            except Exception as exc:  # every caller hears of it
                for c in batch:
                    c.done.set_exception(exc)
                continue
            for c, out in zip(batch, outs, strict=True):
                c.done.set_result(out)

    def _generate_calls(self, calls: list[PendingCall]) -> list[Generated]:
        """The calls' replies: those sharing a prefix generated together over its kept keys
        and values, the rest together from scratch."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, c in enumerate(calls):
            groups.setdefault(tuple(c.prompt_ids[: c.prefix]), []).append(i)
        out: dict[int, Generated] = {}
        for prefix, members in groups.items():
            own = {i: len(calls[i].prompt_ids) - len(prefix) for i in members}
            for part in _within_budget(members, own):
                prompts = [calls[i].prompt_ids for i in part]
                grammars = [calls[i].grammar for i in part]
                replies = self._generate(prompts, list(prefix), grammars)
                out.update(zip(part, replies, strict=True))
        return [out[i] for i in range(len(calls))]

    def _prefix_cache(self, prefix: list[int], batch: int, room: int) -> Any:
        """The keys and values of ``prefix`` (computed once, the last few kept), shared by the
        ``batch`` sequences, with ``room`` positions reserved per sequence for the rest
        (generation writes into it)."""
        import torch

        from envfactory.integrations.kv import shared_prefix_cache

        key = tuple(prefix)
        kept = self._prefixes.pop(key, None)
        if kept is None:
            with torch.no_grad():
                ids = torch.tensor([prefix], device=self.model.device)
                kept = self.model(ids, use_cache=True).past_key_values
        self._prefixes[key] = kept  # most recent last
        while len(self._prefixes) > PREFIXES_KEPT:
            self._prefixes.pop(next(iter(self._prefixes)))
        return shared_prefix_cache(kept, batch, room)

    def _generate(
        self,
        prompts: list[list[int]],
        prefix: list[int] | None = None,
        grammars: list[str | None] | None = None,
    ) -> list[Generated]:
        """Replies to ``prompts``, which all start with ``prefix``: sequences are the prefix,
        padding, then each prompt's own tokens (positions follow the attention mask). Each
        reply follows its grammar, where it has one."""
        import torch

        prefix = prefix or []
        own = [p[len(prefix) :] for p in prompts]
        width = len(prefix) + max(len(p) for p in own)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        gap = [width - len(prefix) - len(p) for p in own]
        ids = torch.tensor([prefix + [pad] * g + p for g, p in zip(gap, own, strict=True)])
        mask = torch.tensor(
            [[1] * len(prefix) + [0] * g + [1] * len(p) for g, p in zip(gap, own, strict=True)]
        )
        room = width - len(prefix) + self.max_new_tokens
        from envfactory.integrations.kv import GROUPED_SDPA

        shares = prefix and self.model.config._attn_implementation == GROUPED_SDPA
        cache = self._prefix_cache(prefix, len(prompts), room) if shares else None
        sample = self.temperature > 0
        processors = []
        if grammars and any(g is not None for g in grammars):
            from envfactory.integrations.constrained import GrammarMask, grammar_tokenizer

            tok = grammar_tokenizer(self.tokenizer, self.end_id)
            processors.append(GrammarMask(tok, grammars, width, self.end_id))
        with torch.no_grad():
            out = self.model.generate(
                ids.to(self.model.device),
                attention_mask=mask.to(self.model.device),
                past_key_values=cache,
                use_cache=True,  # a trainer may have turned it off in the model's config
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=None,
                top_k=None,
                return_dict_in_generate=True,
                output_scores=True,
                pad_token_id=pad,
                eos_token_id=list(self.stop_ids),
                logits_processor=processors or None,
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


def _within_budget(members: list[int], own: dict[int, int]) -> list[list[int]]:
    """``members`` in batches of rows x (longest own prompt)^2 within ``ATTENTION_BUDGET``
    (a prompt over it alone is a batch of its own), shortest first: similar lengths also pad
    less."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(members, key=own.__getitem__):
        if batch and (len(batch) + 1) * own[i] ** 2 > ATTENTION_BUDGET:
            batches.append(batch)
            batch = []
        batch.append(i)
    return [*batches, batch] if batch else batches
