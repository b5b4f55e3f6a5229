"""Run one episode to the end with a synchronous policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envfactory.contract.episode import Episode

if TYPE_CHECKING:
    from envfactory.contract.environment import Environment
    from envfactory.contract.policy import Policy
    from envfactory.contract.tasks import Task
    from envfactory.contract.verdict import Verdict


def run_episode(
    env: Environment, task: Task, policy: Policy, episode: Episode | None = None
) -> Verdict:
    """Reset, let ``policy`` act until the episode is done, and judge it."""
    ep = episode or env.episode()
    obs = ep.reset(task)
    policy.start(task, env.tools("openai"))
    while not obs.done:
        obs = ep.step(policy.act(obs))
    return ep.evaluate()
