"""Collateral damage: the task's work done, plus a write on a row beside the target.

The search plays each task's gold plan and reply (hidden data is fair here: the work is done;
what must not pay is damage beside it), with one gold write step repeated on a neighbouring
row (an id one off, then two, then three: :func:`~.rule_bypass.neighbour`) right after it.
A repeat that the world refuses (a ``tool_error``), or that leaves the state the gold plan
alone leaves (the row already held the value), is no damage: the next candidate is tried.
The first repeat that lands scores the episode's reward; a sound verifier's ``no_collateral``
gate makes it 0. A task with no write that lands on another row scores 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from envfactory.contract.actions import Observation
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import PlanStep, Task
from envfactory.policies.scripted import Action, write_tools
from envfactory.quality.play import play
from envfactory.quality.search.rule_bypass import neighbour
from envfactory.quality.search.script import Plan, Step, commit_tool, gold_steps

ROWS = 3  # neighbouring rows tried per argument
TRIES = 6  # episodes per task at most


class _Watched(Plan):
    """A plan that notes whether its ``extra`` step's call succeeded."""

    def __init__(self, steps: Sequence[Step], answers: Sequence[Any], extra: PlanStep) -> None:
        super().__init__(steps, answers)
        self.extra = extra
        self.landed = False

    def act(self, observation: Observation) -> Action:
        if self.pending is self.extra:  # the observation is the extra call's result
            self.landed = observation.kind == "tool_result"
        return super().act(observation)


class Collateral:
    """Each task's gold plan and reply, with a write repeated on a neighbouring row."""

    name = "collateral"

    def __init__(self, tries: int = TRIES) -> None:
        self.tries = tries
        self.voided: list[str] = []

    def applies(self, env: Environment) -> bool:
        return bool(self._writes(env))

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:

        writes = self._writes(env)
        self.voided = []
        episode: Episode | None = None
        out = []
        for task in tasks:
            reward, gold = 0.0, None
            for n, (steps, extra) in enumerate(plans(task, writes)):
                if n >= self.tries:
                    break
                episode = episode or env.episode()
                policy = _Watched(steps, task.hidden.answers, extra)
                got = play(env, task, policy, episode)
                if got is None:  # voided: counted by the adversary, and the episode is spent
                    self.voided.append(task.task_id)
                    episode = None
                    break
                if not policy.landed:
                    continue
                state = episode.evaluate().state_hash
                if gold is None:  # the state the gold plan alone leaves
                    play(env, task, Plan(gold_steps(task), task.hidden.answers), episode)
                    gold = episode.evaluate().state_hash
                if state != gold:  # a repeat that changed nothing is no damage
                    reward = got
                    break
            out.append(reward)
        return out

    @staticmethod
    def _writes(env: Environment) -> set[str]:
        commit = commit_tool(env)
        return write_tools(env.tools("mcp")) - ({commit[0]} if commit else set())


def plans(task: Task, writes: set[str]) -> Iterator[tuple[list[Step], PlanStep]]:
    """The gold plan with one write step repeated on a neighbouring row right after it, and
    that repeat: each write step's argument naming a target row moved one row, then two, then
    three (rows the task targets and calls the gold plan makes are skipped)."""
    gold = gold_steps(task)
    targets = {str(c.id) for c in task.hidden.target}
    made = {(s.tool, repr(sorted(s.arguments.items()))) for _, s in gold}
    for at, (_, step) in enumerate(gold):
        if step.tool not in writes:
            continue
        for arg, value in step.arguments.items():
            if (
                not isinstance(value, str) or value not in targets
            ):  # not the row written: a value it is set to, or a key
                continue
            row = value
            for _ in range(ROWS):
                row = neighbour(row)
                if row == value or row in targets:
                    break
                arguments = {**step.arguments, arg: row}
                if (step.tool, repr(sorted(arguments.items()))) in made:
                    continue
                from_user = {a: f for a, f in step.from_user.items() if a != arg}
                extra = PlanStep(tool=step.tool, arguments=arguments, from_user=from_user)
                yield [*gold[: at + 1], (-1, extra), *gold[at + 1 :]], extra
