"""A rollout policy backed by a transformers model in this process.

It renders each call's context with the tokenizer's chat template, samples (greedy, or at a
temperature, the tokens ``model.generate`` would give) and records the exact prompt ids, output
ids and the sampler's logprob of every output token, so its episodes are token-faithful like a
vLLM server's. Tool calls are read from the reply's text (Hermes / Qwen ``<tool_call>``
blocks): run it with ``HarnessConfig(tool_format="text")``, or ``"grammar"`` to decode every
reply under the grammar of a message or one well-formed call of an exposed tool
(:mod:`envfactory.harness.grammar`).

Calls from concurrent episodes are batched: whatever calls are waiting when the model is free
(up to ``max_batch``, and fewer when their prompts are long: see ``ATTENTION_BUDGET``) are
generated together, in a worker thread, so the event loop keeps stepping environments
meanwhile; a reply that ends leaves the batch at once, so no step decodes a finished one. The
system prompt (a world's rules and tools, most of every prompt) is read once: its keys and
values are kept and shared by every call that starts with it, and only each call's own tokens
are read. An episode keeps the keys and values of its own tokens (the request, the turns so
far, its last reply) from one call to the next, so each call reads only what is new since its
last (the latest observation): a long episode's prompts cost their growth, not their length. A
prompt that leaves no room for the reply in the model's context is refused with
:class:`~envfactory.policies.base.ContextOverflow` (the episode is truncated, as a server's
"context length exceeded" truncates it). :meth:`TransformersPolicy.from_path` loads the
embedded model or any local one (:mod:`envfactory.integrations.embedded`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envfactory.contract.actions import Message
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

if TYPE_CHECKING:
    from envfactory.integrations.constrained import GrammarMask

PREFIX_MIN = 64  # a shared system prompt shorter than this is read again with each call
PREFIXES_KEPT = 4  # system prompts whose keys and values are kept (a few worlds at once)
# Calls generated together at most. A decoding step on the CPU costs mostly the reading of the
# weights, whatever the rows: a calibration cell's ten episodes in batches of 8 and 2 cost
# 1.2 to 1.3 times one batch of 10 (``envfactory bench decode``).
MAX_BATCH = 16
# Rows x (tokens read) x (tokens attended) in one batch: reading the prompts materialises
# attention weights (or a mask) of that many entries per head, so a batch that reads long
# prompts (a tool result of thousands of tokens) would take tens of gigabytes. 2**26 is one
# 8k-token prompt read whole, four of 4k; an episode's earlier tokens are attended, not read.
ATTENTION_BUDGET = 1 << 26


TOOL_TAGS = ("<tool_call>", "</tool_call>")


def reply_text(tokenizer: Any, ids: list[int]) -> str:
    """The text of a reply's tokens, its special tokens (the end of the turn) dropped but the
    tool-call tags, which some tokenizers mark special and no call is read without (a
    Hermes tool parser decodes the same way)."""
    added = tokenizer.added_tokens_decoder
    special = set(tokenizer.all_special_ids) | {i for i, t in added.items() if t.special}
    special -= {i for i, t in added.items() if t.content in TOOL_TAGS}
    return str(tokenizer.decode([t for t in ids if t not in special], skip_special_tokens=False))


@dataclass
class Kept:
    """An episode's own keys and values from its last call: those of ``ids`` (its tokens after
    the shared ``prefix``), one ``[kv heads, len(ids), head dim]`` pair per layer."""

    prefix: tuple[int, ...]
    ids: list[int]
    layers: list[tuple[Any, Any]] = field(repr=False)

    def reusable(self, prefix: tuple[int, ...], own: list[int]) -> int:
        """How many leading tokens of ``own`` (after ``prefix``) these keys and values hold,
        leaving at least one token to read."""
        if prefix != self.prefix:
            return 0
        n = 0
        for a, b in zip(self.ids, own[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n


@dataclass
class Generated:
    """One reply: its tokens (up to and with the stop token) and their logprobs; ``kept``:
    the keys and values its episode can reuse next call, ``reused``: how many of the prompt's
    own tokens were not read again."""

    output_ids: list[int]
    logprobs: list[float]
    stopped: bool  # ended on a stop token (else on the token limit)
    kept: Kept | None = field(default=None, repr=False)
    reused: int = 0


@dataclass
class PendingCall:
    """A call waiting for the model, and where its reply goes."""

    prompt_ids: list[int]
    prefix: int  # leading tokens shared by other calls (the system prompt), 0: none
    grammar: str | None  # the grammar the reply must follow, None: free text
    done: asyncio.Future[Generated] = field(repr=False)
    kept: Kept | None = None  # the episode's keys and values from its last call


Reply = tuple[list[int], list[float], bool, Kept | None]  # tokens, logprobs, stopped, kept


@dataclass
class Batch:
    """Calls laid out to be decoded together: ``ids`` and ``mask``, one padded row a call;
    ``cache``, the keys and values of the rows' leading tokens (None: all read); ``reused``,
    each row's own tokens not read again; ``keep``, a row's keys and values for its episode's
    next call, taken from the cache at the row's line in the batch (None: not kept)."""

    ids: Any
    mask: Any
    cache: Any
    reused: list[int]
    keep: Callable[[Any, int, int, list[int]], Kept | None]


