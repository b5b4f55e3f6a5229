"""Run one episode to the end with a synchronous policy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envfactory.episode.base import Episode

if TYPE_CHECKING:
    from envfactory.env import Environment
    from envfactory.policies.scripted import Policy
    from envfactory.tasks.types import Task
    from envfactory.verify.verdict import Verdict


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
