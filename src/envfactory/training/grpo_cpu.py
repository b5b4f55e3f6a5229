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
from itertools import zip_longest
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.errors import EnvFactoryError
from envfactory.curriculum.controller import Curriculum
from envfactory.harness.config import HarnessConfig
from envfactory.registry import make
from envfactory.registry.sources import LIBRARY_ENV, resolve_all
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.training.drawn import (
    CurriculumRollout,
    curriculum_at,
    keep_curriculum,
    latest_checkpoint,
    new_curriculum,
    slot_rows,
    stop_at,
)
from envfactory.training.judge import Judged, judge, judged_level, repooled
from envfactory.training.sft import demonstrations, warm_start

HARNESS = HarnessConfig(tool_format="grammar", tool_choice="first", max_turns=2)


class TrainSettings(BaseModel):
    """What one run does; every field is recorded in the results."""

    worlds: list[str] = Field(default_factory=lambda: ["hotel"])  # trained on (train tasks)
    eval_worlds: list[str] = Field(default_factory=list)  # judged (none: the trained worlds)
    difficulty: int = 0  # the level judged, and the curriculum's first
    levels: list[int] = Field(default_factory=list)  # the curriculum climbs (none: difficulty)
    steps: int = 8
    prompts_per_step: int = 6
    group_size: int = 4
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    temperature: float = 0.8
    max_new_tokens: int = 80  # a call with two arguments takes about 45
    eval_tasks: int = 83  # test tasks judged per evaluation world
    sft_tasks: int = 0  # train tasks whose gold plans warm-start the model (0: none)
    sft_learning_rate: float = 5e-5
    checkpoint_every: int = 1  # steps between checkpoints (with a save folder)
    stop_after: int | None = None  # stop at this step, checkpointed, to resume later
    lora_rank: int = 0  # LoRA adapters of this rank on every linear layer (0: all weights)
    seed: int = 0
    threads: int = Field(default_factory=lambda: os.cpu_count() or 1)

    @property
    def judged(self) -> list[str]:
        """The worlds judged: the evaluation worlds, or the trained ones (in domain)."""
        return self.eval_worlds or self.worlds

    @property
    def climbs(self) -> list[int]:
        return self.levels or [self.difficulty]

    def climbs_of(self, world: str) -> list[int]:
        """The levels ``world`` climbs: those of :attr:`climbs` it has, or else its first level
        above them (tau2-retail has no starter level)."""
        has = make(world).difficulties
        return [lv for lv in self.climbs if lv in has] or [judged_level(world, min(self.climbs))]


class WorldsOverlap(EnvFactoryError):
    """A world is both trained on and judged as an evaluation world."""


class NothingToResume(EnvFactoryError):
    """``--resume`` without a save folder, or one with no checkpoint in it."""


class NotReusable(EnvFactoryError):
    """``--before-from`` names a run that judged another model, or judged it otherwise."""


def check_disjoint(worlds: list[str], eval_worlds: list[str]) -> None:
    """Raise :class:`WorldsOverlap` when an evaluation world is also trained on."""
    both = sorted(set(worlds) & set(eval_worlds))
    if both:
        raise WorldsOverlap(
            f"{', '.join(both)}: trained on and also an evaluation world; an evaluation world "
            "must be one training never saw (leave --eval-worlds out to judge the trained "
            "worlds on their own test tasks)"
        )


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


def evaluate(model: Any, tokenizer: Any, stop_ids: tuple[int, ...], s: TrainSettings) -> Judged:
    """Greedy success on each judged world's first ``eval_tasks`` test tasks at the level."""
    from envfactory.integrations.local_model import TransformersPolicy

    policy = TransformersPolicy(
        model, tokenizer, temperature=0.0, max_new_tokens=s.max_new_tokens, stop_ids=stop_ids
    )
    model.eval()
    return judge(policy, s.judged, s.eval_tasks, s.difficulty, HARNESS)


def train_refs(s: TrainSettings) -> list[TaskRef]:
    """The train tasks of every (world, level) trained, each cell's shuffled, taken in turn
    (the warm start's demonstrations)."""
    cells: list[list[TaskRef]] = []
    for world in s.worlds:
        env = make(world)
        for level in s.climbs_of(world):
            n = env.capacity("train", level) or 512
            refs = [TaskRef(world, "train", level, i) for i in range(n)]
            random.Random(s.seed).shuffle(refs)
            cells.append(refs)
    return [ref for turn in zip_longest(*cells) for ref in turn if ref is not None]


CHECKPOINTS = "checkpoints"  # inside a save folder: the trainer's checkpoints
RUN_FILE = "run.json"  # inside a save folder: the settings, the base model and ``before``
REWARD_LOG = "rewards/verdict_reward"  # TRL's log keys of the reward: REWARD_LOG + "/mean", "/std"


