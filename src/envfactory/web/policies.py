"""A random-clicking baseline for web worlds: it acts on the element ids the page shows."""

from __future__ import annotations

import random
import re
from typing import Any

from envfactory.episode.types import Message, Observation, ToolCall
from envfactory.tasks.seeds import stable_hash
from envfactory.tasks.types import Task

_ELEMENT = re.compile(r"\[([A-Za-z0-9_.:-]+)\] (link|button|textbox|combobox)")
_WORDS = ("ORD-00001", "CUS-00012", "42", "2026-05-01", "yes", "Boston", "refund")


class RandomClicker:
    """Clicks, fills and chooses at random among the elements on the page, then replies with
    a random number: must score about 0."""

    name = "random-clicker"

    def __init__(self, seed: int = 0, steps: int = 20) -> None:
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        self.n = 0

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        self.rng = random.Random(stable_hash("random-clicker", self.seed, task.task_id))
        self.n = 0

    def act(self, observation: Observation) -> ToolCall | Message:
        self.n += 1
        page = observation.content
        if isinstance(observation.data, dict) and "page" in observation.data:
            inner = observation.data["page"]
            page = inner.get("page", page) if isinstance(inner, dict) else str(inner)
        found = _ELEMENT.findall(page)
        if self.n > self.steps or not found:
            return Message(content=f"Done: {self.rng.randint(1, 999)}.")
        bid, kind = self.rng.choice(found)
        if kind == "textbox":
            return ToolCall(tool="fill", arguments={"bid": bid, "value": self.rng.choice(_WORDS)})
        if kind == "combobox":
            options = re.findall(r"\[" + re.escape(bid) + r"\] combobox .* options=\[(.*)\]", page)
            choices = re.findall(r"'([^']*)'", options[0]) if options else []
            if choices:
                return ToolCall(
                    tool="select_option",
                    arguments={"bid": bid, "options": self.rng.choice(choices)},
                )
        return ToolCall(tool="click", arguments={"bid": bid})
