"""GRPO on a CPU: the embedded model, trained with TRL's ``GRPOTrainer`` through envfactory's
rollout function, on one world's train tasks, judged on its test tasks before and after.

Episodes run through the rollout engine with the grammar harness (tool calls decoded under the
grammar of the exposed tools, the first reply a call), so the reward the trainer sees is the
verifier's and the tokens it trains on are the ones the model sampled. Held-out success is
measured greedily on the **test** split, which training never sees, with 95% Wilson
intervals; the reward curve is the trainer's own log.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from envfactory.bench.calibration import CalibrationCell, calibrate
from envfactory.harness.config import HarnessConfig
from envfactory.registry import make
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.training.sft import demonstrations, warm_start

HARNESS = HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=2)


class TrainSettings(BaseModel):
    """What one run does; every field is recorded in the results."""

    world: str = "hotel"
    difficulty: int = 0
    steps: int = 8
    prompts_per_step: int = 6
    group_size: int = 4
    learning_rate: float = 1e-4
    temperature: float = 0.8
    max_new_tokens: int = 80  # a call with two arguments takes about 45
    eval_tasks: int = 83
    sft_tasks: int = 0  # train tasks whose gold plans warm-start the model (0: none)
    sft_learning_rate: float = 5e-5
    seed: int = 0
    threads: int = Field(default_factory=lambda: os.cpu_count() or 1)


def threads_for(cores: int, busy_share: float) -> int:
    """Torch threads for a run on ``cores`` cores of which ``busy_share`` of the CPU time was
    used in a sample: the idle cores (a core counts when at least three quarters of it was
    unused), at least one. A torch thread that waits for a core another job holds stalls every
    matrix product, so fewer threads is the safe side."""
    return max(1, min(cores, math.floor(cores * (1 - busy_share) + 0.25)))


def idle_cores(sample_s: float = 2.0) -> int:
    """:func:`threads_for` this machine, its CPU use sampled over ``sample_s`` seconds (not
    the load average, which counts this process's own start and jobs that ended a minute
    ago)."""
    import psutil

    return threads_for(os.cpu_count() or 1, psutil.cpu_percent(interval=sample_s) / 100)


class Held(BaseModel):
    """Success on held-out tasks, as the contract names it."""

    split: str
    tasks: int
    success: float
    ci95: tuple[float, float]
    mean_reward: float
    tool_call_valid_rate: float | None


def held(cell: CalibrationCell, split: str = "test") -> Held:
    return Held(split=split, **cell.model_dump(include=set(Held.model_fields) - {"split"}))


def evaluate(
    model: Any, tokenizer: Any, stop_ids: tuple[int, ...], s: TrainSettings, label: str
) -> Held:
    """Greedy success on the world's first ``eval_tasks`` test tasks at the difficulty."""
    from rich.console import Console
    from rich.progress import Progress

    from envfactory.integrations.local_model import TransformersPolicy

    policy = TransformersPolicy(
        model, tokenizer, temperature=0.0, max_new_tokens=s.max_new_tokens, stop_ids=stop_ids
    )
    model.eval()
    with Progress(console=Console(stderr=True), transient=True) as bar:
        job = bar.add_task(f"test tasks, {label}", total=s.eval_tasks)
        cells = calibrate(
            policy,
            [s.world],
            s.eval_tasks,
            [s.difficulty],
            split="test",
            harness=HARNESS,
            on_episode=lambda _: bar.advance(job),
            fit_plan=False,  # judged under the harness it trains under
        )
    return held(cells[0])


def train_refs(s: TrainSettings) -> list[TaskRef]:
    """Every train task of the cell, shuffled."""
    env = make(s.world)
    n = env.capacity("train", s.difficulty) or 512
    refs = [TaskRef(s.world, "train", s.difficulty, i) for i in range(n)]
    random.Random(s.seed).shuffle(refs)
    return refs


