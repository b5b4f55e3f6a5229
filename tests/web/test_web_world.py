"""Web worlds driven through the real headless Chromium and the real loopback site."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.tasks import PlanStep
from envfactory.domain.loader import builtin_domain_files, parse_domain
from envfactory.episode.runner import run_episode
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import TaskRef
from envfactory.serving.config import ServeConfig
from envfactory.serving.engine import Engine
from envfactory.web import browser
from envfactory.web.actions import ACTIONS
from envfactory.web.environment import WebEnvironment
from envfactory.web.episode import WebEpisode
from envfactory.web.guide import walkthrough
from envfactory.web.policies import RandomClicker
from envfactory.web.site import site
from envfactory.web.tasks import WebHidden, domain_task

needs_browser = pytest.mark.skipif(
    browser.available() is not None, reason=f"no browser: {browser.available()}"
)


def test_every_builtin_domain_has_a_web_world() -> None:
    ids = set(envfactory.list_envs())
    for path in builtin_domain_files():
        env = envfactory.make(f"web-{path.stem}")
        assert f"web-{path.stem}" in ids
        info = env.info()
        assert info.kind == "web" and info.tool_names == list(ACTIONS)
        assert info.rows > 0 and info.goal_templates > 0


def test_web_tasks_are_the_domains_tasks_with_browser_plans() -> None:
    env = envfactory.make("web-retail")
    domain = envfactory.make("retail")
    task, base = env.task("test", 4, 2), domain.task("test", 4, 2)
    assert task.task_id == "web-retail/test/4/2"
    assert task.public.instruction == base.public.instruction
    assert task.public.tools == list(ACTIONS)
    assert isinstance(task.hidden, WebHidden) and task.hidden.domain == base.hidden
    assert {s.tool for s in task.hidden.gold_plan} <= set(ACTIONS)
    assert len(task.hidden.gold_plan) > len(base.hidden.gold_plan)
    assert env.plan_shape(task) == tuple(s.tool for s in base.hidden.gold_plan)
    assert task.hidden.clutter == 3 and task.hidden.gold_plan[0].arguments == {
        "bid": "popup-dismiss"
    }


def test_the_starter_level_lists_its_browser_actions() -> None:
    """Difficulty 0 is the web's "ids given": the request, then the gold browser actions as
    calls. A question's answer is not written out, nor a value the user must give; the
    levels above are the domain's request alone."""
    env, domain = envfactory.make("web-hotel"), envfactory.make("hotel")
    task, base = env.task("validation", 0, 0), domain.task("validation", 0, 0)
    request, guide = task.public.instruction.split("\n\n", 1)
    assert request == base.public.instruction
    steps = guide.splitlines()[1:]
    assert len(steps) == len(task.hidden.gold_plan)
    assert steps[1] == '2. fill(bid="cancel_reservation-reservation_id", value="RES-00221")'
    asked = envfactory.make("web-library").task("validation", 0, 1)
    assert asked.hidden.answers and asked.public.instruction.splitlines()[-1] == (
        "4. send_msg_to_user(text=...): what you were asked for"
    )
    assert not any(str(a) in asked.public.instruction for a in asked.hidden.answers)
    told = PlanStep(tool="fill", arguments={"bid": "x", "value": "7"}, from_user={"value": "f"})
    assert walkthrough([told], answers=False).endswith('1. fill(bid="x", value=(ask the user))')
    upper = env.task("validation", 1, 0)
    assert upper.public.instruction == domain.task("validation", 1, 0).public.instruction
    assert isinstance(task.hidden, WebHidden) and task.hidden.guided
    assert isinstance(upper.hidden, WebHidden) and not upper.hidden.guided


