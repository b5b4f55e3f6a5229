"""Where a GRPO step's time goes: ``envfactory train``'s trainer (TRL's ``GRPOTrainer`` on
the embedded model, :func:`envfactory.training.grpo_cpu.trainer_for`) run for a few steps on
one world's starter train tasks, each step's wall time split into the rollouts (the model's
generation, and the rest: the worlds' episodes), the loss's forward pass (the per-token
log-probabilities), its backward pass, the optimizer, and the rest (rewards, advantages,
logging, checkpoints). With ``lora_rank``, the same with LoRA adapters; the reward by step
beside the times, to see that training still moves.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from statistics import median
from typing import Any

from pydantic import BaseModel

PARTS = ("generation", "episodes", "forward", "backward", "optimizer", "other")


class GrpoStepBench(BaseModel):
    model: str
    world: str
    lora_rank: int
    threads: int
    prompts_per_step: int
    group_size: int
    max_new_tokens: int
    learning_rate: float
    step_s: list[float]  # each step's wall time
    median_step_s: float
    parts_s: dict[str, float]  # summed over the steps, by part (PARTS)
    parts_share: dict[str, float]
    trainable_params: int
    reward: list[float]  # the rollouts' mean reward by step
    peak_rss_gb: float  # the process's peak resident memory
    load_average: list[float]  # 1, 5 and 15 minutes, at the end


class _Clock:
    """Seconds spent in the calls it wraps, by part."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(PARTS, 0.0)

    def wrap(self, part: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.spent[part] += time.perf_counter() - t0

        return timed


def bench_grpo_step(
    world: str = "hotel",
    steps: int = 3,
    prompts_per_step: int = 2,
    group_size: int = 4,
    lora_rank: int = 0,
    learning_rate: float = 1e-4,
    max_new_tokens: int = 80,
    threads: int = 0,
) -> GrpoStepBench:
    """``steps`` GRPO steps of ``prompts_per_step`` tasks x ``group_size`` episodes on
    ``world``'s starter train tasks (``threads`` 0: the idle cores)."""
    import copy

    import torch
    from transformers import TrainerCallback

    from envfactory.integrations.embedded import load
    from envfactory.integrations.local_model import TransformersPolicy
    from envfactory.training.grpo_cpu import (
        REWARD_LOG,
        TrainSettings,
        idle_cores,
        trainer_for,
    )

    s = TrainSettings(
        worlds=[world],
        steps=steps,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        lora_rank=lora_rank,
        learning_rate=learning_rate,
        max_new_tokens=max_new_tokens,
        threads=threads or idle_cores(),
    )
    torch.manual_seed(s.seed)
    local = load(None)
    torch.set_num_threads(s.threads)
    model = copy.deepcopy(local.model)
    clock = _Clock()
    walls: list[float] = []

    class Steps(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            walls.append(time.perf_counter())

        def on_pre_optimizer_step(self, *_: Any, **__: Any) -> None:
            self.t0 = time.perf_counter()

        def on_optimizer_step(self, *_: Any, **__: Any) -> None:
            clock.spent["optimizer"] += time.perf_counter() - self.t0

        def on_step_end(self, *_: Any, **__: Any) -> None:
            walls[-1] = time.perf_counter() - walls[-1]

    generate = TransformersPolicy._generate_calls
    TransformersPolicy._generate_calls = clock.wrap("generation", generate)  # type: ignore[method-assign]
    try:
        trainer, _ = trainer_for(model, local.tokenizer, local.stop_ids, s)
        trainer.add_callback(Steps())
        trainer.rollout_func = clock.wrap("episodes", trainer.rollout_func)
        trainer.compute_loss = clock.wrap("forward", trainer.compute_loss)
        trainer.accelerator.backward = clock.wrap("backward", trainer.accelerator.backward)
        trainer.train()
    finally:
        TransformersPolicy._generate_calls = generate  # type: ignore[method-assign]
    spent = dict(clock.spent)
    spent["episodes"] -= spent["generation"]  # the rollouts' time beside the model's
    spent["other"] = sum(walls) - sum(spent[p] for p in PARTS if p != "other")
    total = sum(walls) or 1.0
    key = f"{REWARD_LOG}/mean"
    return GrpoStepBench(
        model=local.name,
        world=world,
        lora_rank=lora_rank,
        threads=s.threads,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        max_new_tokens=max_new_tokens,
        learning_rate=learning_rate,
        step_s=[round(w, 1) for w in walls],
        median_step_s=round(median(walls), 1),
        parts_s={p: round(v, 1) for p, v in spent.items()},
        parts_share={p: round(v / total, 3) for p, v in spent.items()},
        trainable_params=sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
        reward=[round(float(h[key]), 4) for h in trainer.state.log_history if key in h],
        peak_rss_gb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        load_average=[round(x, 2) for x in os.getloadavg()],
    )
