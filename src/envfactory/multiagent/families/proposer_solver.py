"""Proposer and solver: one agent proposes a task inside a database world, another solves it.

The proposer explores the world with its read-only tools (on its own copy) and proposes a task
as an instruction for the solver and a gold plan: tool calls that do the task. The engine
executes the plan on a fresh copy and verifies it: every call must succeed, the rules must
hold, the state must change (a task already done is no task), the plan must have at least
``difficulty`` steps and involve the task's focus (a row of the world, which keeps tasks apart
and splits disjoint). An unsolvable or invalid proposal is rejected with the reason; the third
rejection ends the episode. An accepted task is solved by the solver in ``ATTEMPTS`` attempts,
each from a fresh copy of the world, judged by the database world's verifier against the
plan's changes. The solver earns its mean attempt reward; the proposer earns
4 p (1 - p) for a solve rate p: most for tasks solved sometimes but not always, nothing for
tasks solved always or never.

Scripted proposers, weakest first: 0 proposes a plan that changes nothing (rejected), 1 a real
plan with a vague instruction, 2 spells out a plan with a single change, 3 spells out the gold
plan of a database task that changes the world (the first of the task's block of four). Scripted
solvers: 0 answers without acting, 1 to 3 carry out the steps an instruction spells out,
slipping at each step with probability 0.5, 0.2 and 0.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.results import ToolFailure
from envfactory.contract.tasks import HiddenTask, PlanStep, PublicTask, Split, TargetChange, Task
from envfactory.contract.values import load_json
from envfactory.db.episode import DatabaseEpisode
from envfactory.db.tasks import fingerprint
from envfactory.episode.seats import SeatPolicy
from envfactory.multiagent.episode import Action, MultiAgentEpisode
from envfactory.multiagent.families.dbworld import DatabaseBacked
from envfactory.multiagent.tasks import digest
from envfactory.multiagent.tools import SeatTool
from envfactory.policies.scripted import NoisyOracle, Oracle

SEATS = ("proposer", "solver")
ATTEMPTS = 4
REJECTIONS = 3
MAX_PLAN = 24
BLOCK = 4  # database tasks per proposer task, for one that changes the world
_ID = re.compile(r"\b[A-Z]{2,}-\d{3,}\b")
_STEP = re.compile(r"^\s*\d+\.\s*([a-z_][a-z0-9_]*)\s+(\{.*\})\s*$", re.M)
PROPOSE = SeatTool(
    name="propose",
    description="Propose a task: the instruction the solver will read, and the gold plan (tool "
    "calls in order) that does it. The engine runs and checks the plan before accepting.",
    properties={
        "instruction": {"type": "string", "maxLength": 4000},
        "plan": {
            "type": "array",
            "maxItems": MAX_PLAN,
            "items": {
                "type": "object",
                "additionalProperties": {},
                "description": '{"tool": name, "arguments": {...}}',
            },
        },
    },
    required=("instruction", "plan"),
)


class ProposerSolverEpisode(MultiAgentEpisode):
    agents = SEATS

    def __init__(self, env: ProposerSolver, config: EpisodeConfig | None = None) -> None:
        super().__init__(env, config)
        self.world = env.world
        self.scratch: DatabaseEpisode = self.world.episode(EpisodeConfig(max_steps=10**6))
        self.attempt: DatabaseEpisode = self.world.episode(
            EpisodeConfig(max_steps=10**6, user=self.config.user)
        )

    def close(self) -> None:
        self.scratch.close()
        self.attempt.close()

    def setup(self, task: Task) -> None:
        game = ProposerSolver.game(task)
        self.focus: str | None = game["focus"]
        self.min_steps = int(task.public.difficulty)
        self.base = ProposerSolver.db_task(task)  # a task of the world, to start copies from
        self.scratch.reset(self.base)
        self.phase = "propose"
        self.rejections = 0
        self.proposal: Task | None = None
        self.results: list[float] = []

    def actors(self) -> list[str]:
        return ["proposer"] if self.phase == "propose" else ["solver"]

    def apply(self, seat: str, action: Action) -> str:
        if seat == "proposer":
            return self._propose_phase(action)
        return self._solve(action)

    # -- proposing -------------------------------------------------------------------------------

    def _propose_phase(self, action: Action) -> str:
        if isinstance(action, Message):
            raise ToolFailure("precondition_failed", "there is no user here: call propose")
        if action.tool == "propose":
            return self._propose(PROPOSE.check(action.arguments))
        if action.tool not in self.world.world.tools:
            raise ToolFailure("unknown_tool", f"there is no tool {action.tool[:40]!r}")
        if action.tool in self.world.world.write_tools:
            raise ToolFailure(
                "precondition_failed", "the proposer only reads: put writes in the plan"
            )
        obs = self.scratch.step(action)
        if obs.error is not None:
            raise ToolFailure(obs.error.code, obs.error.message, field=obs.error.field)
        return obs.content

    def _propose(self, args: dict[str, Any]) -> str:
        instruction = str(args["instruction"]).strip()
        try:
            task = self._check(instruction, args["plan"])
        except ToolFailure as exc:
            self.rejections += 1
            if self.rejections >= REJECTIONS:
                self.emit(f"Proposal rejected ({exc.message}); no proposals left.")
                self.end()
                return "Your proposal was rejected."
            raise
        self.proposal = task
        self.phase = "solve"
        self.emit(
            f"Task from the proposer: {instruction}",
            to=["solver"],
            by="proposer",
            kind="message",
            data={"from": "proposer", "to": "solver", "content": instruction},
        )
        self._next_attempt()
        return f"Your task was accepted; the solver gets {ATTEMPTS} attempts."

    def _check(self, instruction: str, raw: list[Any]) -> Task:
        """The proposal as a task of the world, or a :class:`ToolFailure` saying why not."""
        if not instruction:
            raise ToolFailure("invalid_arguments", "the instruction is empty", field="instruction")
        steps = []
        for i, step in enumerate(raw):
            if not isinstance(step, dict) or not isinstance(step.get("tool"), str):
                raise ToolFailure("invalid_arguments", f"plan step {i} needs a tool", field="plan")
            arguments = step.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ToolFailure("invalid_arguments", f"plan step {i}: arguments is an object")
            steps.append(PlanStep(tool=step["tool"], arguments=arguments))
        if len(steps) < self.min_steps:
            raise ToolFailure("rule_violation", f"the plan needs at least {self.min_steps} steps")
        trial = self.world.episode(EpisodeConfig(max_steps=10**6))
        try:
            trial.reset(self.base)
            start = trial.state_hash()
            for i, step in enumerate(steps):
                # As the proposer wrote it: the episode judges a bad step (a tool name too long).
                obs = trial.step(
                    {"type": "tool_call", "tool": step.tool, "arguments": step.arguments}
                )
                if obs.error is not None:
                    raise ToolFailure("rule_violation", f"plan step {i} fails: {obs.content}")
            changes = trial.changes()
            broken = self.world.rules.violations(trial.log, changes)
        finally:
            trial.close()
        if not changes:
            raise ToolFailure("rule_violation", "the plan changes nothing: it is no task")
        if broken:
            raise ToolFailure("rule_violation", f"the plan breaks a rule: {broken[0]}")
        target = [
            TargetChange(table=c.table, id=c.key, before=c.before, after=c.after) for c in changes
        ]
        touched = json.dumps([s.arguments for s in steps], default=str) + " ".join(
            c.id for c in target
        )
        if self.focus and self.focus not in touched:
            raise ToolFailure("rule_violation", f"the task must involve {self.focus}")
        assert self.task is not None
        task_id = f"{self.task.task_id}/proposed"
        base = self.base.public
        public = PublicTask(
            task_id=task_id,
            env_id=self.world.id,
            split=base.split,
            difficulty=base.difficulty,
            instruction=instruction,
            persona=base.persona,
            rules=base.rules,
            tools=base.tools,
        )
        hidden = HiddenTask(
            task_id=task_id,
            goals=["proposed"],
            gold_plan=steps,
            target=target,
            knobs={"steps": len(steps)},
            fingerprint=fingerprint(target, []),
        )
        return Task(public=public, hidden=hidden, initial_hash=start)

    # -- solving ---------------------------------------------------------------------------------

    def _next_attempt(self) -> None:
        assert self.proposal is not None
        self.attempt.reset(self.proposal)
        n = len(self.results) + 1
        self.emit(
            f"Attempt {n} of {ATTEMPTS} begins from a fresh copy of the world.",
            to=["solver"],
            kind="attempt",
            data={"attempt": n},
        )

    def _solve(self, action: Action) -> str:
        if isinstance(action, ToolCall) and action.tool not in self.world.world.tools:
            raise ToolFailure("unknown_tool", f"there is no tool {action.tool[:40]!r}")
        obs = self.attempt.step(action)
        if obs.error is not None and obs.error.code == "tool_failed":
            raise RuntimeError(obs.content)
        if self.attempt.done:
            reward = self.attempt.evaluate().reward or 0.0
            self.results.append(reward)
            solved = "solved it" if reward >= 1.0 else "did not solve it"
            self.emit(
                f"Attempt {len(self.results)}: the solver {solved} (reward {reward:.2f}).",
                kind="attempt",
                data={"attempt": len(self.results), "reward": reward},
            )
            if len(self.results) == ATTEMPTS:
                self.end()
            else:
                self._next_attempt()
        if obs.error is not None:
            raise ToolFailure(obs.error.code, obs.error.message, field=obs.error.field)
        return obs.content

    # -- judging ---------------------------------------------------------------------------------

    def solve_rate(self) -> float:
        return sum(r >= 1.0 for r in self.results) / ATTEMPTS

    def rewards(self) -> dict[str, float]:
        if not self.results:
            return dict.fromkeys(self.agents, 0.0)
        p = self.solve_rate()
        return {"proposer": 4 * p * (1 - p), "solver": sum(self.results) / ATTEMPTS}

    def briefing(self, seat: str) -> str:
        assert self.task is not None
        if seat == "proposer":
            focus = f" The task must involve {self.focus}." if self.focus else ""
            return (
                f"{self.task.public.instruction}\nYou are the proposer. Explore with the read "
                f"tools, then call propose with an instruction and a gold plan of at least "
                f"{self.min_steps} steps that changes the world.{focus}"
            )
        return (
            f"{self.base.public.persona}\nYou are the solver. The proposer's task comes as a "
            f"message; do it with the tools and finish with a final message. You get "
            f"{ATTEMPTS} attempts, each from a fresh copy of the world."
        )

    def private(self, seat: str) -> dict[str, Any]:
        if seat == "proposer" and self.proposal is not None:
            plan = [s.model_dump() for s in self.proposal.hidden.gold_plan]
            return {"plan": plan}
        return {}

    def view(self, seat: str) -> dict[str, Any]:
        return {"phase": self.phase, "attempts": len(self.results), "results": self.results}

    def prompt(self, seat: str) -> str:
        if seat == "proposer":
            left = REJECTIONS - self.rejections
            return f"Your turn: read, or propose (proposals left: {left})."
        return f"Attempt {len(self.results) + 1} of {ATTEMPTS}: act, then give your final message."

    def outcome(self) -> dict[str, Any]:
        accepted = self.proposal is not None
        summary = (
            f"The solver solved {sum(r >= 1.0 for r in self.results)} of {ATTEMPTS} attempts."
            if accepted
            else "No task was accepted."
        )
        return {
            "accepted": accepted,
            "rejections": self.rejections,
            "attempts": self.results,
            "summary": summary,
        }

    def state(self) -> Any:
        plan = digest(self.proposal.hidden.target) if self.proposal is not None else None
        return {
            "phase": self.phase,
            "plan": plan,
            "results": self.results,
            "attempt": self.attempt.state_hash() if self.proposal else None,
        }

    def confirm(self) -> list[str]:
        problems = []
        if self.proposal is not None:
            trial = self.world.episode(EpisodeConfig(max_steps=10**6))
            try:
                trial.reset(self.proposal)
                for s in self.proposal.hidden.gold_plan:
                    trial.step(ToolCall(tool=s.tool, arguments=s.arguments))
                trial.step(Message(content="Done."))
                if not trial.evaluate().success:
                    problems.append("the accepted plan does not solve its own task")
            finally:
                trial.close()
        if (
            self.status == "completed"
            and self.proposal is not None
            and len(self.results) != ATTEMPTS
        ):
            problems.append(f"{len(self.results)} attempts were judged, not {ATTEMPTS}")
        if self.final is not None and self.results:
            p = sum(r >= 1.0 for r in self.results) / ATTEMPTS
            if abs((self.final["proposer"] or 0.0) - 4 * p * (1 - p)) > 1e-9:
                problems.append("the proposer's reward does not follow from the solve rate")
        return problems


def spelled(plan: list[PlanStep]) -> str:
    """An instruction that spells a plan out, one numbered tool call a line."""
    lines = [f"{i}. {s.tool} {json.dumps(s.arguments)}" for i, s in enumerate(plan, 1)]
    return "Please do the following, in order:\n" + "\n".join(lines)


def steps_in(text: str) -> list[PlanStep]:
    """The steps an instruction spells out (as :func:`spelled` writes them)."""
    out = []
    for name, args in _STEP.findall(text):
        try:
            arguments = load_json(args)
        except ValueError:  # not JSON, or nested too deeply
            continue
        if isinstance(arguments, dict):
            out.append(PlanStep(tool=name, arguments=arguments))
    return out


class ProposerSeat:
    """The scripted proposer at ``strength`` 0 to 3 (see the module docstring)."""

    def __init__(self, strength: int) -> None:
        self.strength = strength
        self.name = f"proposer:{strength}"

    def start(self, task: Task, seat: str) -> None:
        self.plan = list(ProposerSolver.db_task(task).hidden.gold_plan)
        self.min_steps = task.public.difficulty

    def act(self, observation: Observation) -> ToolCall:
        world_plan = self.plan
        if self.strength == 0:
            reads = [s for s in world_plan if _is_read(s)] or world_plan
            return _proposal("Look around.", reads[:1] * self.min_steps)
        if self.strength == 1:
            return _proposal("Sort out the customer's account.", world_plan)
        if self.strength == 2:
            first_write = next((i for i, s in enumerate(world_plan) if not _is_read(s)), 0)
            plan = [s for i, s in enumerate(world_plan) if _is_read(s) or i == first_write]
            return _proposal(spelled(plan), plan)
        return _proposal(spelled(world_plan), world_plan)


def _is_read(step: PlanStep) -> bool:
    return step.tool.startswith(("get_", "list_", "search_", "find_", "estimate_"))


def _proposal(instruction: str, plan: list[PlanStep]) -> ToolCall:
    steps = [{"tool": s.tool, "arguments": s.arguments} for s in plan]
    return ToolCall(tool="propose", arguments={"instruction": instruction, "plan": steps})


class SolverSeat:
    """The scripted solver at ``strength`` 0 to 3 (see the module docstring)."""

    SKILL: ClassVar[dict[int, float]] = {1: 0.5, 2: 0.8, 3: 1.0}

    def __init__(self, strength: int, seed: int = 0) -> None:
        self.strength = strength
        self.seed = seed
        self.name = f"solver:{strength}"

    def start(self, task: Task, seat: str) -> None:
        self.task = task
        self.steps: list[PlanStep] = []
        self.oracle: Oracle | None = None

    def act(self, observation: Observation) -> ToolCall | Message:
        events = observation.data["events"]
        for e in events:
            if e["kind"] == "message":
                self.steps = steps_in(e["data"]["content"])
        attempt = next(
            (
                e["data"]["attempt"]
                for e in events
                if e["kind"] == "attempt" and "reward" not in (e["data"] or {})
            ),
            None,
        )
        if attempt is not None or self.oracle is None:
            self.oracle = self._oracle(attempt or 1)
        if self.strength == 0:
            return Message(content="Done.")
        return self.oracle.act(Observation(kind="user", content=""))

    def _oracle(self, attempt: int) -> Oracle:
        hidden = HiddenTask(
            task_id=f"{self.task.task_id}#{attempt}",
            goals=[],
            gold_plan=self.steps,
            target=[],
            knobs={},
            fingerprint="",
        )
        task = Task(public=self.task.public, hidden=hidden, initial_hash="")
        skill = self.SKILL.get(self.strength, 0.0)
        oracle = NoisyOracle(skill, self.seed * 7919 + attempt) if skill < 1 else Oracle()
        oracle.start(task, [])
        return oracle


class ProposerSolver(DatabaseBacked):
    """Proposer and solver over the database world ``world`` (retail by default)."""

    family = "proposer_solver"
    agents = SEATS
    check_pair = (0, 3)
    check_seat = "proposer"

    def __init__(self, world: str = "retail", seed: int = 0, scale: float = 1.0) -> None:
        super().__init__(world, seed=seed, scale=scale)
        self.name = f"Proposer and solver in {self.world.spec.name}"
        self.description = (
            f"One agent proposes a verified task in {world} as a gold plan, another solves it; "
            "the proposer is paid for tasks solved sometimes but not always."
        )
        self.rules = (
            "The proposer reads the world and proposes an instruction and a gold plan.",
            "A plan that fails, breaks a rule or changes nothing is rejected; three rejections "
            "end the episode.",
            f"The solver gets {ATTEMPTS} attempts; the proposer earns 4p(1-p) for solve rate p.",
        )
        self.levels = tuple(d for d in self.world.difficulties if d <= 4)

    def pick(self, split: Split, difficulty: int, index: int) -> Task:
        """A database task that changes the world (a plan to start a proposal from): the first
        of the block of ``BLOCK`` tasks that belongs to ``index``."""
        for k in range(BLOCK):
            db_task = self.world.task(split, difficulty, index * BLOCK + k)
            if db_task.hidden.target:
                return db_task
        return db_task

    def extra(self, db_task: Task) -> dict[str, Any]:
        ids = [c.id for c in db_task.hidden.target]
        ids += _ID.findall(json.dumps([s.arguments for s in db_task.hidden.gold_plan]))
        return {"focus": ids[0] if ids else None}

    def instruction(self, game: dict[str, Any], difficulty: int) -> str:
        return (
            f"In {self.world.spec.name}, the proposer proposes a task and its gold plan; the "
            f"solver solves it in {ATTEMPTS} attempts."
        )

    def knobs(self, game: dict[str, Any], difficulty: int) -> dict[str, int]:
        return {"min_steps": difficulty}

    def seat_tools(self, seat: str) -> list[SeatTool]:
        if seat == "proposer":
            return [*self.db_tools(read_only=True), PROPOSE]
        return self.db_tools()

    def scripted(self, seat: str, strength: int, seed: int = 0) -> SeatPolicy:
        return ProposerSeat(strength) if seat == "proposer" else SolverSeat(strength, seed)

    def episode(self, config: EpisodeConfig | None = None) -> ProposerSolverEpisode:
        return ProposerSolverEpisode(self, config)
