"""Who plays each seat of a world with seats: a model, a scripted policy, or the same policy
as another seat.

A seat is given as a rollout policy (an :class:`~envfactory.policies.openai.OpenAIPolicy`, or
any :class:`~envfactory.policies.base.RolloutPolicy`) or as text:

- ``learner``: the run's policy;
- ``scripted``: the task's scripted opponent (its difficulty's level), ``scripted:N`` level N;
- ``same:<seat>``: whatever plays ``<seat>`` (self-play: one policy, one session per seat).

Seats left out follow the world's default: the learner takes one seat of a game (in turn by
task index) against scripted opponents at the task's level, and every seat of a world of
partners (cooperation, proposer and solver).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import Task
from envfactory.episode.seats import SeatedWorld, SeatPolicy
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest, RolloutPolicy
from envfactory.policies.wrap import assistant_message
from envfactory.trajectory.record import ModelInfo

SeatSpec = str | RolloutPolicy


@dataclass(slots=True)
class SeatContext(EpisodeContext):
    """An episode context for one seat of an episode with seats."""

    seat: str = ""


class ScriptedSeatSession:
    """A scripted seat acting on the latest observation of its seat."""

    def __init__(self, policy: SeatPolicy, ctx: SeatContext) -> None:
        self.policy = policy
        self.format = ctx.harness.tool_format
        policy.start(ctx.task, ctx.seat)

    async def act(self, request: PolicyRequest) -> PolicyReply:
        action = self.policy.act(request.observations[-1])
        call_id = f"call_{request.call_index}"
        if isinstance(action, ToolCall) and self.format == "native":
            action.call_id = call_id
        return PolicyReply(
            message=assistant_message(action, call_id, self.format), actions=[action]
        )

    def replay(self, observations: list[Any]) -> None:
        """Episodes with seats are not resumed mid-way: nothing to catch up."""


class ScriptedSeatPolicy:
    """The scripted policy of level ``strength`` of a world with seats, as a rollout policy
    (a fresh instance per seat and episode)."""

    local = True

    def __init__(self, env: SeatedWorld, strength: int, seed: int = 0) -> None:
        if strength not in env.strengths:
            raise ValueError(f"{env.id}: scripted levels are {env.strengths}, not {strength}")
        self.env = env
        self.strength = strength
        self.seed = seed
        self.name = f"{env.id}:scripted:{strength}"

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(name=self.name, provider="scripted", sampling={"seed": self.seed})

    def session(self, ctx: EpisodeContext) -> ScriptedSeatSession:
        if not isinstance(ctx, SeatContext):
            raise TypeError("a scripted seat needs a SeatContext (it plays one seat)")
        return ScriptedSeatSession(self.env.scripted(ctx.seat, self.strength, self.seed), ctx)

    async def aclose(self) -> None:
        return None


class Seating:
    """The seats of every task of a run (see the module docstring)."""

    def __init__(
        self,
        learner: RolloutPolicy | None = None,
        seats: Mapping[str, SeatSpec] | None = None,
        seed: int = 0,
    ) -> None:
        self.learner = learner
        self.seats = dict(seats or {})
        self.seed = seed
        self._scripted: dict[tuple[str, int], ScriptedSeatPolicy] = {}
        for seat, spec in self.seats.items():
            if isinstance(spec, str):
                _parse(seat, spec)  # fail now on a bad spec

    def resolve(self, env: SeatedWorld, task: Task) -> dict[str, RolloutPolicy]:
        """The policy of each seat of ``task``."""
        unknown = sorted(set(self.seats) - set(env.seats))
        if unknown:
            raise ValueError(f"{env.id} has no seat {unknown[0]!r}; seats: {', '.join(env.seats)}")
        default = env.default_seats(task)
        specs: dict[str, SeatSpec] = {
            s: self.seats.get(s, "learner" if default[s] is None else "scripted") for s in env.seats
        }
        out: dict[str, RolloutPolicy] = {}
        for seat, spec in specs.items():
            if not isinstance(spec, str):
                out[seat] = spec
                continue
            kind, value = _parse(seat, spec)
            if kind == "learner":
                if self.learner is None:
                    raise ValueError(f"seat {seat} is the learner's, and there is no learner")
                out[seat] = self.learner
            elif kind == "scripted":
                level = int(value) if value else env.opponent(task.public.difficulty)
                out[seat] = self.scripted(env, level)
        for seat in specs:
            if seat not in out:
                out[seat] = out[self._played_as(seat, specs)]
        return out

    @staticmethod
    def _played_as(seat: str, specs: dict[str, SeatSpec]) -> str:
        """The seat whose policy ``seat`` plays, following ``same:`` links to their end."""
        chain = [seat]
        while True:
            spec = specs[chain[-1]]
            if not isinstance(spec, str) or _parse(chain[-1], spec)[0] != "same":
                return chain[-1]
            target = _parse(chain[-1], spec)[1]
            if target not in specs:
                raise ValueError(f"seat {chain[-1]} plays as {target!r}, which is not a seat here")
            if target in chain:
                loop = " -> ".join([*chain[chain.index(target) :], target])
                raise ValueError(f"seats play as each other in a loop: {loop}")
            chain.append(target)

    def scripted(self, env: SeatedWorld, level: int) -> ScriptedSeatPolicy:
        key = (env.id, level)
        if key not in self._scripted:
            self._scripted[key] = ScriptedSeatPolicy(env, level, self.seed)
        return self._scripted[key]

    def policies(self) -> list[RolloutPolicy]:
        """Every distinct policy the seating holds (to close them)."""
        found: list[RolloutPolicy] = [self.learner] if self.learner is not None else []
        found += [p for p in self.seats.values() if not isinstance(p, str)]
        found += list(self._scripted.values())
        unique: list[RolloutPolicy] = []
        for p in found:
            if all(p is not q for q in unique):
                unique.append(p)
        return unique


def _parse(seat: str, spec: str) -> tuple[str, str]:
    kind, _, value = spec.partition(":")
    if kind == "learner" and not value:
        return kind, value
    if kind == "scripted" and (not value or value.isdigit()):
        return kind, value
    if kind == "same" and value and value != seat:
        return kind, value
    raise ValueError(
        f"seat {seat}: {spec!r} is not learner, scripted, scripted:<level> or same:<other seat>"
    )


def seat_specs(pairs: list[str]) -> dict[str, str]:
    """``SEAT=WHO`` pairs (as ``--seat`` gives them) as a seat -> spec mapping, each checked."""
    specs: dict[str, str] = {}
    for text in pairs:
        seat, sep, who = (part.strip() for part in text.partition("="))
        if not sep or not seat or not who:
            raise ValueError(f"{text!r} is not SEAT=WHO")
        _parse(seat, who)
        specs[seat] = who
    return specs