class TransformersSession:
    def __init__(self, policy: TransformersPolicy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.final = ctx.harness.text_reply == "final"
        self.system: tuple[str, list[int]] | None = None  # the system turn and its tokens
        self.harness = ctx.harness
        self.tools = ctx.tools
        self.choices: Choices | None = None  # what the world offers now (a page's ids)
        self.kept: Kept | None = None  # this episode's keys and values from its last call

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
            prompt_ids,
            self._prefix(request.messages, prompt_ids),
            self._grammar(request),
            self.kept if p.reuse else None,
        )
        self.kept = out.kept
        text = reply_text(p.tokenizer, out.output_ids)
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
        return reply_grammar(self.tools, required, self.choices, self.policy.tag_tokens())

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
    tokenizer's end of text); ``reuse``: an episode's calls reuse the keys and values of its
    earlier tokens (same replies, fewer tokens read)."""

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
        max_batch: int = MAX_BATCH,
        reuse: bool = True,
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
        self.reuse = reuse
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

    def tag_tokens(self) -> bool:
        """Whether the tokenizer spells the tool-call tags as tokens of their own."""
        from envfactory.integrations.constrained import grammar_tokenizer, tags_are_tokens

        return tags_are_tokens(grammar_tokenizer(self.tokenizer, self.end_id))

    async def generate(
        self,
        prompt_ids: list[int],
        prefix: int = 0,
        grammar: str | None = None,
        kept: Kept | None = None,
    ) -> Generated:
        """One reply to ``prompt_ids``, generated in a batch with the calls waiting beside it;
        its first ``prefix`` tokens (a system prompt other calls share) are read once and
        their keys and values kept. A ``grammar`` (Lark, llguidance's dialect) constrains it.
        ``kept``: the episode's own keys and values from its last call (the tokens they hold
        are not read again); the reply's ``kept`` holds this call's, where a prefix is shared."""
        loop = asyncio.get_running_loop()
        call = PendingCall(prompt_ids, prefix, grammar, loop.create_future(), kept)
        self._waiting.append(call)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await call.done

    async def _drain(self) -> None:
        """Generate the waiting calls, a batch at a time. A caller may give up on its call (its
        episode ran out of time): a call given up while it waits is dropped, and one given up
        while its batch generates costs the others nothing."""
        while self._waiting:
            await asyncio.sleep(0)  # let the episodes that are ready queue their calls too
            live = [c for c in self._waiting if not c.done.cancelled()]
            batch, self._waiting = live[: self.max_batch], live[self.max_batch :]
            if not batch:
                break
            try:
                outs = await asyncio.to_thread(self._generate_calls, batch)
            except Exception as exc:  # every caller hears of it
                for c in batch:
                    if not c.done.done():
                        c.done.set_exception(exc)
                continue
            for c, out in zip(batch, outs, strict=True):
                if not c.done.done():
                    c.done.set_result(out)

    def _generate_calls(self, calls: list[PendingCall]) -> list[Generated]:
        """The calls' replies: those sharing a prefix generated together over its kept keys
        and values, the rest together from scratch."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, c in enumerate(calls):
            groups.setdefault(tuple(c.prompt_ids[: c.prefix]), []).append(i)
        out: dict[int, Generated] = {}
        for prefix, members in groups.items():
            own = {i: calls[i].prompt_ids[len(prefix) :] for i in members}
            held = {i: self._reused(prefix, own[i], calls[i].kept) for i in members}
            read = {i: len(own[i]) - held[i] for i in members}
            for part in _within_budget(members, read, held):
                prompts = [calls[i].prompt_ids for i in part]
                grammars = [calls[i].grammar for i in part]
                kept = [calls[i].kept for i in part]
                replies = self._generate(prompts, list(prefix), grammars, kept)
                out.update(zip(part, replies, strict=True))
        return [out[i] for i in range(len(calls))]

    def _shares(self, prefix: tuple[int, ...]) -> bool:
        """Whether calls over ``prefix`` share its kept keys and values (and so can reuse
        their episodes' own)."""
        from envfactory.integrations.kv import GROUPED_SDPA

        return bool(prefix) and self.model.config._attn_implementation == GROUPED_SDPA

    def _reused(self, prefix: tuple[int, ...], own: list[int], kept: Kept | None) -> int:
        """How many leading tokens of ``own`` (a prompt's tokens after ``prefix``) are not read
        again: those ``kept`` from the episode's last call holds, where the prefix is shared."""
        return kept.reusable(prefix, own) if kept is not None and self._shares(prefix) else 0

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
        kept: list[Kept | None] | None = None,
    ) -> list[Generated]:
        """Replies to ``prompts``, which all start with ``prefix``, each following its grammar
        where it has one; ``kept``: each episode's keys and values from its last call."""
        batch = self._batch(prompts, prefix or [], kept)
        grammar = None
        if grammars and any(g is not None for g in grammars):
            from envfactory.integrations.constrained import GrammarMask, grammar_tokenizer

            tok = grammar_tokenizer(self.tokenizer, self.end_id)
            grammar = GrammarMask(tok, grammars, self.end_id)
        replies = self._decode(batch, grammar)
        return [
            Generated(tokens, logprobs, stopped, mine, r)
            for (tokens, logprobs, stopped, mine), r in zip(replies, batch.reused, strict=True)
        ]

    def _batch(
        self, prompts: list[list[int]], prefix: list[int], kept: list[Kept | None] | None
    ) -> Batch:
        """``prompts`` (all starting with ``prefix``) as one batch. Each row is the prefix,
        then the tokens whose keys and values its episode ``kept`` (left-padded to the longest
        such run), then the rest of its own tokens (left-padded): positions follow the
        attention mask, so padding moves no token."""
        import torch

        key = tuple(prefix)
        own = [p[len(prefix) :] for p in prompts]
        shares = self._shares(key)
        olds: list[Kept | None] = list(kept) if shares and kept else [None] * len(prompts)
        reused = [self._reused(key, o, k) for k, o in zip(olds, own, strict=True)]
        fresh = [o[r:] for o, r in zip(own, reused, strict=True)]
        held, new = max(reused), max(map(len, fresh))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        rows, masks = [], []
        for o, r, f in zip(own, reused, fresh, strict=True):
            gaps = (held - r, new - len(f))
            rows.append([*prefix, *[pad] * gaps[0], *o[:r], *[pad] * gaps[1], *f])
            masks.append([1] * len(prefix) + [0] * gaps[0] + [1] * r + [0] * gaps[1] + [1] * len(f))
        cache = None
        if shares:
            cache = self._prefix_cache(prefix, len(prompts), held + new + self.max_new_tokens)
            _fill_kept(cache, olds, reused, held)

        def keep(cache: Any, line: int, row: int, reply: list[int]) -> Kept | None:
            if not shares or not self.reuse:
                return None
            return _kept_row(cache, key, line, own[row], reused[row], held, new, reply)

        device = self.model.device
        ids, mask = torch.tensor(rows, device=device), torch.tensor(masks, device=device)
        return Batch(ids, mask, cache, reused, keep)

    def _decode(self, batch: Batch, grammar: GrammarMask | None) -> list[Reply]:
        """Sample a reply for each row of ``batch``, under its ``grammar`` where it has one:
        its tokens, up to and with a stop token, their logprobs, whether it stopped, and the
        keys and values its episode keeps. A finished reply leaves the batch at once: the
        steps after it decode only the replies still going (a static batch would carry it,
        padding, to the longest reply's end)."""
        import torch

        ids, mask, cache = batch.ids, batch.mask, batch.cache
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
        start = cache.get_seq_length() if cache is not None else 0
        step_ids, step_positions = ids[:, start:], positions[:, start:]
        rows = list(range(len(ids)))  # the reply each line of the batch decodes
        tokens: list[list[int]] = [[] for _ in rows]
        logprobs: list[list[float]] = [[] for _ in rows]
        ended = [False for _ in rows]
        kept: list[Kept | None] = [None for _ in rows]
        stops = torch.tensor(self.stop_ids, device=ids.device)
        for step in range(self.max_new_tokens):
            with torch.no_grad():
                out = self.model(
                    input_ids=step_ids,
                    attention_mask=mask,
                    position_ids=step_positions,
                    past_key_values=cache,
                    use_cache=True,  # a trainer may have turned it off in the model's config
                    logits_to_keep=1,
                )
            cache = out.past_key_values
            scores = out.logits[:, -1, :].to(dtype=torch.float32)
            if grammar is not None:
                scores = grammar(scores, rows)
            if self.temperature > 0:
                scores = scores / self.temperature
                chosen = torch.multinomial(torch.softmax(scores, -1), 1).squeeze(1)
            else:
                chosen = scores.argmax(-1)
            chosen_logprobs = torch.log_softmax(scores, -1).gather(1, chosen[:, None])[:, 0]
            stopping = torch.isin(chosen, stops)
            last = step == self.max_new_tokens - 1
            going = []
            for line, row in enumerate(rows):
                tokens[row].append(int(chosen[line]))
                logprobs[row].append(float(chosen_logprobs[line]))
                ended[row] = bool(stopping[line])
                if ended[row] or last:
                    kept[row] = batch.keep(cache, line, row, tokens[row])
                else:
                    going.append(line)
                    if grammar is not None:
                        grammar.consume(row, tokens[row][-1])
            if not going:
                break
            if len(going) < len(rows):
                lines = torch.tensor(going, device=ids.device)
                cache.batch_select_indices(lines)
                mask, chosen, step_positions = mask[lines], chosen[lines], step_positions[lines]
                rows = [rows[line] for line in going]
            step_ids = chosen[:, None]
            step_positions = step_positions[:, -1:] + 1
            mask = torch.cat([mask, mask.new_ones(len(rows), 1)], dim=-1)
        return list(zip(tokens, logprobs, ended, kept, strict=True))

    async def aclose(self) -> None:
        if self._worker is not None:
            await asyncio.gather(self._worker, return_exceptions=True)