@needs_browser
def test_each_guided_page_names_the_next_step_not_taken() -> None:
    """The tour moves on only when its next step is taken; a wrong value or another action
    leaves it where it was. Followed to the end it is the gold plan (reward 1)."""
    env = envfactory.make("web-hotel")
    task = env.task("validation", 0, 0)
    plan = task.hidden.gold_plan
    episode = env.episode()
    try:
        obs = episode.reset(task)
        assert obs.content.endswith('Next: 1. click(bid="nav-cancel_reservation")')
        second = 'Next: 2. fill(bid="cancel_reservation-reservation_id", value="RES-00221")'
        obs = episode.step(ToolCall(tool="click", arguments=plan[0].arguments))
        assert obs.content.endswith(second)
        wrong = {"bid": "cancel_reservation-reservation_id", "value": "RES-99999"}
        obs = episode.step(ToolCall(tool="fill", arguments=wrong))
        assert obs.content.endswith(second)
        for step in plan[1:]:
            obs = episode.step(ToolCall(tool=step.tool, arguments=step.arguments))
        assert "Next:" not in obs.content  # a task of changes: nothing is left
        assert episode.evaluate().reward == 1.0
    finally:
        episode.close()
    question = envfactory.make("web-library")
    task = question.task("validation", 0, 1)
    episode = question.episode()
    try:
        episode.reset(task)
        for step in task.hidden.gold_plan:  # the search ends with Enter in its last field
            obs = episode.step(ToolCall(tool=step.tool, arguments=step.arguments))
        assert obs.content.endswith("Next: 4. send_msg_to_user(text=...): what you were asked for")
    finally:
        episode.close()


@pytest.fixture(scope="module")
def web() -> Iterator[tuple[WebEnvironment, WebEpisode]]:
    if browser.available() is not None:
        pytest.skip(f"no browser: {browser.available()}")
    env = envfactory.make("web-retail")
    assert isinstance(env, WebEnvironment)
    episode = env.episode()
    yield env, episode
    episode.close()


