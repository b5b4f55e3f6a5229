"""veRL: the agent loop is made the way veRL's AgentLoopWorker makes it (hydra, from the
registry) and runs episodes through a server manager (veRL's LLMServerClient)."""

from __future__ import annotations

from typing import Any

import pytest
import verl.experimental.agent_loop.agent_loop as verl_loop

import envfactory
from envfactory.harness.toolcalls import render_call
from envfactory.policies.scripted import answer_text

pytestmark = pytest.mark.integrations


def make_loop(tokenizer: Any, server_manager: Any, response_length: int = 4096) -> Any:
    """Exactly what AgentLoopWorker._run_agent_loop does with a registered loop."""
    import hydra
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from envfactory.integrations.verl import AGENT_NAME

    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 8192,
                    "response_length": response_length,
                    "multi_turn": {"max_assistant_turns": 12},
                }
            },
            "data": {"apply_chat_template_kwargs": {}},
            "envfactory": {"max_steps": 40},
        }
    )
    return hydra.utils.instantiate(
        config=verl_loop._agent_loop_registry[AGENT_NAME],
        trainer_config=verl_loop.DictConfigWrap(config=config),
        server_manager=server_manager,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type="qwen2",
        dataset_cls=RLHFDataset,
        data_config=verl_loop.DictConfigWrap(config.data),
        tools=verl_loop.ToolListWrap([]),
    )


def play(agent: Any, sampling: dict[str, Any], **row: Any) -> Any:
    """Run on the event loop the agent loop was made on, as veRL's worker does."""
    return agent.loop.run_until_complete(agent.run(sampling, **row))


def scripted_server(tokenizer: Any, replies: list[str]) -> Any:
    """An LLMServerClient whose model writes the given replies (token ids with logprobs)."""
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    class ScriptedServer(LLMServerClient):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(config=None)
            self.calls: list[tuple[list[int], list[int]]] = []

        async def generate(self, request_id: str, *, prompt_ids: list[int], **kw: Any) -> Any:
            text = replies[len(self.calls)]
            ids = [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]
            self.calls.append((list(prompt_ids), ids))
            lps = [-0.25 - 0.01 * j for j in range(len(ids))]
            return TokenOutput(token_ids=ids, log_probs=lps, stop_reason="completed")

    return ScriptedServer()


def model_server(model: Any) -> Any:
    """An LLMServerClient that samples from a local transformers model."""
    import torch
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    class ModelServer(LLMServerClient):  # type: ignore[misc]
        async def generate(self, request_id: str, *, prompt_ids: list[int], **kw: Any) -> Any:
            with torch.no_grad():
                out = model.generate(
                    torch.tensor([prompt_ids]),
                    attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                    max_new_tokens=8,
                    do_sample=True,
                    return_dict_in_generate=True,
                    output_scores=True,
                )
                scores = model.compute_transition_scores(
                    out.sequences, out.scores, normalize_logits=True
                )
            ids = [int(t) for t in out.sequences[0, len(prompt_ids) :]]
            lps = [float(x) for x in scores[0, : len(ids)]]
            return TokenOutput(token_ids=ids, log_probs=lps)

    return ModelServer(config=None)


def recording(server: Any) -> Any:
    """``server`` keeping each call's prompt ids and generated ids in ``calls``."""
    server.calls = []
    generate = server.generate

    async def generate_and_keep(request_id: str, *, prompt_ids: list[int], **kw: Any) -> Any:
        out = await generate(request_id, prompt_ids=prompt_ids, **kw)
        server.calls.append((list(prompt_ids), list(out.token_ids)))
        return out

    server.generate = generate_and_keep
    return server


def test_gold_plan_episode_through_the_agent_loop(embedded: Any) -> None:
    from envfactory.integrations.verl import EnvfactoryAgentLoop, verl_rows

    tokenizer = embedded.tokenizer  # the real BPE tokenizer and ChatML template
    task = envfactory.make("retail").task("train", 1, 0)
    replies = [render_call(s.tool, s.arguments) for s in task.hidden.gold_plan]
    replies.append(answer_text(task.hidden.answers))
    server = scripted_server(tokenizer, replies)
    loop = make_loop(tokenizer, server)
    assert isinstance(loop, EnvfactoryAgentLoop) and isinstance(loop, verl_loop.AgentLoopBase)
    (row,) = verl_rows([task.public.task_id])
    assert row["agent_name"] == "envfactory_agent"
    out = play(loop, {"temperature": 1.0}, raw_prompt=row["prompt"], **row)
    assert isinstance(out, verl_loop.AgentLoopOutput)
    assert out.reward_score == 1.0 and out.extra_fields["status"] == "completed"
    assert len(server.calls) == len(replies)
    # the first prompt is the chat template over the system prompt and the request
    assert out.prompt_ids == server.calls[0][0]
    assert out.prompt_ids == tokenizer.apply_chat_template(
        row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    # mask 1 exactly on what the server generated, 0 on the tool results in between
    full = out.prompt_ids + out.response_ids
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    generated = [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m]
    assert generated == [t for _, ids in server.calls for t in ids]
    lps = [lp for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m]
    assert lps == pytest.approx(
        [-0.25 - 0.01 * j for _, ids in server.calls for j in range(len(ids))]
    )
    assert 0 in out.response_mask
    for prompt, _ in server.calls[1:]:  # each later prompt extends the sequence so far
        assert full[: len(prompt)] == prompt
    tensors = out.as_dict()
    assert tensors["responses"].shape == tensors["response_mask"].shape
    assert float(tensors["rm_scores"][-1]) == 1.0


def test_real_model_episode_and_truncation(embedded: Any) -> None:
    """The embedded model samples through the agent loop with its own BPE tokenizer: every
    later prompt extends the token sequence so far (no re-tokenisation drift), the mask marks
    exactly the sampled tokens, and the response budget truncates the episode."""
    tokenizer = embedded.tokenizer
    server = recording(model_server(embedded.model))
    loop = make_loop(tokenizer, server, response_length=24)
    out = play(loop, {}, extra_info={"task_id": "retail/train/1/1"})
    assert out.reward_score == 0.0  # 24 tokens cannot look a customer up and write the change
    assert len(out.response_ids) <= 24 and sum(out.response_mask) >= 8
    full = out.prompt_ids + out.response_ids
    for prompt, _ in server.calls[1:]:
        assert full[: len(prompt)] == prompt
    sampled = [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m]
    assert sampled == [t for _, ids in server.calls for t in ids][: len(sampled)]
    assert all(lp <= 0 for lp in out.response_logprobs)
    with pytest.raises(ValueError, match="task_id"):
        play(loop, {}, extra_info={})
