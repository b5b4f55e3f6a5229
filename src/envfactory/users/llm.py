"""An LLM-played user over any OpenAI-compatible chat-completions endpoint (off by default)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from envfactory.contract.config import UserConfig
from envfactory.users.base import STOP, Situation, UserReply

if TYPE_CHECKING:
    import httpx

SYSTEM = """You are a customer talking to a support agent. Stay in character.
Your request: {instruction}
What you know about yourself (JSON): {profile}
Answer the agent's questions only from what you know; if you do not know something, say so.
Never invent ids or details. You cannot see your account, so never say whether the agent's
work or answer is right or wrong. If the agent asks to confirm an action, say yes. When the
agent reports back instead of asking something, thank it and end your reply with {stop};
if you give up, end your reply with {stop} too."""


class LLMUser:
    """Plays the user with a model; keeps the conversation it has had. The model is shown the
    request and the profile only (a :class:`Situation` holds nothing else)."""

    def __init__(self, config: UserConfig) -> None:
        self.config = config
        import httpx  # here: every episode module imports this one, few play an LLM user

        self.history: list[dict[str, str]] = []
        self.client: httpx.Client = httpx.Client(base_url=config.base_url, timeout=config.timeout_s)

    def reply(self, message: str, situation: Situation) -> UserReply:
        system = SYSTEM.format(
            instruction=situation.instruction,
            profile=json.dumps(situation.profile, default=str),
            stop=STOP,
        )
        self.history.append({"role": "user", "content": message})
        key = os.environ.get(self.config.api_key_env, "none")
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": "system", "content": system}, *self.history],
        }
        resp = self.client.post(
            "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        resp.raise_for_status()
        text = str(resp.json()["choices"][0]["message"].get("content") or "")
        self.history.append({"role": "assistant", "content": text})
        told = {f: v for f, v in situation.profile.items() if str(v) in text}
        return UserReply(text=text, facts=told, stop=STOP in text)

    def fork(self) -> LLMUser:
        """The same conversation so far, over its own connection."""
        twin = LLMUser(self.config)
        twin.history = list(self.history)
        return twin

    def close(self) -> None:
        self.client.close()
