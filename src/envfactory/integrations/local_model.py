"""A rollout policy backed by a transformers model in this process.

It renders each call's context with the tokenizer's chat template, samples with
``model.generate`` and records the exact prompt ids, output ids and the sampler's logprob of
every output token, so its episodes are token-faithful like a vLLM server's. Tool calls are
read from the reply's text (Hermes / Qwen ``<tool_call>`` blocks): run it with
``HarnessConfig(tool_format="text")``. Generation blocks the event loop; it is meant for small
models and CPU runs (tests, examples, a trainer's own model), not for throughput.
"""

from __future__ import annotations

from typing import Any

from envfactory.episode.types import Message
from envfactory.harness.toolcalls import parse_tool_calls
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest, RawAction
from envfactory.trajectory.record import ModelInfo


class TransformersSession:
    def __init__(self, policy: TransformersPolicy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.final = ctx.harness.text_reply == "final"

    def replay(self, observations: list[Any]) -> None:
        return None  # stateless: the transcript is the whole state

    async def act(self, request: PolicyRequest) -> PolicyReply:
        import torch

        p = self.policy
        prompt_ids = [int(t) for t in p.encode(request.messages)]
        with torch.no_grad():
            out = p.model.generate(
                torch.tensor([prompt_ids], device=p.model.device),
                attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                max_new_tokens=p.max_new_tokens,
                do_sample=p.temperature > 0,
                temperature=p.temperature if p.temperature > 0 else None,
                top_p=None,
                top_k=None,
                return_dict_in_generate=True,
                output_scores=True,
                pad_token_id=p.tokenizer.pad_token_id,
                eos_token_id=p.tokenizer.eos_token_id,
            )
            scores = p.model.compute_transition_scores(
                out.sequences, out.scores, normalize_logits=True
            )
        output_ids = [int(t) for t in out.sequences[0, len(prompt_ids) :]]
        logprobs = [float(x) for x in scores[0, : len(output_ids)]]
        finish = "stop" if output_ids and output_ids[-1] == p.tokenizer.eos_token_id else "length"
        text = p.tokenizer.decode(output_ids, skip_special_tokens=True)
        plain, calls = parse_tool_calls(text)
        actions: list[RawAction] = list(calls)
        if not actions:
            actions.append(Message(content=plain, final=self.final))
        return PolicyReply(
            message={"role": "assistant", "content": text},
            actions=actions,
            prompt_ids=prompt_ids,
            output_ids=output_ids,
            output_logprobs=logprobs,
            finish_reason=finish,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(output_ids),
        )


class TransformersPolicy:
    """``model`` (a causal LM) and its ``tokenizer`` (with a chat template) as a rollout
    policy. ``temperature`` 0 decodes greedily."""

    local = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.name = name or str(getattr(model.config, "name_or_path", "") or "local-model")

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

    async def aclose(self) -> None:
        return None
