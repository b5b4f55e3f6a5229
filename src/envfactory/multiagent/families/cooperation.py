"""Cooperation with split information: a front agent talks to the user, a back agent holds
the database tools, and they coordinate by messages to complete a task of a database world.

The task is the database world's own task at the same (split, difficulty, index), so splits
and the difficulty ladder carry over. Only the front sees the user's request and replies; only
the back sees tool results; everything else must pass through ``send_message``, which hands
the turn to the recipient. The front ends the episode with its final reply to the user.
Both seats earn the team's reward: the database world's own verdict on the final state, the
reply and what was asked of the user (the same verifier as the single-agent world).

Scripted seats, weakest first, per seat: front 0 gives up at once, 1 relays the request but
not the user's answers, 2 and 3 relay both ways; back 0 reports without acting, 1 and 2 work
through the task's gold plan with slips (skill 0.5 and 0.8), 3 works through it exactly. Like
the single-agent oracle, the scripted back reads the gold plan, but only once the front's
request has reached it, and it learns the user's answers only from the front's messages.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.results import ToolFailure
from envfactory.contract.tasks import Task
from envfactory.db.episode import DatabaseEpisode
from envfactory.episode.seats import MultiVerdict, SeatPolicy
from envfactory.multiagent.episode import Action, MultiAgentEpisode
from envfactory.multiagent.families.dbworld import DatabaseBacked
from envfactory.multiagent.tools import SeatTool, message_tool
from envfactory.policies.scripted import NoisyOracle, Oracle

SEATS = ("front", "back")
NEED, DONE = "NEED:", "DONE:"
_FACT = re.compile(r"\bmy ([a-z][a-z0-9 ]*?) is ([^;]+?)(?=;|\.\s|\.$|$)", re.I)


class CooperationEpisode(MultiAgentEpisode):
    agents = SEATS
    messaging = True

    def __init__(self, env: Cooperation, config: EpisodeConfig | None = None) -> None:
        super().__init__(env, config)
        self.world = env.world
        inner = EpisodeConfig(
            max_steps=10**6, user=self.config.user, noise=self.config.noise
        )  # the outer episode counts the steps
        self.inner: DatabaseEpisode = self.world.episode(inner)

    def close(self) -> None:
        self.inner.close()

    def setup(self, task: Task) -> None:
        self.db_task = Cooperation.db_task(task)
        self.inner.reset(self.db_task)
        self.turn = "front"
        self.messages = 0

    def actors(self) -> list[str]:
        return [self.turn]

    def on_message(self, sender: str, recipient: str) -> None:
        self.messages += 1
        self.turn = recipient

    def apply(self, seat: str, action: Action) -> str:
        if seat == "front":
            if isinstance(action, ToolCall):
                raise ToolFailure(
                    "unknown_tool",
                    "the front has no database tools: message the back with send_message, "
                    "or write to the user",
                )
            obs = self.inner.step(action)
        else:
            if isinstance(action, Message):
                raise ToolFailure(
                    "precondition_failed",
                    "the back cannot talk to the user: send_message to front instead",
                )
            obs = self.inner.step(action)
            if self.inner.status == "env_error":  # the world failed, not the back's call
                raise RuntimeError(obs.content)
        if self.inner.done:
            self.end(self.inner.status)
        if obs.error is not None:
            raise ToolFailure(obs.error.code, obs.error.message, field=obs.error.field)
        return obs.content

    def rewards(self) -> dict[str, float]:
        reward = self.db_verdict().reward or 0.0
        return dict.fromkeys(self.agents, reward)

    def db_verdict(self) -> Any:
        return self.inner.evaluate().model_copy(update={"status": self.status})

    def evaluate(self) -> MultiVerdict:
        verdict = super().evaluate()
        if self.status == "env_error":
            return verdict
        inner = self.inner.evaluate()
        return verdict.model_copy(update={"items": verdict.items + inner.items})

    def briefing(self, seat: str) -> str:
        task = self.db_task.public
        rules = "\n".join(f"- {r}" for r in task.rules)
        if seat == "front":
            return (
                f"{task.persona} You are the front agent: you talk to the user; the back agent "
                "holds the database tools. Message the back with send_message; write to the "
                "user with a plain message, and end with your final reply to the user.\n"
                f"The user writes: {task.instruction}"
            )
        return (
            f"{task.persona} You are the back agent: you hold the database tools and never "
            "talk to the user. The front agent tells you what the user wants; report back "
            f"with send_message to front.\nRules:\n{rules}"
        )

    def private(self, seat: str) -> dict[str, Any]:
        if seat == "front":
            return {"request": self.db_task.public.instruction}
        return {}

    def view(self, seat: str) -> dict[str, Any]:
        return {"turn": None if self.done else self.turn, "messages": self.messages}

    def prompt(self, seat: str) -> str:
        if seat == "front":
            return (
                "Your turn: write to the user, message the back (send_message), or give the "
                "user your final reply."
            )
        return "Your turn: use the database tools, then send_message to front."

    def outcome(self) -> dict[str, Any]:
        reward = self.final["front"] if self.final is not None else None
        return {
            "db_task": self.db_task.task_id,
            "messages": self.messages,
            "tool_calls": len(self.inner.log),
            "reward": reward,
            "summary": "The request is closed.",
        }

    def state(self) -> Any:
        return {"db": self.inner.state_hash(), "turn": self.turn, "done": self.done}

    def confirm(self) -> list[str]:
        problems = []
        db = self.db_verdict()
        if self.final is not None and any(r != db.reward for r in self.final.values()):
            problems.append(f"the seats' rewards {self.final} differ from the verdict {db.reward}")
        backs = sum(p["seat"] == "back" and _calls(p["action"]) for p in self.played)
        if len(self.inner.log) > backs:
            problems.append(f"{len(self.inner.log)} database calls, the back made {backs}")
        return problems


def _calls(action: Any) -> bool:
    kind = action.get("type") if isinstance(action, dict) else None
    return kind == "tool_call" and action.get("tool") != "send_message"


def facts_in(text: str, wanted: list[str]) -> dict[str, str]:
    """Facts a user gave ("my email is ..."), by the names the gold plan uses."""
    found = {
        m.group(1).strip().lower().replace(" ", "_"): m.group(2).strip()
        for m in _FACT.finditer(text)
    }
    return {k: v for k, v in found.items() if k in wanted}


class FrontSeat:
    """The scripted front at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int) -> None:
        self.strength = strength
        self.name = f"cooperation-front:{strength}"

    def start(self, task: Task, seat: str) -> None:
        self.asked = False

    def act(self, observation: Observation) -> ToolCall | Message:
        data = observation.data
        if self.strength == 0:
            return Message(content="I'm sorry, I can't help with that.")
        if data["briefing"]:
            request = data["private"]["request"]
            return _tell(f"The user asks: {request}")
        heard = [e["data"]["content"] for e in data["events"] if e["kind"] == "message"]
        if heard:
            said = heard[-1]
            if said.startswith(NEED):
                if self.strength == 1:
                    return _tell("The user could not tell me that. Do what you can.")
                self.asked = True
                return Message(content=said.removeprefix(NEED).strip(), final=False)
            return Message(content=said.removeprefix(DONE).strip())
        # the user answered the front's question: pass it on
        return _tell(observation.content)


