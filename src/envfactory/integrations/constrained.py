"""Grammar-constrained decoding for a transformers model, with llguidance.

:class:`GrammarMask` holds each reply's grammar (or none) while a batch is decoded: at every step
the tokens a reply's grammar cannot take next get ``-inf``. The logprobs the decoder reports are
then those of the constrained sampler, which is the policy that acted.
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
    """One matcher per reply of a batch (None: unconstrained), indexed by the reply's row."""

    def __init__(self, grammar_tok: Any, grammars: list[str | None], end_id: int) -> None:
        import llguidance

        self.matchers = [
            None if g is None else llguidance.LLMatcher(grammar_tok, _checked(grammar_tok, g))
            for g in grammars
        ]
        self.end_id = end_id

    def __call__(self, scores: Any, rows: list[int]) -> Any:
        """``scores`` (one line per reply still being decoded, of the replies ``rows``) with
        the tokens each grammar cannot take next at ``-inf``; a complete reply can only end."""
        import torch

        for line, row in enumerate(rows):
            matcher = self.matchers[row]
            if matcher is None:
                continue
            if matcher.is_stopped():
                end = scores[line, self.end_id].clone()
                scores[line] = float("-inf")
                scores[line, self.end_id] = end
                continue
            allowed = torch.frombuffer(bytearray(matcher.compute_logit_bias()), dtype=torch.uint8)
            blocked = torch.ones(scores.shape[1], dtype=torch.bool)
            n = min(len(allowed), scores.shape[1])
            blocked[:n] = allowed[:n] == 0
            scores[line, blocked.to(scores.device)] = float("-inf")
        return scores

    def consume(self, row: int, token: int) -> None:
        """Advance reply ``row``'s grammar past ``token``, the one it was given."""
        matcher = self.matchers[row]
        if matcher is not None and not matcher.is_stopped():
            matcher.consume_token(token)
