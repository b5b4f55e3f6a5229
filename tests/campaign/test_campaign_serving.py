"""A campaign world served over HTTP: the remote episode agrees with the in-process one, and
a campaign session forks."""

from __future__ import annotations

from envfactory.campaign.tool import CLOSE
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.policies.scripted import Oracle
from envfactory.registry import make
from envfactory.serving import ServeConfig, running
from envfactory.serving.client import connect


def test_a_campaign_over_http_matches_in_process() -> None:
    world = make("campaign-retail")
    task = world.task("train", 1, 2)
    local = world.episode()
    local_obs = local.reset(task)
    with (
        running(ServeConfig(envs=("campaign-retail",))) as server,
        connect(server.url, "campaign-retail") as env,
    ):
        assert CLOSE in [t["function"]["name"] for t in env.tools()]
        episode = env.episode()
        obs = episode.reset(env.task("train", 1, 2))
        assert obs == local_obs
        oracle = Oracle()
        oracle.start(task, [])
        forked = False
        while not obs.done:
            action = oracle.act(obs)
            if isinstance(action, ToolCall) and action.tool == CLOSE and not forked:
                fork = episode.fork()  # just before request 1 closes
                assert fork.state_hash() == episode.state_hash()
                said = fork.step(Message(content="Sorry, I cannot help."))
                assert said.done and not episode.done
                forked = True
            mirrored: Observation = local.step(action)
            obs = episode.step(action)
            assert obs == mirrored
        assert forked and episode.evaluate().reward == local.evaluate().reward == 1.0
        assert fork.evaluate().reward is not None and fork.evaluate().reward < 1.0
        assert episode.state_hash() == local.state_hash()