class Trained(BaseModel):
    """What the GRPO phase reports: reward by step, and what the curriculum drew."""

    curve: list[float]
    step: int  # the step it stopped at (``steps`` unless ``stop_after`` came first)
    episodes: dict[str, int]  # episodes counted per "world/level" (the whole run's)
    frontier: dict[str, int]  # each trained world's frontier level at the end


def lora_config(rank: int) -> Any:
    """LoRA adapters of ``rank`` on every linear layer of the decoder (not the head), scaled
    by 2: the frozen base model gets no weight gradients and no optimizer state."""
    from peft import LoraConfig

    return LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules="all-linear")


def trainer_for(
    model: Any,
    tokenizer: Any,
    stop_ids: tuple[int, ...],
    s: TrainSettings,
    save: Path | None = None,
    checkpoint: Path | None = None,
) -> tuple[Any, Curriculum]:
    """TRL's ``GRPOTrainer`` over ``model`` (with ``lora_rank``, wrapped in adapters) fed by
    curriculum-drawn train tasks of ``s.worlds``, and the curriculum it draws from (the one
    saved in ``checkpoint`` when it resumes)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig

    from envfactory.integrations.local_model import TransformersPolicy
    from envfactory.integrations.trl import EnvfactoryRollout, verdict_reward
    from envfactory.training.shared_prompt import SharedPromptGRPOTrainer

    def policy(trainer: Any) -> TransformersPolicy:  # fresh each batch: no stale prefix cache
        return TransformersPolicy(
            trainer.model,
            tokenizer,
            temperature=s.temperature,
            max_new_tokens=s.max_new_tokens,
            stop_ids=stop_ids,
        )

    curriculum = (
        curriculum_at(checkpoint)
        if checkpoint
        else new_curriculum({w: s.climbs_of(w) for w in s.worlds}, s.seed)
    )
    inner = EnvfactoryRollout(policy, harness=HARNESS, config=EngineConfig(concurrency=64))
    rollout = CurriculumRollout(inner, curriculum, s.worlds)
    args = GRPOConfig(
        output_dir=str(save / CHECKPOINTS) if save else tempfile.mkdtemp(prefix="envfactory-"),
        max_steps=s.steps,
        learning_rate=s.learning_rate,
        weight_decay=s.weight_decay,
        per_device_train_batch_size=s.group_size,  # a group a micro-batch (shared_prompt)
        gradient_accumulation_steps=s.prompts_per_step,
        num_generations=s.group_size,
        max_completion_length=4 * s.max_new_tokens + 256,
        temperature=s.temperature,
        beta=0.0,  # no KL term: no reference model, no reference log-probabilities
        seed=s.seed,
        use_cpu=True,
        bf16=False,  # TRL defaults to bf16 autocast: ~10x slower on a CPU without bf16 units
        gradient_checkpointing=False,
        logging_steps=1,
        report_to="none",
        save_strategy="steps" if save else "no",
        save_steps=s.checkpoint_every,
        save_total_limit=None,  # keep_curriculum keeps the latest whole one (1.6 GB each)
        disable_tqdm=False,
    )
    trainer = SharedPromptGRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(slot_rows(s.steps * s.prompts_per_step)),
        rollout_func=rollout,
        reward_funcs=[verdict_reward],
        callbacks=[keep_curriculum(curriculum), stop_at(s.stop_after)] if save else None,
        peft_config=lora_config(s.lora_rank) if s.lora_rank else None,
    )
    return trainer, curriculum


def grpo(
    model: Any,
    tokenizer: Any,
    stop_ids: tuple[int, ...],
    s: TrainSettings,
    save: Path | None = None,
    checkpoint: Path | None = None,
) -> Trained:
    """Train in place on curriculum-drawn train tasks of ``s.worlds``; with ``save``, a
    checkpoint (weights or adapters, optimizer, scheduler, RNG, curriculum) every
    ``checkpoint_every`` steps into ``save/checkpoints``; from ``checkpoint``, the run
    continues where it stopped. LoRA adapters are merged into ``model`` at the end."""
    trainer, curriculum = trainer_for(model, tokenizer, stop_ids, s, save, checkpoint)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    if s.lora_rank:
        trainer.model.merge_and_unload()  # in place: ``model`` holds the merged weights
    key = f"{REWARD_LOG}/mean"
    state = curriculum.state()
    return Trained(
        curve=[float(h[key]) for h in trainer.state.log_history if key in h],
        step=trainer.state.global_step,
        episodes={f"{e.env_id}/{lv.difficulty}": lv.episodes for e in state for lv in e.by_level},
        frontier={e.env_id: e.frontier for e in state},
    )


JUDGING = ("eval_tasks", "difficulty", "max_new_tokens")  # with the worlds: what decides a score


def judged_before(source: Path, s: TrainSettings, model_path: str | None) -> Judged:
    """The judgement of the model as given that another run recorded in ``source`` (its save
    folder's ``run.json``, or a result it wrote: ``OUT/NAME.json`` or the transfer report),
    when that run judged the same model on the same worlds (or more: then those of this run,
    pooled again) in the same way and warm-started nothing (its ``before`` is then the model
    as given); :class:`NotReusable` naming what differs otherwise. Runs that differ only in
    what they train on (the ablations) share one judgement of the model they start from, and
    a result file outlives the machine that trained it."""
    record = source / RUN_FILE if source.is_dir() else source
    if not record.is_file():
        raise NotReusable(f"--before-from {source}: neither a save folder of train nor a result")
    other = json.loads(record.read_text())
    theirs = TrainSettings.model_validate(other["settings"])
    differs = [k for k in JUDGING if getattr(theirs, k) != getattr(s, k)]
    differs += ["the judged worlds"] * (not set(s.judged) <= set(theirs.judged))
    differs += ["the model"] * ("model_path" not in other or other["model_path"] != model_path)
    differs += ["sft_tasks (its before is a warm-started model)"] * bool(theirs.sft_tasks)
    if differs:
        raise NotReusable(f"--before-from {source}: it judged otherwise ({', '.join(differs)})")
    if "per_world" in other:  # a result: each world's before beside its after
        per_world = {w: h["before"] for w, h in other["per_world"].items()}
        judged = Judged(pooled=other["before"], per_world=per_world)
    else:
        judged = Judged.model_validate(other["before"])
    if set(s.judged) == set(judged.per_world):
        return judged
    kept = {w: judged.per_world[w] for w in s.judged}
    return Judged(pooled=repooled(list(kept.values())), per_world=kept)


def begin(
    s: TrainSettings,
    model: Any,
    tokenizer: Any,
    stop_ids: tuple[int, ...],
    base: Judged | None = None,
) -> dict[str, Any]:
    """The run's start: the model judged as given (or ``base``, that judgement made by another
    run) and, with ``sft_tasks``, warm-started and judged again. ``before`` is the model GRPO
    starts from; ``base`` the model as given."""
    base = before = base or evaluate(model, tokenizer, stop_ids, s)
    warm: dict[str, Any] = {}
    if s.sft_tasks:
        shown = demonstrations(train_refs(s)[: s.sft_tasks], HARNESS)
        losses = warm_start(model, tokenizer, shown, learning_rate=s.sft_learning_rate)
        before = evaluate(model, tokenizer, stop_ids, s)
        warm = {
            "base": base.pooled.model_dump(mode="json"),
            "sft_demonstrations": len(shown),
            "sft_loss": [round(losses[0], 4), round(losses[-1], 4)],
            "sft_gain": round(before.pooled.success - base.pooled.success, 4),
        }
    return {"before": before.model_dump(mode="json"), "warm": warm}


def resumed(save: Path | None, s: TrainSettings) -> tuple[Path, dict[str, Any], TrainSettings]:
    """The latest checkpoint in ``save``, the run's start as it recorded it, and its settings
    (``steps``, ``threads`` and ``stop_after`` as given now)."""
    if save is None:
        raise NothingToResume("--resume continues a run saved with --save DIR: give DIR")
    checkpoint = latest_checkpoint(save / CHECKPOINTS)
    if checkpoint is None or not (save / RUN_FILE).is_file():
        raise NothingToResume(f"no checkpoint in {save / CHECKPOINTS} to resume from")
    start = json.loads((save / RUN_FILE).read_text())
    resolve_all(start["library"])  # the worlds the run loaded from files, registered again
    kept = TrainSettings.model_validate(start["settings"])
    now = {"steps": s.steps, "threads": s.threads, "stop_after": s.stop_after}
    return checkpoint, start, kept.model_copy(update=now)


def save_model(model: Any, tokenizer: Any, folder: Path) -> None:
    """The model and its tokenizer as a folder that ``--model`` loads everywhere."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def run(
    s: TrainSettings,
    out: Path,
    model_path: str | None = None,
    save: Path | None = None,
    resume: bool = False,
    name: str = "train-grpo-cpu",
    before_from: Path | None = None,
) -> dict[str, Any]:
    """Judge, train, judge; writes ``{name}.json`` and its curve ``{name}.png`` into ``out``; with
    ``save`` the trained model (a folder ``--model`` loads) and its checkpoints. ``resume``
    continues the run saved in ``save`` from its latest checkpoint, with that run's settings
    and model. ``before_from``, another run's save folder, gives the judgement of the model as
    given (:func:`judged_before`). A run stopped by ``stop_after`` returns ``stopped_at`` and
    judges nothing."""
    import torch

    from envfactory.integrations.embedded import load

    checkpoint, start = None, None
    if s.stop_after is not None and save is None:
        raise NothingToResume("a run stopped early is resumed from its save folder: give one")
    if resume:
        checkpoint, start, s = resumed(save, s)
        model_path = start["model_path"]
    check_disjoint(s.worlds, s.eval_worlds)
    for world in s.judged:
        judged_level(world, s.difficulty)  # refused before anything loads
    given = str(Path(model_path).resolve()) if model_path else None  # found from anywhere
    reused = judged_before(before_from, s, given) if before_from and start is None else None
    torch.manual_seed(s.seed)
    local = load(model_path)
    torch.set_num_threads(s.threads)
    model, tokenizer = copy.deepcopy(local.model), local.tokenizer  # the loaded one stays as is
    started = time.perf_counter()
    if start is None:
        library = [p for p in os.environ.get(LIBRARY_ENV, "").split(os.pathsep) if p]
        start = {"settings": s.model_dump(), "model_path": given, "library": library}
        start |= begin(s, model, tokenizer, local.stop_ids, reused)
        start["before_from"] = str(before_from) if reused else None
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / RUN_FILE).write_text(json.dumps(start, indent=2) + "\n")
    before = Judged.model_validate(start["before"])
    t0 = time.perf_counter()
    trained = grpo(model, tokenizer, local.stop_ids, s, save, checkpoint)
    train_minutes = (time.perf_counter() - t0) / 60
    if trained.step < s.steps:  # stopped early: the checkpoint is the result
        return {"stopped_at": trained.step, "saved": str(save), "curve": trained.curve}
    after = evaluate(model, tokenizer, local.stop_ids, s)
    if save is not None:
        save_model(model, tokenizer, save)
    result = {
        "train_worlds": s.worlds,
        "eval_worlds": s.judged,
        "in_domain": not s.eval_worlds,
        "world": ",".join(s.worlds),
        "model": local.name,
        "model_path": given,
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "train_minutes": round(train_minutes, 1),
        "before": before.pooled.model_dump(mode="json"),
        "after": after.pooled.model_dump(mode="json"),
        "per_world": {
            w: {
                "before": before.per_world[w].model_dump(mode="json"),
                "after": h.model_dump(mode="json"),
            }
            for w, h in after.per_world.items()
        },
        "separated": after.pooled.ci95[0] > before.pooled.ci95[1],
        **start["warm"],
        "curve": [round(r, 4) for r in trained.curve],
        "episodes": trained.episodes,
        "frontier": trained.frontier,
        "saved": str(save) if save else None,
        "resumed_from": checkpoint.name if checkpoint else None,
        "before_from": start.get("before_from"),
        "settings": s.model_dump(),
        "harness": HARNESS.model_dump(mode="json"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    plot_run(result, str(out / f"{name}.png"))
    return result


def plot_run(result: dict[str, Any], path: str) -> str:
    """The reward curve, and held-out success before and after (and, warm-started, of the model
    as given) with their intervals."""
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
    worlds = result["train_worlds"]
    named = ", ".join(worlds) if len(worlds) <= 3 else f"{len(worlds)} worlds"
    climbs = result["settings"]["levels"] or [result["settings"]["difficulty"]]
    curve_ax.set_title(f"trained on {named}, levels {climbs}")
    stages = [("before", "before"), ("after", "after")]
    if "base" in result:  # warm-started: the model as given, after SFT, after GRPO
        stages = [("as given", "base"), ("after SFT", "before"), ("after GRPO", "after")]
    for x, (_, key) in enumerate(stages):
        h = result[key]
        low, high = h["ci95"]
        held_ax.errorbar(
            [x],
            [h["success"]],
            yerr=[[h["success"] - low], [high - h["success"]]],
            fmt="o",
            capsize=6,
        )
    held_ax.set_xticks(range(len(stages)), [label for label, _ in stages])
    held_ax.set_xlim(-0.6, len(stages) - 0.4)
    held_ax.set_ylim(0, 1)
    held_ax.set_ylabel(f"test success ({result['after']['tasks']} tasks, 95% CI)")
    fig.suptitle(f"GRPO on CPU: {result['model']}, {result['minutes']} min in all")
    fig.tight_layout()
    fig.savefig(path)
    return path