def _tell(content: str) -> ToolCall:
    return ToolCall(tool="send_message", arguments={"to": "back", "content": content})


class BackSeat:
    """The scripted back at ``strength`` 0 to 3 (see the module docstring)."""

    SKILL: ClassVar[dict[int, float]] = {1: 0.5, 2: 0.8}

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.name = f"cooperation-back:{strength}"
        self.oracle: Oracle = (
            NoisyOracle(self.SKILL[strength], seed) if strength in self.SKILL else Oracle()
        )

    def start(self, task: Task, seat: str) -> None:
        db_task = Cooperation.db_task(task)
        self.oracle.start(db_task, [])
        self.facts = [f for a in db_task.hidden.asks for f in a.facts]

    def act(self, observation: Observation) -> ToolCall | Message:
        if self.strength == 0:
            return _report(f"{DONE} Done.")
        said = [e["data"]["content"] for e in observation.data["events"] if e["kind"] == "message"]
        facts = facts_in(said[-1], self.facts) if said else {}
        step = self.oracle.act(Observation(kind="user", content="", data={"facts": facts}))
        if isinstance(step, Message):
            return _report(f"{DONE if step.final else NEED} {step.content}")
        return step


def _report(content: str) -> ToolCall:
    return ToolCall(tool="send_message", arguments={"to": "front", "content": content})


class Cooperation(DatabaseBacked):
    """Front and back agents over the database world ``world`` (retail by default)."""

    family = "cooperation"
    agents = SEATS
    check_pair = (1, 3)

    def __init__(self, world: str = "retail", seed: int = 0, scale: float = 1.0) -> None:
        super().__init__(world, seed=seed, scale=scale)
        name = self.world.spec.name
        self.name = f"Cooperation in {name}"
        self.description = (
            f"A front agent (talks to the user) and a back agent (holds the {world} tools) "
            "complete a database task together by messages; the database world's verifier."
        )
        self.rules = tuple(r.text for r in self.world.spec.rules)
        self.levels = tuple(self.world.difficulties)

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        return (
            f"A user has a request for {self.world.spec.name}. The front agent talks to the "
            "user; the back agent holds the database tools. Complete the request together."
        )

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"db_difficulty": difficulty}

    def seat_tools(self, seat: str) -> list[SeatTool]:
        tools = [message_tool(list(SEATS))]
        return tools + self.db_tools() if seat == "back" else tools

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return FrontSeat(strength) if seat == "front" else BackSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> CooperationEpisode:
        return CooperationEpisode(self, config)
