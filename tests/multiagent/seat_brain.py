"""An OpenAI-compatible server whose brain plays the seats of the cooperation world.

It reads only what a model reads: the transcript of one seat. The session header
(``<task>#<sample>@<seat>``, which the rollout engine sends) says which seat it plays; the
brain replays the transcript through the scripted seat of that role (the back, like the
single-agent test brain, knows the task's gold plan) and answers with the next action, in the
real wire format with token ids and logprobs. The back slips (skill 0.5) in odd samples, so
the episodes of a group differ.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import uvicorn
from chat_server import IM_END, encode, logprob, render_assistant, render_prompt
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import envfactory
from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.episode.seats import SeatPolicy
from envfactory.multiagent.families.cooperation import BackSeat, FrontSeat

_REQUEST = re.compile(r"The user writes: (.*)", re.S)
_FROM = re.compile(r"^Message from (\w+): (.*)$", re.S)


def _observation(segment: list[dict[str, Any]], first: bool) -> Observation:
    """What the seat observed, read back from the messages since its last reply."""
    content = "\n\n".join(str(m.get("content") or "") for m in segment)
    events = []
    for part in content.split("\n\n"):
        m = _FROM.match(part)
        if m:
            events.append({"kind": "message", "by": m.group(1), "data": {"content": m.group(2)}})
    private = {}
    if first and (found := _REQUEST.search(content)):
        private["request"] = found.group(1).split("\n\n")[0]
    data = {"briefing": first, "events": events, "private": private}
    return Observation(kind="user", content=content, data=data)


def next_action(session: str, messages: list[dict[str, Any]]) -> ToolCall | Message:
    episode, seat = session.rsplit("@", 1)
    task_id, sample = episode.rsplit("#", 1)
    _, split, difficulty, index = task_id.split("/")
    task = envfactory.make("cooperation").task(split, int(difficulty), int(index))  # type: ignore[arg-type]
    policy: SeatPolicy = FrontSeat(3) if seat == "front" else BackSeat(1 if int(sample) % 2 else 3)
    policy.start(task, seat)
    segments: list[list[dict[str, Any]]] = [[]]
    for m in messages[1:]:
        if m["role"] == "assistant":
            segments.append([])
        else:
            segments[-1].append(m)
    action: ToolCall | Message | None = None
    for i, segment in enumerate(segments):
        action = policy.act(_observation(segment, first=i == 0))
    assert action is not None
    return action


def completion(body: dict[str, Any], session: str) -> dict[str, Any]:
    messages, tools = body["messages"], body.get("tools")
    turn = sum(m["role"] == "assistant" for m in messages)
    action = next_action(session, messages)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(action, Message):
        message["content"] = action.content
    else:
        args = (
            action.arguments if isinstance(action.arguments, str) else json.dumps(action.arguments)
        )
        message["tool_calls"] = [
            {
                "id": f"call-{turn}",
                "type": "function",
                "function": {"name": action.tool, "arguments": args},
            }
        ]
    prompt = encode(render_prompt(messages, tools, False))
    output = [*encode(render_assistant(message, strip_thinking=False)), IM_END]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
        "token_ids": output,
        "logprobs": {
            "content": [
                {"token": f"token_id:{t}", "logprob": logprob(t, j), "top_logprobs": []}
                for j, t in enumerate(output)
            ]
        },
    }
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "seat-brain",
        "choices": [choice],
        "prompt_token_ids": prompt,
        "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(output)},
    }


class SeatBrain:
    """The app on 127.0.0.1 in a background thread: ``with SeatBrain() as s: s.base_url``."""

    def __init__(self) -> None:
        self.sessions: list[str] = []
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> JSONResponse:
            session = request.headers.get("x-session-id", "")
            self.sessions.append(session)
            return JSONResponse(completion(await request.json(), session))

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> SeatBrain:
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("the seat brain did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