class Recording(Oracle):
    """The oracle, keeping every action it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[ToolCall | Message] = []

    def act(self, observation):  # type: ignore[no-untyped-def]
        action = super().act(observation)
        self.sent.append(action)
        return action


@needs_browser
@pytest.mark.parametrize(("split", "difficulty", "index"), [("train", 1, 0), ("test", 3, 1)])
def test_the_oracle_acting_only_through_the_browser_scores_one(
    web: tuple[WebEnvironment, WebEpisode], split: str, difficulty: int, index: int
) -> None:
    env, episode = web
    task = env.task(split, difficulty, index)  # type: ignore[arg-type]
    oracle = Recording()
    verdict = run_episode(env, task, oracle, episode)
    assert verdict.reward == 1.0 and verdict.status == "completed"
    calls = [a for a in oracle.sent if isinstance(a, ToolCall)]
    assert calls and {c.tool for c in calls} <= set(ACTIONS)
    # The site wrote the domain's rows: the changes are the task's target.
    changed = {(c.table, c.key) for c in episode.changes()}
    assert changed == {(t.table, t.id) for t in task.hidden.target}


@needs_browser
def test_doing_nothing_and_random_clicking_earn_nothing(
    web: tuple[WebEnvironment, WebEpisode],
) -> None:
    env, episode = web
    tasks = [env.task("train", d, 3) for d in (1, 2, 4)]
    noop = [run_episode(env, t, NoOp(), episode).reward for t in tasks]
    clicks = [run_episode(env, t, RandomClicker(seed=1), episode).reward for t in tasks]
    assert noop == [0.0, 0.0, 0.0]
    assert max(r or 0.0 for r in clicks) <= 0.02


@needs_browser
def test_domain_errors_are_page_feedback_with_the_domains_message(
    web: tuple[WebEnvironment, WebEpisode],
) -> None:
    env, episode = web
    domain = envfactory.make("retail")
    task = env.task("train", 1, 0)
    episode.reset(task)
    db = domain.episode()
    db.reset(domain_task(task))
    args = {"order_id": "ORD-99999", "reason": "ordered_by_mistake"}
    expected = db.step(ToolCall(tool="cancel_order", arguments=args))
    db.close()
    assert expected.error is not None
    for call in (
        ToolCall(tool="click", arguments={"bid": "nav-cancel_order"}),
        ToolCall(tool="fill", arguments={"bid": "cancel_order-order_id", "value": "ORD-99999"}),
        ToolCall(
            tool="select_option",
            arguments={"bid": "cancel_order-reason", "options": args["reason"]},
        ),
    ):
        step = episode.step(call)
        assert step.error is None, (call, step.error)
    obs = episode.step(ToolCall(tool="click", arguments={"bid": "cancel_order-submit"}))
    assert obs.kind == "tool_result" and obs.error is not None
    assert obs.error.code == expected.error.code and obs.error.message == expected.error.message
    assert f"alert 'Error ({expected.error.code}): {expected.error.message}'" in obs.content
    assert obs.data["submitted"] == {"form": "cancel_order", "ok": False}
    # The form keeps what was typed, so the agent can correct and send it again.
    assert "value='ORD-99999'" in obs.content
    assert episode.changes() == [] and not episode.done


@needs_browser
def test_malformed_actions_are_structured_errors(web: tuple[WebEnvironment, WebEpisode]) -> None:
    env, episode = web
    episode.reset(env.task("train", 4, 5))  # clutter 3: the pop-up covers the page
    cases = [
        ({"tool": "hover", "arguments": {}}, "unknown_tool"),
        ({"tool": "click", "arguments": {}}, "invalid_arguments"),
        ({"tool": "click", "arguments": {"bid": 'a"] , *[x'}}, "not_found"),
        ({"tool": "click", "arguments": {"bid": "nav-nothing"}}, "not_found"),
        ({"tool": "click", "arguments": {"bid": "nav-get_order"}}, "precondition_failed"),
        ({"tool": "fill", "arguments": {"bid": "home", "value": "x"}}, "precondition_failed"),
        (
            {"tool": "press", "arguments": {"bid": "home", "key_comb": "Hyper+q"}},
            "invalid_arguments",
        ),
        ({"tool": "goto", "arguments": {"url": "http://example.org/"}}, "precondition_failed"),
        ({"tool": "goto", "arguments": {"url": "../../etc"}}, "precondition_failed"),
        (
            {"tool": "scroll", "arguments": {"delta_x": 0, "delta_y": float("nan")}},
            "invalid_arguments",
        ),
        ({"tool": "fill", "arguments": {"bid": "x", "value": "a\x00b"}}, "invalid_arguments"),
    ]
    for action, code in cases:
        obs = episode.step({"type": "tool_call", **action})
        assert obs.kind == "tool_error" and obs.error is not None, action
        assert obs.error.code == code, (action, obs.error)
    assert (
        "covered"
        in episode.step(ToolCall(tool="click", arguments={"bid": "nav-get_order"})).content
    )
    assert episode.step("not json").error.code == "malformed_action"  # type: ignore[union-attr]
    assert not episode.done and episode.status != "env_error"
    obs = episode.step(ToolCall(tool="click", arguments={"bid": "popup-dismiss"}))
    assert obs.error is None and "dialog" not in obs.content
    obs = episode.step(ToolCall(tool="goto", arguments={"url": "act/get_order"}))
    assert obs.data["url"] == "act/get_order" and "[get_order-order_id] textbox" in obs.content
    obs = episode.step(ToolCall(tool="go_back", arguments={}))
    assert obs.data["url"] == ""
    end = episode.step(ToolCall(tool="send_msg_to_user", arguments={"text": "All done."}))
    assert end.done and episode.status == "completed"
    assert episode.step(ToolCall(tool="go_back")).error.code == "episode_over"  # type: ignore[union-attr]


@needs_browser
def test_reset_gives_a_fresh_state_session_and_tab(web: tuple[WebEnvironment, WebEpisode]) -> None:
    env, episode = web
    task = env.task("train", 1, 0)
    start = episode.reset(task)
    first = episode.session
    assert first is not None
    run_episode(env, task, Oracle(), episode)
    assert episode.changes()
    old = site().base(first)
    again = episode.reset(task)
    assert episode.changes() == [] and episode.state_hash() != ""
    assert again.content == start.content
    assert episode.session is not first
    with pytest.raises(urllib.error.HTTPError) as closed:
        urllib.request.urlopen(old)  # the old session's pages are gone
    assert closed.value.code == 404
    # No history reaches back into the previous episode.
    back = episode.step(ToolCall(tool="go_back", arguments={}))
    assert back.kind == "tool_result" and back.data["url"] == ""


@needs_browser
def test_concurrent_episodes_are_isolated(web: tuple[WebEnvironment, WebEpisode]) -> None:
    env, episode = web
    other = env.episode(screenshot=True)
    try:
        task = env.task("train", 1, 0)
        episode.reset(task)
        shot = other.reset(task)
        assert run_episode(env, task, Oracle(), other).reward == 1.0
        assert other.changes() and episode.changes() == []
        assert episode.state_hash() != other.state_hash()
        png = other.page_screenshot()
        assert png.startswith(b"\x89PNG") and shot.data["page"]["screenshot"]
    finally:
        other.close()


@needs_browser
def test_rollouts_and_serving_drive_web_worlds() -> None:
    refs = [TaskRef("web-hotel", "train", d, 0) for d in (1, 3)]
    engine = RolloutEngine(ScriptedPolicy("oracle"))
    summary = engine.run_sync(refs)
    assert not summary.errors
    assert [r.reward for r in engine.records] == [1.0, 1.0]
    # A model reads the page the browser opened on with the request, not the request alone.
    for rec in engine.records:
        request = rec.messages[1]
        assert request["role"] == "user" and "URL: (home)" in str(request["content"])
        assert "[nav-" in str(request["content"])

    async def serve() -> float | None:
        server = Engine(ServeConfig(envs=("web-hotel",), max_steps=200))
        ref = TaskRef("web-hotel", "train", 2, 1)
        session, obs = await server.open(ref, "test")
        task = server.env("web-hotel").task("train", 2, 1)
        oracle = Oracle()
        oracle.start(task, [])
        while True:
            out = await server.act(session, oracle.act(obs).model_dump())
            obs = out.observation
            if out.finished:
                server.close(session.id)
                return out.reward

    assert asyncio.run(serve()) == 1.0


@needs_browser
def test_the_step_limit_counts_four_browser_actions_per_step() -> None:
    env = envfactory.make("web-retail")
    episode = env.episode(EpisodeConfig(max_steps=2))
    try:
        episode.reset(env.task("train", 1, 0))
        seen = [episode.step(ToolCall(tool="scroll", arguments={"delta_x": 0, "delta_y": 50}))]
        seen += [episode.step(ToolCall(tool="click", arguments={"bid": "nope"})) for _ in range(7)]
        assert [o.done for o in seen] == [False] * 7 + [True]
        assert episode.status == "truncated" and episode.evaluate().reward == 0.0
    finally:
        episode.close()


@needs_browser
def test_an_openapi_compiled_world_is_a_website_too() -> None:
    spec_file = Path(__file__).resolve().parent.parent / "openapi" / "specs" / "shop-swagger2.json"
    domain = compile_document(read_document(spec_file), spec_file.name, "shop-web-test")
    env = WebEnvironment(OpenAPIEnvironment(parse_domain(domain, spec_file.name)))
    episode = env.episode()
    try:
        for d in (1, 3):
            task = env.task("train", d, 0)
            assert run_episode(env, task, Oracle(), episode).reward == 1.0
            assert run_episode(env, task, NoOp(), episode).reward == 0.0
    finally:
        episode.close()


@needs_browser
def test_the_noisy_oracle_slips_per_tool_call_through_the_browser(
    web: tuple[WebEnvironment, WebEpisode],
) -> None:
    env, episode = web
    task = env.task("train", 2, 4)
    assert isinstance(task.hidden, WebHidden) and len(task.hidden.owner) == len(
        task.hidden.gold_plan
    )
    perfect = env.noisy_oracle(skill=1.0, seed=0)
    assert run_episode(env, task, perfect, episode).reward == 1.0
    hopeless = env.noisy_oracle(skill=0.0, seed=0)
    verdict = run_episode(env, task, hopeless, episode)
    assert verdict.reward is not None and verdict.reward < 1.0
    assert verdict.status == "completed"
