"""TRL: the environment_factory class, the dataset rows, and the rollout_func, each run
through the real GRPOTrainer for one training step: the rollout_func with the embedded model
(what `envfactory train` trains), TRL's own tool loop with a tiny model whose chat template
renders tools (the embedded model's does not)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import envfactory
from envfactory.harness.config import HarnessConfig
from envfactory.integrations.trl import (
    EnvfactoryRollout,
    beyond_request,
    environment_factory,
    task_dataset,
    task_rows,
    tool_env_class,
    verdict_reward,
)
from envfactory.policies.openai import OpenAIPolicy
from envfactory.policies.scripted import answer_text
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.web import browser

pytestmark = pytest.mark.integrations

TASKS = [TaskRef("retail", "train", 1, i) for i in range(2)]
STARTERS = [TaskRef("retail", "train", 0, i) for i in range(2)]  # one tool shown: short prompts


def grpo_args(tmp_path: Any, **extra: Any) -> Any:
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "output_dir": str(tmp_path),
        "max_steps": 1,
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 16,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,  # TRL turns it on; on a CPU without bf16 units it is ten times slower
        "logging_steps": 1,
        "save_strategy": "no",
        "gradient_checkpointing": False,  # a tiny model: nothing to save, and faster
    }
    return GRPOConfig(**{**settings, **extra})


def test_tool_methods_are_typed_documented_tools() -> None:
    from transformers.utils import get_json_schema

    cls = tool_env_class("retail")
    env = envfactory.make("retail")
    for schema in env.tools("openai"):
        fn = schema["function"]
        method = getattr(cls, fn["name"])
        got = get_json_schema(method)["function"]
        assert got["name"] == fn["name"]
        assert set(got["parameters"]["properties"]) == set(fn["parameters"]["properties"])
        assert set(got["parameters"].get("required", [])) == set(fn["parameters"]["required"])
        for arg, spec in fn["parameters"]["properties"].items():
            assert got["parameters"]["properties"][arg]["type"] == spec["type"]
    sig = inspect.signature(cls.find_customer_by_email)
    assert sig.parameters["email"].annotation is str
    assert environment_factory(["retail", "hotel"]).keys() == {"retail", "hotel"}  # type: ignore[union-attr]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_gold_plan_through_tool_methods_scores_one(index: int) -> None:
    task = envfactory.make("retail").task("train", 1, index)
    env = tool_env_class("retail")()
    env.reset(task_id=task.public.task_id, prompt=[])
    assert env.get_reward() == 0.0  # nothing done yet
    for step in task.hidden.gold_plan:
        out = getattr(env, step.tool)(**step.arguments)
        assert not out.startswith("Error"), out
    env.send_message(answer_text(task.hidden.answers))
    assert env.get_reward() == 1.0
    # a fresh reset starts over
    env.reset(task_id=task.public.task_id)
    assert env.get_reward() == 0.0


def test_reset_returns_what_the_first_observation_adds_to_the_prompt() -> None:
    """A database world's first observation is the request the prompt holds: nothing to add.
    A web world's brings the page, which TRL appends to the prompt's request."""
    task = envfactory.make("retail").task("train", 1, 0)
    assert tool_env_class("retail")().reset(task_id=task.public.task_id) is None
    assert beyond_request("Do X.", "Do X.\n\nURL: (home)") == "\n\nURL: (home)"
    assert beyond_request("Do X.", "Something else") == "\n\nSomething else"
    if browser.available() is not None:
        pytest.skip(f"no browser: {browser.available()}")
    web = envfactory.make("web-hotel").task("train", 0, 0)
    env = tool_env_class("web-hotel")()
    page = env.reset(task_id=web.public.task_id)
    assert page is not None and page.startswith("\n\nURL: (home)") and "[nav-" in page
    assert web.public.instruction + page == env._episode.reset(web).content
    env._episode.close()


def test_bad_rows_and_arguments_are_clear_errors() -> None:
    env = tool_env_class("retail")()
    with pytest.raises(ValueError, match="task_id"):
        env.reset(prompt=[])
    with pytest.raises(ValueError, match="not a task of retail"):
        env.reset(task_id="hotel/train/1/0")
    env.reset(task_id="retail/train/1/0")
    assert env.find_customer_by_email(email=123).startswith("Error")  # type: ignore[attr-defined]


def test_rows_carry_task_and_environment() -> None:
    rows = list(task_rows(TASKS))
    assert [r["task_id"] for r in rows] == [t.task_id for t in TASKS]
    system, request = rows[0]["prompt"]
    assert system["role"] == "system" and request["role"] == "user"
    assert request["task_id"] == "retail/train/1/0"
    assert request["content"] == envfactory.make("retail").task("train", 1, 0).public.instruction
    ds = task_dataset(TASKS)
    assert ds.column_names == ["prompt", "task_id", "environment"]
    stream = task_dataset(iter(TASKS), streaming=True)
    assert [r["task_id"] for r in stream] == [t.task_id for t in TASKS]


def test_grpo_step_with_environment_factory(tokenizer: Any, model: Any, tmp_path: Any) -> None:
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=grpo_args(tmp_path, max_tool_calling_iterations=2),
        train_dataset=task_dataset(TASKS),
        environment_factory=environment_factory("retail"),
    )
    assert {t.__name__ for t in trainer.tools} >= {"find_customer_by_email", "send_message"}
    result = trainer.train()
    assert result.global_step == 1
    log = trainer.state.log_history[0]
    rewards = [e.get_reward() for e in trainer.environments]
    assert len(rewards) == 4 and all(e.task_id for e in trainer.environments)
    assert log["rewards/RetailToolEnv/mean"] == pytest.approx(sum(rewards) / 4)


def test_grpo_step_with_rollout_func(embedded: Any, tmp_path: Any) -> None:
    import copy

    from trl import GRPOTrainer

    from envfactory.integrations.local_model import TransformersPolicy

    tokenizer = embedded.tokenizer
    model = copy.deepcopy(embedded.model)  # trained here; the session's copy stays as loaded

    rollout = EnvfactoryRollout(
        lambda t: TransformersPolicy(t.model, t.processing_class, max_new_tokens=8),
        harness=HarnessConfig(tool_format="text", max_turns=1),
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        # one prompt, a group of two: a real 135M-parameter backward pass stays cheap
        args=grpo_args(tmp_path, per_device_train_batch_size=2, max_completion_length=16),
        train_dataset=task_dataset(STARTERS),
        rollout_func=rollout,
        reward_funcs=[verdict_reward],
    )
    assert trainer.train().global_step == 1
    assert len(rollout.records) == 2
    assert len({r.task_id for r in rollout.records}) == 1
    assert {r.task_id for r in rollout.records} <= {t.task_id for t in STARTERS}
    for rec in rollout.records:
        assert rec.model.provider == "transformers" and rec.reward is not None
        for call in rec.calls:
            assert call.output_ids and len(call.output_logprobs or []) == len(call.output_ids)
            assert call.prompt_ids == tokenizer.apply_chat_template(
                rec.context(call), add_generation_prompt=True, tokenize=True, return_dict=False
            )
    log = trainer.state.log_history[0]
    mean = sum(r.reward or 0.0 for r in rollout.records) / 2
    assert log["rewards/verdict_reward/mean"] == pytest.approx(mean)


def test_rollout_func_returns_the_servers_tokens(server: Any) -> None:
    """Over HTTP: the scripted brain plays the oracle; every id, logprob and mask returned to
    TRL is the server's own."""
    cs = __import__("envfactory_tests_chat_server")
    policy = OpenAIPolicy(server.base_url, "scripted-brain", api_key="k")
    rollout = EnvfactoryRollout(policy, config=EngineConfig(concurrency=4, call_timeout_s=10))
    prompts = [row["prompt"] for row in task_rows(TASKS) for _ in range(2)]
    out = rollout(prompts, trainer=None)
    assert len(out["prompt_ids"]) == 4
    assert out["envfactory_reward"] == [1.0, 1.0, 1.0, 1.0]
    assert out["envfactory_status"] == ["completed"] * 4
    by_task = {t.task_id: [r for r in rollout.records if r.task_id == t.task_id] for t in TASKS}
    for i, prompt in enumerate(prompts):
        task_id = prompt[1]["task_id"]
        rec = by_task[task_id][i % 2]
        first = rec.calls[0]
        assert out["prompt_ids"][i] == first.prompt_ids
        rendered = cs.render_prompt(rec.messages[:2], rec.tools, False)
        assert out["prompt_ids"][i] == cs.encode(rendered)
        completion, mask, lps = out["completion_ids"][i], out["env_mask"][i], out["logprobs"][i]
        assert len(completion) == len(mask) == len(lps)
        model_tokens = [t for t, m in zip(completion, mask, strict=True) if m == 1]
        assert model_tokens == [t for c in rec.calls for t in c.output_ids or []]
        model_lps = [lp for lp, m in zip(lps, mask, strict=True) if m == 1]
        assert model_lps == [lp for c in rec.calls for lp in c.output_logprobs or []]
        assert all(lp == 0.0 for lp, m in zip(lps, mask, strict=True) if m == 0)
        assert 0 in mask  # tool results are in the completion, masked out
    assert verdict_reward([], out["envfactory_reward"]) == [1.0] * 4


def test_rollout_func_rejects_prompts_without_a_task(server: Any) -> None:
    rollout = EnvfactoryRollout(OpenAIPolicy(server.base_url, "scripted-brain"))
    with pytest.raises(ValueError, match="names no task"):
        rollout([[{"role": "user", "content": "hi"}]], trainer=None)


def test_rollout_func_raises_when_the_server_is_down() -> None:
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "nobody")
    retry = {"attempts": 1, "base_s": 0.0}
    rollout = EnvfactoryRollout(
        policy, config=EngineConfig(replace_failed=0, retry=retry, call_timeout_s=2)
    )
    with pytest.raises(RuntimeError, match="0 of 1 episodes finished"):
        rollout([next(iter(task_rows(TASKS[:1])))["prompt"]], trainer=None)
