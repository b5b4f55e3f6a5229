"""``envfactory check``: oracle and baselines over many tasks."""

from __future__ import annotations

import typer

from envfactory.cli.common import load_env, report_check
from envfactory.quality.check import check as run_check

SHOWN = (
    "tasks",
    "oracle_success_rate",
    "noop_reward_mean",
    "random_reward_mean",
    "noisy_oracle_reward_mean",
    "unsolvable",
    "duplicate_tasks",
    "split_overlap",
    "seconds",
)


def check(
    env_id: str = typer.Argument(..., metavar="ENV", help="Environment id."),
    n: int = typer.Option(500, "-n", help="Tasks, spread over all splits and difficulties."),
    seed: int = typer.Option(0, help="Seed of the random baselines."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check that every task is solvable and that baselines earn about nothing."""
    env = load_env(env_id)
    if env.kind == "multiagent":  # scripted seats of two strengths, outcomes audited
        from envfactory.multiagent.cli import check_command
        from envfactory.multiagent.environment import MultiAgentEnvironment

        assert isinstance(env, MultiAgentEnvironment)
        check_command(env, n, seed, json)
        return
    report_check(env_id, n, lambda progress: run_check(env, n, seed, progress), SHOWN, json)