def _within_budget(
    members: list[int], read: dict[int, int], held: dict[int, int]
) -> list[list[int]]:
    """``members`` in batches whose padded reading, rows x (most tokens read) x (most held +
    most read), stays within ``ATTENTION_BUDGET`` (a row over it alone is a batch of its
    own), shortest first: similar lengths also pad less. ``read``: each row's own tokens to
    read, ``held``: those before them whose keys and values its episode kept."""
    batches: list[list[int]] = []
    batch: list[int] = []
    most_read = most_held = 0
    for i in sorted(members, key=lambda i: read[i] + held[i]):
        r, h = max(most_read, read[i]), max(most_held, held[i])
        if batch and (len(batch) + 1) * r * (r + h) > ATTENTION_BUDGET:
            batches.append(batch)
            batch, r, h = [], read[i], held[i]
        batch.append(i)
        most_read, most_held = r, h
    return [*batches, batch] if batch else batches


def _fill_kept(cache: Any, kept: list[Kept | None], reused: list[int], held: int) -> None:
    """Write each row's reused keys and values into the first ``held`` own positions of
    ``cache`` (right-aligned; the padding before them zero, and masked)."""
    if not held:
        return
    for n, layer in enumerate(cache.layers):
        layer._keys[:, :, :held] = 0
        layer._values[:, :, :held] = 0
        for row, (k, r) in enumerate(zip(kept, reused, strict=True)):
            if k is not None and r:
                keys, values = k.layers[n]
                layer._keys[row, :, held - r : held] = keys[:, :r]
                layer._values[row, :, held - r : held] = values[:, :r]
        layer.filled = held


def _kept_row(
    cache: Any,
    prefix: tuple[int, ...],
    row: int,
    own: list[int],
    reused: int,
    held: int,
    new: int,
    reply: list[int],
) -> Kept:
    """The keys and values ``row`` holds for its own tokens and its reply (all but a last token
    never read back), copied out of the batch's cache."""
    import torch

    read = len(own) - reused
    wrote = cache.layers[0].filled - held - new  # reply tokens read back: all but the last
    n_reply = max(0, min(len(reply), wrote))
    slots = torch.cat(
        [
            torch.arange(held - reused, held),
            torch.arange(held + new - read, held + new),
            torch.arange(held + new, held + new + n_reply),
        ]
    )
    layers = [
        (layer._keys[row].index_select(1, slots), layer._values[row].index_select(1, slots))
        for layer in cache.layers
    ]
    return Kept(prefix, [*own, *reply[:n_reply]], layers)