def grpo(model: Any, tokenizer: Any, stop_ids: tuple[int, ...], s: TrainSettings) -> list[float]:
    """Train in place; returns the mean reward of each step's rollouts."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from envfactory.integrations.local_model import TransformersPolicy
    from envfactory.integrations.trl import EnvfactoryRollout, task_dataset, verdict_reward

    def policy(trainer: Any) -> TransformersPolicy:  # fresh each batch: no stale prefix cache
        return TransformersPolicy(
            trainer.model,
            tokenizer,
            temperature=s.temperature,
            max_new_tokens=s.max_new_tokens,
            stop_ids=stop_ids,
        )

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="envfactory-grpo-"),
        max_steps=s.steps,
        learning_rate=s.learning_rate,
        per_device_train_batch_size=s.group_size,
        gradient_accumulation_steps=s.prompts_per_step,
        num_generations=s.group_size,
        max_completion_length=4 * s.max_new_tokens + 256,
        temperature=s.temperature,
        beta=0.0,
        seed=s.seed,
        use_cpu=True,
        bf16=False,  # TRL defaults to bf16 autocast: ~10x slower on a CPU without bf16 units
        gradient_checkpointing=False,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=False,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=task_dataset(train_refs(s), HARNESS),
        rollout_func=EnvfactoryRollout(
            policy, harness=HARNESS, config=EngineConfig(concurrency=64)
        ),
        reward_funcs=[verdict_reward],
    )
    trainer.train()
    key = "rewards/verdict_reward/mean"
    return [float(h[key]) for h in trainer.state.log_history if key in h]


def run(s: TrainSettings, out: Path, model_path: str | None = None) -> dict[str, Any]:
    """Before, train, after; writes ``train-grpo-cpu.json`` and its curve into ``out``. With
    ``sft_tasks``, ``before`` is the warm-started model and ``base`` the model as shipped."""
    import torch

    from envfactory.integrations.embedded import load

    torch.manual_seed(s.seed)
    local = load(model_path)
    torch.set_num_threads(s.threads)
    model, tokenizer = copy.deepcopy(local.model), local.tokenizer  # the loaded one stays as is
    started = time.perf_counter()
    base = before = evaluate(model, tokenizer, local.stop_ids, s, "as shipped")
    warm: dict[str, Any] = {}
    if s.sft_tasks:
        shown = demonstrations(train_refs(s)[: s.sft_tasks], HARNESS)
        losses = warm_start(model, tokenizer, shown, learning_rate=s.sft_learning_rate)
        before = evaluate(model, tokenizer, local.stop_ids, s, "warm-started")
        warm = {
            "base": base.model_dump(mode="json"),
            "sft_demonstrations": len(shown),
            "sft_loss": [round(losses[0], 4), round(losses[-1], 4)],
            "sft_gain": round(before.success - base.success, 4),
        }
    t0 = time.perf_counter()
    curve = grpo(model, tokenizer, local.stop_ids, s)
    train_minutes = (time.perf_counter() - t0) / 60
    after = evaluate(model, tokenizer, local.stop_ids, s, "after GRPO")
    result = {
        "world": s.world,
        "model": local.name,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "train_minutes": round(train_minutes, 1),
        "before": before.model_dump(mode="json"),
        "after": after.model_dump(mode="json"),
        "separated": after.ci95[0] > before.ci95[1],
        **warm,
        "curve": [round(r, 4) for r in curve],
        "settings": s.model_dump(),
        "harness": HARNESS.model_dump(mode="json"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "train-grpo-cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    plot_run(result, str(out / "train-grpo-cpu.png"))
    return result


def plot_run(result: dict[str, Any], path: str) -> str:
    """The reward curve, and held-out success before and after with their intervals."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), dpi=110)
    curve_ax, held_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    curve = result["curve"]
    steps = list(range(1, len(curve) + 1))
    curve_ax.plot(steps, curve, marker="o", ms=3, lw=1, label="rollout reward (train)")
    if len(curve) >= 5:
        smooth = [fmean(curve[max(0, i - 4) : i + 1]) for i in range(len(curve))]
        curve_ax.plot(steps, smooth, lw=2, label="mean of last 5")
    curve_ax.set_xlabel("GRPO step")
    curve_ax.set_ylabel("mean reward")
    curve_ax.set_ylim(0, 1)
    curve_ax.legend(loc="lower right", fontsize=8)
    curve_ax.set_title(f"{result['world']}, difficulty {result['settings']['difficulty']}")
    for x, key in enumerate(("before", "after")):
        h = result[key]
        low, high = h["ci95"]
        held_ax.errorbar(
            [x],
            [h["success"]],
            yerr=[[h["success"] - low], [high - h["success"]]],
            fmt="o",
            capsize=6,
        )
    held_ax.set_xticks([0, 1], ["before", "after"])
    held_ax.set_xlim(-0.6, 1.6)
    held_ax.set_ylim(0, 1)
    held_ax.set_ylabel(f"test success ({result['after']['tasks']} tasks, 95% CI)")
    fig.suptitle(f"GRPO on CPU: {result['model']}, {result['minutes']} min in all")
    fig.tight_layout()
    fig.savefig(path)
    return path
