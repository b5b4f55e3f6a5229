"""Grammar-constrained decoding for a transformers model, with llguidance.

:class:`GrammarMask` is a ``model.generate`` logits processor: each sequence of the batch has
its own grammar (or none), and at every step the tokens its grammar cannot take next get
``-inf``. The logprobs generation reports are then those of the constrained sampler, which is
the policy that acted.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": True,
    "trim_offsets": True,
    "use_regex": True,
}


def grammar_tokenizer(tokenizer: Any, end_id: int) -> Any:
    """The llguidance view of a fast Hugging Face tokenizer (built once per tokenizer)."""
    return _grammar_tokenizer(tokenizer, end_id)


@cache
def _grammar_tokenizer(tokenizer: Any, end_id: int) -> Any:
    import llguidance

    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    if spec.get("pre_tokenizer", {}).get("type") == "ByteLevel":
        # GGUF conversion wraps the byte-level decoder in a sequence llguidance does not read
        spec["decoder"] = BYTE_LEVEL
    return llguidance.LLTokenizer(json.dumps(spec), n_vocab=len(tokenizer), eos_token=end_id)


@cache
def tags_are_tokens(grammar_tok: Any) -> bool:
    """Whether ``<tool_call>`` and ``</tool_call>`` are each one token of their own (an added
    token, which llguidance treats as special) rather than text spelled in several."""
    for tag in (b"<tool_call>", b"</tool_call>"):
        ids = grammar_tok.tokenize_bytes(tag, parse_special=True)
        if len(ids) != 1 or not grammar_tok.is_special_token(ids[0]):
            return False
    return True


@cache
def _checked(grammar_tok: Any, grammar: str) -> str:
    import llguidance

    problem = llguidance.LLMatcher.validate_grammar(grammar, grammar_tok)
    if problem:
        raise ValueError(f"the reply grammar does not compile: {problem}")
    return grammar


class GrammarMask:
    """A logits processor holding one matcher per sequence (None: unconstrained)."""

    def __init__(
        self, grammar_tok: Any, grammars: list[str | None], prompt_width: int, end_id: int
    ) -> None:
        import llguidance

        self.matchers = [
            None if g is None else llguidance.LLMatcher(grammar_tok, _checked(grammar_tok, g))
            for g in grammars
        ]
        self.width = prompt_width
        self.end_id = end_id

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row, matcher in enumerate(self.matchers):
            if matcher is None:
                continue
            if input_ids.shape[1] > self.width and not matcher.is_stopped():
                matcher.consume_token(int(input_ids[row, -1]))
            if matcher.is_stopped():  # the reply is complete (or over: padding follows)
                end = scores[row, self.end_id].clone()
                scores[row] = float("-inf")
                scores[row, self.end_id] = end
                continue
            allowed = torch.frombuffer(bytearray(matcher.compute_logit_bias()), dtype=torch.uint8)
            blocked = torch.ones(scores.shape[1], dtype=torch.bool)
            n = min(len(allowed), scores.shape[1])
            blocked[:n] = allowed[:n] == 0
            scores[row, blocked.to(scores.device)] = float("-inf")
        return scores
