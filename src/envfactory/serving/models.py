"""Wire types. The Open Reward Standard ones mirror the standard's field names exactly."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from envfactory.contract.actions import EpisodeStatus, Message, Observation, ToolCall
from envfactory.contract.tasks import PublicTask

# -- Open Reward Standard ---------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextBlock(_Strict):
    text: str
    detail: dict[str, Any] | None = None
    type: Literal["text"] = "text"


class ORSMessage(_Strict):
    role: Literal["system", "user", "assistant"]
    blocks: list[TextBlock]
    detail: dict[str, Any] | None = None


class ToolSpec(_Strict):
    name: str
    description: str
    input_schema: dict[str, Any] | None


class TerminalToolSpec(_Strict):
    name: str
    arg: str | None = None
    description: str = ""


class ListToolsOutput(_Strict):
    tools: list[ToolSpec]
    terminal_tool: TerminalToolSpec | None = None
    supports_score_group: bool | None = False
    message_block_types: list[str] | None = Field(default_factory=lambda: ["text"])


class Split(_Strict):
    name: str
    type: Literal["train", "validation", "test"]


class SplitBody(_Strict):
    split: str


class TaskBody(_Strict):
    split: str
    index: int


class TaskRangeBody(_Strict):
    split: str
    start: int | None = None
    stop: int | None = None


class TaskSpec(BaseModel):
    """A task on the wire: its address, nothing it hides."""

    task_id: str
    split: str
    difficulty: int
    index: int


class TasksOut(_Strict):
    tasks: list[TaskSpec]
    env_name: str


class TaskOut(_Strict):
    task: TaskSpec
    env_name: str


class NumTasksOut(_Strict):
    num_tasks: int


class CreateBody(_Strict):
    """``POST /create``: either ``task_spec`` or both ``split`` and ``index``."""

    env_name: str | None = None
    task_spec: dict[str, Any] | None = None
    split: str | None = None
    index: int | None = None
    toolset_name: str | None = None
    secrets: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_task_source(self) -> CreateBody:
        by_index = self.split is not None and self.index is not None
        if (self.split is None) != (self.index is None):
            raise ValueError("split and index must both be provided together")
        if (self.task_spec is not None) == by_index:
            raise ValueError("provide either task_spec or both split and index, not both/neither")
        return self


class SidOut(_Strict):
    sid: str


class StatusOut(_Strict):
    status: str


class ORSToolCall(_Strict):
    name: str = Field(max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = Field(None, max_length=200)


class ToolOutput(_Strict):
    blocks: list[TextBlock]
    metadata: dict[str, Any] | None = None
    reward: float | None = None
    finished: bool = False


class RunToolSuccess(_Strict):
    ok: Literal[True] = True
    output: ToolOutput


RunToolErrorReason = Literal["not_found", "name_collision", "input_validation", "episode_finished"]


class RunToolError(_Strict):
    ok: Literal[False] = False
    error: str
    reason: RunToolErrorReason | None = None


class RunToolOutput(RootModel[RunToolSuccess | RunToolError]):
    root: RunToolSuccess | RunToolError = Field(discriminator="ok")


# -- envfactory's own routes ------------------------------------------------------------------


class ErrorOut(BaseModel):
    detail: str
    error: str


class OpenBody(_Strict):
    """Open an episode: ``task_id``, or ``split`` + ``difficulty`` + ``index``."""

    env_id: str | None = Field(None, max_length=200)
    task_id: str | None = Field(None, max_length=400)
    split: str = "train"
    difficulty: int | None = None
    index: int = 0


class Opened(BaseModel):
    session_id: str
    task: PublicTask
    observation: Observation


class Forked(BaseModel):
    """A fork's new session: use its id like any session's (step, state, verdict, close)."""

    session_id: str
    parent_id: str
    task: PublicTask
    steps: int = Field(description="actions the fork inherited from its parent")
    finished: bool
    state_hash: str


class StepOut(BaseModel):
    observation: Observation
    reward: float | None
    finished: bool
    status: EpisodeStatus | None = Field(description="the episode's status once it finished")


class SessionState(BaseModel):
    session_id: str
    env_id: str
    task_id: str
    protocol: str
    steps: int
    finished: bool
    status: EpisodeStatus | None
    state_hash: str
    idle_s: float


class Closed(BaseModel):
    session_id: str
    closed: bool


class Stats(BaseModel):
    sessions: int
    capacity: int
    idle_timeout_s: float
    expired_total: int
    envs: list[str]


ActionBody = RootModel[ToolCall | Message]
