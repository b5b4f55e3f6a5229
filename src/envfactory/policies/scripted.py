"""Scripted policies: the oracle, baselines that must score about zero, and a noisy oracle.

They act through the same public episode API as any agent. The oracle reads the hidden gold
plan (it is in-process and scripted), but every call it makes is an ordinary action.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import PlanStep, Task
from envfactory.tasks.seeds import stable_hash

Action = ToolCall | Message
RETRYABLE = frozenset({"transient_error", "rate_limited", "timeout", "malformed_response"})
_ID = re.compile(r"^([A-Z]+)-(\d+)$")
_ID_IN_TEXT = re.compile(r"\b([A-Z]{2,})-\d{3,}\b")


def answer_text(answers: list[Any]) -> str:
    if not answers:
        return "Done. Everything you asked for has been taken care of."
    shown = ", ".join(f"{a:.2f}" if isinstance(a, float) else str(a) for a in answers)
    return f"Done. The answer: {shown}."


class Oracle:
    """Executes the gold plan step by step: asks the user for what only the user knows (and
    uses what it is told), and retries steps hit by transient faults."""

    name = "oracle"

    def __init__(self, retry: bool = True, ask: bool = True) -> None:
        self.retry = retry
        self.ask = ask
        self.plan: list[PlanStep] = []
        self.answers: list[Any] = []
        self.asks: dict[int, list[str]] = {}
        self.known: dict[str, Any] = {}
        self.i = 0
        self.pending: PlanStep | None = None

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        self.plan = list(task.hidden.gold_plan)
        self.answers = list(task.hidden.answers)
        self.asks = {a.before_step: list(a.facts) for a in task.hidden.asks} if self.ask else {}
        self.known = {}
        self.i = 0
        self.pending = None

    def _next_step(self) -> PlanStep | None:
        if self.i >= len(self.plan):
            return None
        step = self.plan[self.i]
        self.i += 1
        return step

    def act(self, observation: Observation) -> Action:
        if observation.kind == "user" and isinstance(observation.data, dict):
            self.known.update(observation.data.get("facts") or {})
        err = observation.error
        if self.retry and self.pending and err is not None and err.code in RETRYABLE:
            step: PlanStep | None = self.pending
        elif self.i in self.asks:
            facts = self.asks.pop(self.i)
            self.pending = None
            wanted = " and ".join(f"your {f.replace('_', ' ')}" for f in facts)
            return Message(content=f"Could you tell me {wanted}, please?", final=False)
        else:
            step = self._next_step()
        self.pending = step
        if step is None:
            return Message(content=answer_text(self.answers))
        arguments = dict(step.arguments)
        for arg, fact in step.from_user.items():
            arguments[arg] = self.known.get(fact, arguments[arg])
        return ToolCall(tool=step.tool, arguments=arguments)


class NoOp:
    """Says it cannot help and stops: must score 0."""

    name = "noop"

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        pass

    def act(self, observation: Observation) -> Action:
        return Message(content="I'm sorry, I can't help with that.")


_WORDS = ("alpha", "order", "cancel", "refund", "gold", "pending", "Boston", "2026-05-01", "42")


def _bounds(schema: dict[str, Any], span: float) -> tuple[float, float]:
    """``[minimum, maximum]`` of a number schema; a missing side is ``0`` or ``span``, moved
    ``span`` away from the other side when that side lies beyond it."""
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is None:
        lo = 0 if hi is None or hi >= 0 else hi - span
    if hi is None:
        hi = span if lo <= span else lo + span
    return lo, hi


def random_value(schema: dict[str, Any], rng: random.Random, id_prefixes: list[str]) -> Any:
    """A schema-valid value: enum members, bounded numbers, and strings that often look like
    real ids (so random writes sometimes land, and must still not pay)."""
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        return rng.randint(*(int(x) for x in _bounds(schema, 10)))
    if kind == "number":
        return round(rng.uniform(*_bounds(schema, 500)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if schema.get("format") == "date":
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if id_prefixes and rng.random() < 0.7:
        return f"{rng.choice(id_prefixes)}-{rng.randint(1, 60):05d}"
    return rng.choice(_WORDS)


class RandomPolicy:
    """Random schema-valid tool calls, then a random reply: must score about 0."""

    name = "random"

    def __init__(self, seed: int = 0, steps: int = 8) -> None:
        self.seed = seed
        self.steps = steps
        self.rng = random.Random(seed)
        self.tools: list[dict[str, Any]] = []
        self.prefixes: list[str] = []
        self.n = 0

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        self.rng = random.Random(stable_hash("random", self.seed, task.task_id))
        self.tools = tools
        self.n = 0
        described = " ".join(
            str(p.get("description", ""))
            for t in tools
            for p in t["function"]["parameters"]["properties"].values()
        )
        self.prefixes = sorted(set(_ID_IN_TEXT.findall(described)))

    def act(self, observation: Observation) -> Action:
        self.n += 1
        if self.n > self.steps or not self.tools:
            return Message(content=f"All done: {self.rng.randint(1, 999)}.")
        fn = self.rng.choice(self.tools)["function"]
        props = fn["parameters"]["properties"]
        required = fn["parameters"].get("required", [])
        args = {
            k: random_value(s, self.rng, self.prefixes)
            for k, s in props.items()
            if k in required or self.rng.random() < 0.5
        }
        return ToolCall(tool=fn["name"], arguments=args)


class SpamWrites(RandomPolicy):
    """Calls every write tool, several times, with random schema-valid arguments (many of
    them real-looking ids), then claims success: gaming by volume must not pay."""

    name = "spam"

    def __init__(self, seed: int = 0, rounds: int = 3, writes: set[str] | None = None) -> None:
        super().__init__(seed=seed)
        self.rounds = rounds
        self.writes = writes
        self.queue: list[dict[str, Any]] = []

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        super().start(task, tools)
        chosen = [t for t in tools if self.writes is None or t["function"]["name"] in self.writes]
        self.queue = [t["function"] for _ in range(self.rounds) for t in chosen]

    def act(self, observation: Observation) -> Action:
        if not self.queue:
            return Message(content="Done! Everything you asked for has been taken care of.")
        fn = self.queue.pop(0)
        props = fn["parameters"]["properties"]
        args = {k: random_value(s, self.rng, self.prefixes) for k, s in props.items()}
        return ToolCall(tool=fn["name"], arguments=args)


def write_tools(mcp_tools: list[dict[str, Any]]) -> set[str]:
    """Names of the tools not marked read-only (MCP's ``readOnlyHint``)."""
    return {str(t["name"]) for t in mcp_tools if not t.get("annotations", {}).get("readOnlyHint")}


class Guess(NoOp):
    """Acts on nothing and answers with a plausible guess: answers must not be guessable."""

    name = "guess"

    GUESSES = ("42", "100.00", "2026-06-01", "yes", "pending")

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        self.guess = self.GUESSES[stable_hash("guess", task.task_id) % len(self.GUESSES)]

    def act(self, observation: Observation) -> Action:
        return Message(content=f"Done. The answer is {self.guess}.")


class NoisyOracle(Oracle):
    """The oracle with skill in [0, 1]: each step goes wrong with probability 1 - skill
    (a read is skipped, a write gets a corrupted argument). Where the task records which
    steps use the results of which (``hidden.needs``), a step that needs a slipped one is
    lost too: its arguments are not known, so it is made with wrong ones."""

    name = "noisy-oracle"

    def __init__(self, skill: float = 0.8, seed: int = 0) -> None:
        super().__init__(retry=True)
        self.skill = skill
        self.seed = seed
        self.rng = random.Random(seed)
        self.needs: list[list[int]] = []
        self.slipped: set[int] = set()

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        super().start(task, tools)
        self.rng = random.Random(stable_hash("noisy", self.seed, self.skill, task.task_id))
        self.answers = [a if self.rng.random() <= self.skill else _wrong(a) for a in self.answers]
        self.needs = list(task.hidden.needs)
        self.slipped = set()

    def _next_step(self) -> PlanStep | None:
        step = super()._next_step()
        while step is not None:
            at = self.i - 1
            if at < len(self.needs) and self.slipped.intersection(self.needs[at]):
                self.slipped.add(at)
                return PlanStep(tool=step.tool, arguments=_wrong_all(step.arguments))
            if self.rng.random() <= self.skill:
                return step
            self.slipped.add(at)
            if step.arguments and self.rng.random() < 0.6:
                return _corrupt(step, self.rng)
            step = super()._next_step()  # skipped
        return step


class Blindspot(Oracle):
    """The oracle with blind spots, to simulate an agent with skill gaps: a call to a tool
    whose name contains one of ``blind`` is made with corrupted arguments with probability
    ``miss``; every other step is the oracle's."""

    name = "blindspot"

    def __init__(self, blind: tuple[str, ...] = ("cancel",), miss: float = 0.7, seed: int = 0):
        super().__init__(retry=True)
        self.blind, self.miss, self.seed = tuple(blind), miss, seed
        self.rng = random.Random(seed)

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None:
        super().start(task, tools)
        self.rng = random.Random(stable_hash("blindspot", self.seed, task.task_id))

    def _next_step(self) -> PlanStep | None:
        step = super()._next_step()
        blind = step is not None and step.arguments and any(b in step.tool for b in self.blind)
        if blind and step is not None and self.rng.random() < self.miss:
            return _corrupt(step, self.rng)
        return step


def _wrong_all(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: _wrong(v) for k, v in arguments.items()}


def _wrong(answer: Any) -> Any:
    if isinstance(answer, bool):
        return not answer
    if isinstance(answer, (int, float)):
        return answer + 1
    return "I could not find it"


def _corrupt(step: PlanStep, rng: random.Random) -> PlanStep:
    args = dict(step.arguments)
    key = rng.choice(sorted(args))
    v = args[key]
    if isinstance(v, str) and (m := _ID.match(v)):
        n, shift = int(m.group(2)), rng.choice([-2, -1, 1, 2])
        n = n + shift if n + shift >= 1 else n - shift  # always another id
        args[key] = f"{m.group(1)}-{n:0{len(m.group(2))}d}"
    elif isinstance(v, bool):
        args[key] = not v
    elif isinstance(v, (int, float)):
        args[key] = v + 1
    else:
        args[key] = f"{v} (maybe)"
    return PlanStep(tool=step.tool, arguments=args)


SCRIPTED: dict[str, Callable[..., Policy]] = {
    "oracle": Oracle,
    "noop": NoOp,
    "random": RandomPolicy,
    "noisy-oracle": NoisyOracle,
    "blindspot": Blindspot,
    "spam": SpamWrites,
    "guess": Guess,
}


def scripted(name: str, **kwargs: Any) -> Policy:
    """A scripted policy by name: oracle, noop, random, noisy-oracle (skill=...), spam,
    guess."""
    try:
        factory = SCRIPTED[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose from {', '.join(SCRIPTED)}") from None
    return factory(**kwargs)
