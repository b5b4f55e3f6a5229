"""The campaign ladder: each level's mix of task levels, the call budget, the starter level."""

from __future__ import annotations

import pytest

import envfactory
from envfactory.campaign.environment import CampaignEnvironment
from envfactory.campaign.levels import CALLS, LADDER, ladder
from envfactory.campaign.tool import CLOSE
from envfactory.episode.runner import run_episode
from envfactory.harness.config import HarnessConfig
from envfactory.policies.scripted import Oracle


@pytest.fixture(scope="module")
def retail() -> CampaignEnvironment:
    env = envfactory.make("campaign-retail")
    assert isinstance(env, CampaignEnvironment)
    return env


def test_the_call_budget_is_the_harness_default() -> None:
    assert HarnessConfig().max_turns == CALLS
    for level in LADDER.values():
        assert level.tasks * (level.calls + 1) <= CALLS  # every request's plan and its close


def test_the_ladder_caps_task_levels_and_has_a_starter_only_over_one() -> None:
    low = ladder([1, 2])
    assert sorted(low) == [1, 2, 3, 4]
    assert low[4].task_levels == (2, 2, 2, 2) and low[3].task_levels == (1, 2, 2)
    assert ladder([0, 1, 2, 3, 4, 5])[0].task_levels == (0, 0)


def test_the_top_level_mixes_task_levels_within_the_budget(retail: CampaignEnvironment) -> None:
    level = retail.level(4)
    used: set[str] = set()
    for index in range(2):
        task = retail.task("train", 4, index)
        episode = retail.episode()
        assert run_episode(retail, task, Oracle(), episode).reward == 1.0
        drawn = [r.task.public.difficulty for r in episode.requests]
        assert sorted(drawn) == sorted(level.task_levels) == [2, 2, 3, 3]
        for r in episode.requests:
            assert len(r.task.hidden.gold_plan) + len(r.task.hidden.asks) <= level.calls
        assert len(task.hidden.gold_plan) + len(task.hidden.asks) <= CALLS
        used |= {s.tool for s in task.hidden.gold_plan}
    assert "place_order" in used  # a level-3 task's tool that retail's levels 1-2 never use


def test_the_starter_campaign_is_two_starter_tasks_without_clock_pressure(
    retail: CampaignEnvironment,
) -> None:
    assert retail.difficulties[0] == 0 and 0 in retail.info().difficulties
    task = retail.task("validation", 0, 0)
    episode = retail.episode()
    assert run_episode(retail, task, Oracle(), episode).reward == 1.0
    assert [r.task.public.difficulty for r in episode.requests] == [0, 0]
    assert all(r.due is None and not r.events for r in episode.requests)
    assert task.hidden.knobs["events"] == 0 and task.hidden.knobs["deadline_slack_pct"] == 0
    shown = {CLOSE}.union(*(r.task.public.tools for r in episode.requests))
    assert set(task.public.tools) == shown and len(shown) <= 3  # each request's one call
