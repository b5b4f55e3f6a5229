"""The browser pool: many live episodes share a capped number of real Chromiums, a tab each."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import envfactory
from envfactory.contract.actions import ToolCall
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import Oracle
from envfactory.web import browser
from envfactory.web.environment import WebEnvironment
from envfactory.web.site import site

pytestmark = pytest.mark.skipif(
    browser.available() is not None, reason=f"no browser: {browser.available()}"
)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[browser.BrowserPool]:
    mine = browser.BrowserPool(max_browsers=2)
    monkeypatch.setattr(browser, "POOL", mine)
    yield mine
    mine.close()


def test_six_episodes_at_once_share_two_browsers_and_each_scores_one(
    pool: browser.BrowserPool,
) -> None:
    env = envfactory.make("web-retail")
    assert isinstance(env, WebEnvironment)
    tasks = [env.task("train", 1 + i % 3, i) for i in range(6)]
    episodes = [env.episode() for _ in tasks]
    rewards: list[float] = []

    def drive(i: int) -> None:
        rewards.append(run_episode(env, tasks[i], Oracle(), episodes[i]).reward or 0.0)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(tasks))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert rewards == [1.0] * 6
    assert pool.launched == 2 and sorted(b.tabs for b in pool.browsers) == [3, 3]
    # Each episode's tab shows its own session's site, whichever tab acted last.
    pages = []
    for ep in episodes:
        assert ep.tab is not None and ep.session is not None
        with ep.tab.use() as driver:
            pages.append(driver.current_url)
        assert pages[-1].startswith(site().base(ep.session))
    assert len(set(pages)) == 6
    for ep in episodes:
        ep.close()
    assert [b.tabs for b in pool.browsers] == [0, 0]
    assert all(len(b.driver.window_handles) == 1 for b in pool.browsers)
    # The next episode reuses an idle browser rather than starting one.
    again = env.episode()
    assert run_episode(env, tasks[0], Oracle(), again).reward == 1.0
    again.close()
    assert pool.launched == 2


def test_a_browser_that_dies_ends_its_episodes_unscored_and_is_replaced(
    pool: browser.BrowserPool,
) -> None:
    env = envfactory.make("web-retail")
    task = env.task("train", 1, 0)
    episode = env.episode()
    episode.reset(task)
    assert episode.tab is not None
    episode.tab.browser.driver.quit()  # the browser crashes under the episode
    obs = episode.step(ToolCall(tool="click", arguments={"bid": "nav-get_order"}))
    assert obs.done and obs.error is not None and obs.error.code == "tool_failed"
    assert episode.status == "infra_error"
    verdict = episode.evaluate()
    assert verdict.status == "infra_error" and verdict.reward is None
    assert run_episode(env, task, Oracle(), episode).reward == 1.0  # a fresh browser
    episode.close()
    assert pool.launched == 2 and len(pool.browsers) == 1
