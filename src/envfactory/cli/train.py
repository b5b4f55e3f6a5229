"""``envfactory train``: GRPO on this machine's CPU, judged on held-out test tasks."""

from __future__ import annotations

import contextlib
import json as json_lib
import os
import sys
from pathlib import Path

import typer

from envfactory.cli.common import console, err_console, fail, load_env
from envfactory.contract.errors import EnvFactoryError


def train(
    world: str = typer.Option("hotel", "--world", help="The world to train and test on."),
    difficulty: int = typer.Option(0, "--difficulty", min=0, help="Its level (0: the starter)."),
    steps: int = typer.Option(8, "--steps", min=1, help="GRPO steps."),
    prompts_per_step: int = typer.Option(6, "--prompts-per-step", min=1, help="Tasks a step."),
    group_size: int = typer.Option(4, "--group-size", min=2, help="Episodes per task."),
    learning_rate: float = typer.Option(1e-4, "--lr", help="AdamW learning rate."),
    eval_tasks: int = typer.Option(83, "--eval-tasks", min=1, help="Test tasks judged."),
    max_new_tokens: int = typer.Option(80, "--max-new-tokens", min=8, help="Tokens per reply."),
    threads: int | None = typer.Option(
        None,
        "--threads",
        min=1,
        help="Torch threads (default: the cores idle as the run starts, by their CPU use; a "
        "thread waiting for a core another job holds slows every matrix product).",
    ),
    sft_tasks: int = typer.Option(
        0, "--sft-tasks", min=0, help="Warm-start on the gold plans of this many train tasks."
    ),
    model: str | None = typer.Option(
        None, "--model", help="A model folder or .gguf file (default: the embedded model)."
    ),
    out: Path = typer.Option(Path("docs/results"), "--out", help="Where results are written."),
    json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Train the embedded model with GRPO (TRL, through envfactory's rollout function) on a
    world's train tasks; measure greedy test success before and after, with 95% intervals.
    Writes OUT/train-grpo-cpu.json and OUT/train-grpo-cpu.png."""
    try:
        from envfactory.training.grpo_cpu import TrainSettings, idle_cores, run
    except ImportError as exc:
        raise fail(f"train needs the integrations extra (make setup): {exc}") from None
    idle = idle_cores()
    settings = TrainSettings(
        world=load_env(world).id,  # an id, a domain file or a folder holding one world
        difficulty=difficulty,
        steps=steps,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        learning_rate=learning_rate,
        eval_tasks=eval_tasks,
        max_new_tokens=max_new_tokens,
        threads=threads or idle,
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
            result = run(settings, out, model)
    except ImportError as exc:
        raise fail(f"train needs the integrations extra (make setup): {exc}") from None
    except EnvFactoryError as exc:
        raise fail(str(exc)) from None
    if json:
        print(json_lib.dumps(result))
        return
    for key in ("before", "after"):
        h = result[key]
        console.print(
            f"{key:6} test success {h['success']:.2f} "
            f"(95% CI {h['ci95'][0]:.2f}-{h['ci95'][1]:.2f}, {h['tasks']} tasks)"
        )
    console.print(f"{result['minutes']} min; results in {out}/train-grpo-cpu.json and .png")
