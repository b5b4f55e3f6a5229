"""Tasks as two types: what the agent may see, and what only the verifier may see.

:class:`PublicTask` is the only task type that crosses an API boundary. :class:`HiddenTask`
holds the gold plan, the target changes and the expected answer; it is never serialised into a
public view, an observation or an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")


class PublicTask(BaseModel):
    """The task as the agent meets it."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    env_id: str
    split: Split
    difficulty: int
    instruction: str = Field(description="the user's request, in the user's words")
    persona: str = Field(description="who the agent is")
    rules: list[str] = Field(description="the policy the agent must respect")
    tools: list[str] = Field(description="names of the tools the agent may call")


class PlanStep(BaseModel):
    """One tool call of a gold plan. ``from_user`` maps arguments whose values only the user
    knows to the fact that holds them: an honest agent must ask for them first."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any]
    from_user: dict[str, str] = Field(default_factory=dict)


class Ask(BaseModel):
    """Before gold step ``before_step``, the agent must ask the user for ``facts``."""

    model_config = ConfigDict(frozen=True)

    before_step: int
    facts: list[str]


class TargetChange(BaseModel):
    """A row the gold plan changes: its value before and after (None when absent)."""

    model_config = ConfigDict(frozen=True)

    table: str
    id: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class AnswerKey(BaseModel):
    """What grading the answers needs besides their values: the request (a reply may repeat
    what it names) and, for answers that are words (names, cities, statuses), the words of the
    same kind the world holds, so a reply naming two of them commits to neither."""

    model_config = ConfigDict(frozen=True)

    request: str = ""
    words: list[str] = Field(default_factory=list)


class HiddenTask(BaseModel):
    """The task as the verifier knows it."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    goals: list[str] = Field(description="the goal templates combined")
    gold_plan: list[PlanStep]
    target: list[TargetChange]
    answers: list[Any] = Field(default_factory=list, description="values the reply must give")
    answer_goals: list[str] = Field(
        default_factory=list, description="the goal template each answer answers, in order"
    )
    questions: list[str] = Field(
        default_factory=list,
        description="per answer, what it asks (template, row, answer): a task that asks one "
        "again asks the same question; empty where a kind records none",
    )
    answer_key: AnswerKey = Field(
        default_factory=AnswerKey, description="the candidates a reply is graded against"
    )
    profile: dict[str, Any] = Field(
        default_factory=dict, description="facts only the user knows, given when asked"
    )
    asks: list[Ask] = Field(default_factory=list, description="where the gold plan asks")
    setup: list[TargetChange] = Field(
        default_factory=list, description="rows as the task's start has them (a broken world)"
    )
    knobs: dict[str, int] = Field(description="width, indirection, distractors, max level")
    needs: list[list[int]] = Field(
        default_factory=list,
        description="per gold step, the earlier steps whose results its arguments come from "
        "(a search for a name an opened page gave); empty when the world records none",
    )
    fingerprint: str = Field(description="hash of what the task asks for (target and answers)")


@dataclass(frozen=True, slots=True)
class Task:
    """A public view and its hidden half; only ``public`` ever leaves the process."""

    public: PublicTask
    hidden: HiddenTask
    initial_hash: str

    @property
    def task_id(self) -> str:
        return self.public.task_id
