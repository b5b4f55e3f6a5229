"""The user in the loop: facts only the user holds, asked for and answered deterministically;
"I don't know" for the rest, "yes" to confirmations, and any report ends the episode. Nothing it
says depends on the target, the answers or the state (issue 14: the user as an answer oracle)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.config import EpisodeConfig, UserConfig
from envfactory.contract.tasks import SPLITS, Task
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.episode.runner import run_episode
from envfactory.policies.scripted import Oracle
from envfactory.users.base import STOP
from envfactory.users.scripted import THANKS


def _asking_task(env: Environment, difficulty: int = 5) -> Task:
    for i in range(100):
        task = env.task("train", difficulty, i)
        if task.hidden.asks:
            return task
    raise AssertionError("no task needs the user")


def test_a_quarter_of_upper_tasks_need_the_user(db_env: Environment) -> None:
    for difficulty in db_env.difficulties[-2:]:
        tasks = [db_env.task(s, difficulty, i) for s in SPLITS for i in range(40)]
        share = sum(1 for t in tasks if t.hidden.asks) / len(tasks)
        assert share >= 0.25, f"{db_env.id} d{difficulty}: {share:.2f}"


def test_oracle_solves_them_only_by_asking(db_env: Environment) -> None:
    tasks = [t for t in (db_env.task("test", 5, i) for i in range(30)) if t.hidden.asks]
    assert tasks
    for task in tasks:
        for fact, value in task.hidden.profile.items():
            assert str(value) not in task.public.instruction, fact
        assert run_episode(db_env, task, Oracle()).reward == 1.0
        blind = run_episode(db_env, task, Oracle(ask=False))
        assert blind.reward == 0.0
        assert blind.item("asked_user").score == 0.0


def test_user_answers_from_its_profile_and_nothing_else(retail: Environment) -> None:
    task = _asking_task(retail)
    fact, value = next(iter(task.hidden.profile.items()))
    ep = retail.episode()
    ep.reset(task)
    first = ep.step(Message(content=f"What is your {fact.replace('_', ' ')}?", final=False))
    again = ep.step(Message(content=f"Sorry, what was your {fact.replace('_', ' ')}?", final=False))
    assert first.kind == "user" and str(value) in first.content
    assert first.data == {"facts": {fact: value}, "stop": False}
    assert again.data["facts"] == {fact: value}
    unknown = ep.step(Message(content="What is your mother's maiden name?", final=False))
    assert "don't know" in unknown.content and not unknown.done


def test_user_gives_up_after_unanswerable_questions(retail: Environment) -> None:
    ep = retail.episode(EpisodeConfig(user=UserConfig(max_unanswered=3)))
    ep.reset(_asking_task(retail))
    replies = [ep.step(Message(content="What is the weather like?", final=False)) for _ in range(3)]
    assert [r.done for r in replies] == [False, False, True]
    assert STOP in replies[-1].content
    assert ep.status == "completed"
    assert ep.evaluate().reward == 0.0


def test_user_takes_a_report_as_the_end_whatever_the_state(retail: Environment) -> None:
    """The user cannot see the account: a report ends the episode whether or not the work was
    done, and the verdict, not the user, tells the two apart."""
    task = next(t for i in range(50) if not (t := retail.task("train", 2, i)).hidden.answers)
    outcomes = []
    for work in (False, True):
        ep = retail.episode()
        ep.reset(task)
        before = ep.step(Message(content="Shall I go on?", final=False))
        assert not before.done and "go ahead" in before.content.lower()
        if work:
            for step in task.hidden.gold_plan:
                ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
        after = ep.step(Message(content="All done: your request is handled.", final=False))
        assert after.done and after.data["stop"] is True and ep.status == "completed"
        outcomes.append((after.content, ep.evaluate().reward))
    assert outcomes[0][0] == outcomes[1][0]
    assert [r for _, r in outcomes] == [0.0, 1.0]


def test_closing_question_ends_and_unknown_questions_do_not(retail: Environment) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    assert not ep.step(Message(content="Which colour do you prefer?", final=False)).done
    assert not ep.step(Message(content="Would you like me to proceed?", final=False)).done
    end = ep.step(Message(content="Your order is updated. Anything else?", final=False))
    assert end.done and ep.reply == "Your order is updated. Anything else?"


def _answer_only(env: Environment, n: int = 40) -> list[Task]:
    return [
        t
        for d in env.difficulties
        for i in range(n)
        if (t := env.task("test", d, i)).hidden.answers and not t.hidden.target
    ]


def test_enumerating_answers_through_the_user_earns_nothing() -> None:
    """Issue 14's reproduction: on a helpdesk question whose answer is a whole number, numbers
    0-11 then 12-23 as non-final messages, no tool call. The user used to stop on the batch
    holding the answer (reward 1.0); now the first batch is the agent's one committed reply,
    and a list of candidates is no answer."""
    env = envfactory.make("helpdesk")
    tasks = [
        t
        for t in _answer_only(env)
        if len(t.hidden.answers) == 1 and t.hidden.answers[0] in range(24)
    ]
    assert tasks
    batches = [", ".join(map(str, range(12))), ", ".join(map(str, range(12, 24)))]
    for task in tasks:
        for order in (batches, batches[::-1]):  # the answer in the second batch, then the first
            ep = env.episode()
            ep.reset(task)
            first = ep.step(Message(content=order[0], final=False))
            assert first.done and first.content == THANKS
            assert ep.step(Message(content=order[1], final=False)).done  # episode over
            assert ep.reply == order[0]
            assert ep.evaluate().reward == 0.0 and not ep.log


@pytest.mark.parametrize("env_id", ["clinic", "airline", "helpdesk", "library"])
def test_what_the_user_says_never_depends_on_the_answer(env_id: str) -> None:
    """The same messages, one naming the right answer and one a wrong value: the user says
    the same thing, so talking to it tells the agent nothing about what is right."""
    env = envfactory.make(env_id)
    for task in _answer_only(env, 8):
        right = ", ".join(str(a) for a in task.hidden.answers)
        seen = []
        for value in (right, "nothing like it"):
            ep = env.episode()
            ep.reset(task)
            said = [
                ep.step(Message(content=text.format(value), final=False)).content
                for text in ("Is it {}?", "Could you confirm it is {}?", "It is {}.")
            ]
            seen.append(said)
        assert seen[0] == seen[1], task.task_id


@given(message=st.text(max_size=200))
@budget(60, fixtures=True)
def test_the_user_reply_is_a_function_of_the_text_and_profile(
    retail: Environment, message: str
) -> None:
    """Whatever the agent says, the user answers the same before and after the work is done:
    the state (and so whether the goal is met) never reaches it."""
    task = next(t for i in range(50) if (t := retail.task("train", 2, i)).hidden.target)
    replies = []
    for work in (False, True):
        ep = retail.episode()
        ep.reset(task)
        if work:
            for step in task.hidden.gold_plan:
                ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
        obs = ep.step(Message(content=message, final=False))
        replies.append((obs.content, obs.done, obs.data))
    assert replies[0] == replies[1]


class _ChatServer(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible chat-completions endpoint that plays a terse user."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _ChatServer.requests.append(body)
        system = body["messages"][0]["content"]
        profile = json.loads(system.split("(JSON): ", 1)[1].split("\n", 1)[0])
        last = body["messages"][-1]["content"].lower()
        text = f"It's {profile['email']}." if "email" in last else f"Thanks, that's all. {STOP}"
        payload = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_llm_user_over_an_openai_compatible_endpoint(retail: Environment, chat_server: str) -> None:
    task = next(
        t for i in range(100) if "email" in (t := retail.task("train", 5, i)).hidden.profile
    )
    config = EpisodeConfig(user=UserConfig(kind="llm", base_url=chat_server, model="sim"))
    ep = retail.episode(config)
    ep.reset(task)
    told = ep.step(Message(content="What is your email address?", final=False))
    assert told.data["facts"] == {"email": task.hidden.profile["email"]}
    assert ep.disclosed == {"email"}
    bye = ep.step(Message(content="Is there anything else?", final=False))
    assert bye.done and ep.status == "completed"
    sent = _ChatServer.requests[-1]
    assert sent["model"] == "sim" and sent["messages"][0]["role"] == "system"
    ep.close()
