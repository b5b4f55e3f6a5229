"""Context strategies: what the policy is shown of the transcript at each call."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from envfactory.harness.config import ContextConfig
from envfactory.trajectory.record import ChatMessage

HEAD = 2  # the system prompt and the request are always kept
SUMMARY_HEADING = "\n\n# Earlier in this conversation\n"

Summariser = Callable[[list[ChatMessage]], Awaitable[str]]
"""Turns the dropped messages into a summary (an LLM call, a digest, ...)."""


def _clip(text: Any, n: int = 160) -> str:
    s = text if isinstance(text, str) else json.dumps(text, default=str)
    return s if len(s) <= n else s[: n - 1] + "…"


async def digest(dropped: list[ChatMessage]) -> str:
    """A deterministic summary: one line per action taken and what came back."""
    lines = []
    for m in dropped:
        role = m.get("role")
        if role == "assistant":
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                lines.append(f"- you called {fn['name']}({_clip(fn['arguments'], 120)})")
            if m.get("content"):
                lines.append(f"- you said: {_clip(m['content'])}")
        elif role == "tool":
            lines.append(f"  -> {_clip(m.get('content', ''))}")
        elif role == "user":
            lines.append(f"- the user said: {_clip(m.get('content', ''))}")
    return "\n".join(lines) or "- nothing yet"


SUMMARISERS: dict[str, Summariser] = {"digest": digest}


def register_summariser(name: str, summariser: Summariser) -> None:
    """Make ``summariser`` available to ``ContextConfig(summariser=name)``."""
    SUMMARISERS[name] = summariser


class ContextBuilder:
    """Builds each call's context for one episode (caches the summary of dropped turns)."""

    def __init__(self, config: ContextConfig, summariser: Summariser | None = None) -> None:
        self.config = config
        self.summariser: Summariser | None = None
        if config.strategy == "summary":
            self.summariser = summariser or SUMMARISERS.get(config.summariser)
            if self.summariser is None:
                raise ValueError(
                    f"unknown summariser {config.summariser!r}; known: {', '.join(SUMMARISERS)}"
                )
        self._summary: tuple[int, str] | None = None

    async def build(self, messages: list[ChatMessage]) -> tuple[list[ChatMessage], bool]:
        """The context for the next call, and whether it is other than the whole transcript."""
        if self.config.strategy == "all":
            return messages, False
        turns = [i for i in range(HEAD, len(messages)) if messages[i].get("role") == "assistant"]
        if len(turns) <= self.config.window:
            return messages, False
        cut = turns[-self.config.window]
        head = messages[:HEAD]
        if self.summariser is not None:
            if self._summary is None or self._summary[0] != cut:
                self._summary = (cut, await self.summariser(messages[HEAD:cut]))
            system = dict(head[0])
            system["content"] = f"{system['content']}{SUMMARY_HEADING}{self._summary[1]}"
            head = [system, head[1]]
        return [*head, *messages[cut:]], True
