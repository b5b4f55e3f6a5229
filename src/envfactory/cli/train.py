"""``envfactory train``: GRPO on this machine's CPU, judged on held-out test tasks."""

from __future__ import annotations

import contextlib
import json as json_lib
import os
import sys
from pathlib import Path

import typer

from envfactory.cli.common import console, err_console, fail, load_env, world_ids
from envfactory.contract.errors import EnvFactoryError


def _sources(value: str) -> list[str]:
    """The ids of the worlds a comma-separated list of sources names (exit 2 if one does not
    load)."""
    named = world_ids(s.strip() for s in value.split(",") if s.strip())
    return [load_env(w).id for w in named]


def train(
    world: str | None = typer.Option(
        None, "--world", help="One world to train and test on (--worlds hotel; the default)."
    ),
    worlds: str = typer.Option(
        "",
        "--worlds",
        help="Comma-separated sources trained on (ids, domain files, folders such as a "
        "synthesised library): their train tasks, drawn by the curriculum.",
    ),
    eval_worlds: str = typer.Option(
        "",
        "--eval-worlds",
        help="Comma-separated sources judged on their test tasks before and after, none of "
        "them trained on (default: the trained worlds' own test tasks).",
    ),
    difficulty: int = typer.Option(
        0, "--difficulty", min=0, help="The level judged, and the curriculum's first (0: starter)."
    ),
    levels: str = typer.Option(
        "", "--levels", help="Comma-separated levels the curriculum climbs (default: --difficulty)."
    ),
    save: Path | None = typer.Option(
        None,
        "--save",
        help="Keep the trained model in this folder (--model DIR loads it everywhere), with "
        "checkpoints under DIR/checkpoints.",
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run saved in --save DIR from its last checkpoint."
    ),
    before_from: Path | None = typer.Option(
        None,
        "--before-from",
        help="Another run's save folder or result file: take its judgement of the model as "
        "given instead of judging again (refused unless it judged the same model, worlds, "
        "tasks and level).",
    ),
    checkpoint_every: int = typer.Option(
        1, "--checkpoint-every", min=1, help="With --save: steps between checkpoints."
    ),
    stop_after: int | None = typer.Option(
        None,
        "--stop-after",
        min=1,
        help="With --save: stop after this step, checkpointed (a long run in parts: --resume "
        "goes on).",
    ),
    steps: int = typer.Option(8, "--steps", min=1, help="GRPO steps."),
    prompts_per_step: int = typer.Option(6, "--prompts-per-step", min=1, help="Tasks a step."),
    group_size: int = typer.Option(4, "--group-size", min=2, help="Episodes per task."),
    learning_rate: float = typer.Option(1e-4, "--lr", help="AdamW learning rate."),
    eval_tasks: int = typer.Option(
        83, "--eval-tasks", min=1, help="Test tasks judged per evaluation world."
    ),
    max_new_tokens: int = typer.Option(80, "--max-new-tokens", min=8, help="Tokens per reply."),
    threads: int | None = typer.Option(
        None,
        "--threads",
        min=1,
        help="Torch threads (default: the cores idle as the run starts, by their CPU use; a "
        "thread waiting for a core another job holds slows every matrix product).",
    ),
    lora_rank: int = typer.Option(
        0,
        "--lora-rank",
        min=0,
        help="Train LoRA adapters of this rank on every linear layer, merged into the saved "
        "model (0: all weights).",
    ),
    sft_tasks: int = typer.Option(
        0, "--sft-tasks", min=0, help="Warm-start on the gold plans of this many train tasks."
    ),
    model: str | None = typer.Option(
        None, "--model", help="A model folder or .gguf file (default: the embedded model)."
    ),
    out: Path = typer.Option(Path("docs/results"), "--out", help="Where results are written."),
    name: str = typer.Option(
        "train-grpo-cpu", "--name", help="The results' file name in OUT (NAME.json, NAME.png)."
    ),
    json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Train the embedded model (or --model) with GRPO (TRL, through envfactory's rollout
    function) on the train tasks of worlds the curriculum draws; measure greedy test success
    on the evaluation worlds before and after, per world and pooled, with 95% intervals.
    Writes OUT/NAME.json and OUT/NAME.png."""
    try:
        from envfactory.training.grpo_cpu import TrainSettings, check_disjoint, idle_cores, run
    except ImportError as exc:
        raise fail(f"train needs the integrations extra (make setup): {exc}") from None
    if world and worlds:
        raise fail("give --world or --worlds, not both")
    trained = _sources(worlds or world or "hotel")
    judged = _sources(eval_worlds)
    try:
        check_disjoint(trained, judged)
        climbs = [int(x) for x in levels.split(",") if x.strip()]
    except EnvFactoryError as exc:
        raise fail(str(exc)) from None
    except ValueError:
        raise fail(f"--levels {levels!r}: give comma-separated whole numbers") from None
    if (resume or stop_after) and save is None:
        raise fail("--resume and --stop-after need --save DIR (where the checkpoints are)")
    idle = idle_cores()
    settings = TrainSettings(
        worlds=trained,
        eval_worlds=judged,
        difficulty=difficulty,
        levels=climbs,
        checkpoint_every=checkpoint_every,
        stop_after=stop_after,
        steps=steps,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        learning_rate=learning_rate,
        eval_tasks=eval_tasks,
        max_new_tokens=max_new_tokens,
        threads=threads or idle,
        lora_rank=lora_rank,
        sft_tasks=sft_tasks,
    )
    cores = os.cpu_count() or 1
    if settings.threads > idle:
        err_console.print(
            f"[yellow]warning:[/] {settings.threads} torch threads with {idle} of {cores} cores "
            "idle: every matrix product waits for a busy core (runs took over ten times as "
            "long); leave --threads out to use the idle ones"
        )
    elif threads is None and idle < cores:
        err_console.print(f"torch threads: {idle}, the cores idle of {cores}")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the trainer prints its logs
            result = run(settings, out, model, save, resume, name, before_from)
    except ImportError as exc:
        raise fail(f"train needs the integrations extra (make setup): {exc}") from None
    except EnvFactoryError as exc:
        raise fail(str(exc)) from None
    if json:
        print(json_lib.dumps(result))
        return
    if "stopped_at" in result:
        console.print(f"stopped after step {result['stopped_at']}; --resume --save {save} goes on")
        return
    for key in ("before", "after"):
        h = result[key]
        console.print(
            f"{key:6} test success {h['success']:.2f} "
            f"(95% CI {h['ci95'][0]:.2f}-{h['ci95'][1]:.2f}, {h['tasks']} tasks)"
        )
    for name, pair in result["per_world"].items():
        a, b = pair["before"], pair["after"]
        console.print(f"  {name}: {a['success']:.2f} -> {b['success']:.2f} ({b['tasks']} tasks)")
    console.print(f"{result['minutes']} min; results in {out}/{name}.json and .png")
    if result["saved"]:
        console.print(f"model saved in {result['saved']} (--model {result['saved']})")
