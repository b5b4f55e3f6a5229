"""A random-clicking baseline for web worlds: it acts on the element ids the page shows."""

from __future__ import annotations

import random
import re
from typing import Any

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.tasks import PlanStep, Task
from envfactory.policies.scripted import NoisyOracle, _corrupt, _wrong
from envfactory.tasks.seeds import stable_hash

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


class WebNoisyOracle(NoisyOracle):
    """The noisy oracle of the domain's world, through the browser: each tool call of the
    domain's gold plan goes wrong with probability 1 - skill (its browser actions skipped, or
    one argument typed or chosen wrong), and a call that needs a slipped one is made with wrong
    arguments. The pop-up is dismissed whatever happens."""

    name = "noisy-oracle"

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        super().start(task, tools)
        hidden = task.hidden
        self.owner: list[int] = list(getattr(hidden, "owner", []))
        domain = getattr(hidden, "domain", None)
        self.domain_needs: list[list[int]] = list(domain.needs) if domain is not None else []
        self.fate: dict[int, tuple[str, str]] = {}

    def _decide(self, k: int) -> tuple[str, str]:
        if k < len(self.domain_needs) and self.slipped.intersection(self.domain_needs[k]):
            self.slipped.add(k)
            return "lost", ""
        if self.rng.random() <= self.skill:
            return "ok", ""
        self.slipped.add(k)
        typed = [
            s.arguments["bid"]
            for s, o in zip(self.plan, self.owner, strict=False)
            if o == k and s.tool in ("fill", "select_option")
        ]
        if typed and self.rng.random() < 0.6:
            return "corrupt", self.rng.choice(typed)
        return "skip", ""

    def _next_step(self) -> PlanStep | None:
        if not self.owner:
            return super()._next_step()
        while self.i < len(self.plan):
            at = self.i
            step = self.plan[at]
            self.i += 1
            k = self.owner[at] if at < len(self.owner) else -1
            if k < 0:
                return step
            fate, bid = self.fate.setdefault(k, self._decide(k))
            if fate == "skip":
                continue
            key = {"fill": "value", "select_option": "options"}.get(step.tool)
            if key is None or fate == "ok" or (fate == "corrupt" and step.arguments["bid"] != bid):
                return step
            if fate == "lost":
                return PlanStep(
                    tool=step.tool, arguments={**step.arguments, key: _wrong(step.arguments[key])}
                )
            wrong = _corrupt(
                PlanStep(tool=step.tool, arguments={key: step.arguments[key]}), self.rng
            )
            return PlanStep(tool=step.tool, arguments={**step.arguments, **wrong.arguments})
        return None
