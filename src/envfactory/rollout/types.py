"""What the engine is asked to run and how: task references and the engine's settings."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from envfactory.contract.tasks import SPLITS, Split
from envfactory.rollout.executor import ExecutorKind
from envfactory.rollout.retry import RetryConfig


@dataclass(frozen=True, slots=True)
class TaskRef:
    """A task by address; ``tag`` tells apart several groups of the same task in one run."""

    env_id: str
    split: Split
    difficulty: int
    index: int
    tag: str = ""

    @property
    def task_id(self) -> str:
        return f"{self.env_id}/{self.split}/{self.difficulty}/{self.index}"

    @property
    def group_id(self) -> str:
        return f"{self.task_id}@{self.tag}" if self.tag else self.task_id

    @classmethod
    def parse(cls, task_id: str) -> TaskRef:
        """``env/split/difficulty/index`` back into a reference."""
        env_id, split, difficulty, index = task_id.rsplit("/", 3)
        if split not in SPLITS:
            raise ValueError(f"{task_id!r}: unknown split {split!r}")
        return cls(env_id, split, int(difficulty), int(index))


def episode_id(group_id: str, sample_index: int) -> str:
    return f"{group_id}#{sample_index}"


class EngineConfig(BaseModel):
    """Groups, concurrency, timeouts, retries, checkpoints and where environment work runs."""

    model_config = ConfigDict(extra="forbid")

    group_size: int = Field(1, ge=1, description="episodes kept per task (G)")
    oversample: int = Field(
        0,
        ge=0,
        description="extra episodes started per group; the "
        "first group_size to finish are kept, the rest cancelled",
    )
    replace_failed: int = Field(
        2, ge=0, description="extra episodes a group may start to replace infrastructure failures"
    )
    concurrency: int = Field(64, ge=1, description="live episodes at once")
    call_timeout_s: float = Field(120.0, gt=0, description="per model call, per attempt")
    episode_timeout_s: float | None = Field(1800.0, gt=0, description="per episode")
    retry: RetryConfig = Field(default_factory=RetryConfig)
    checkpoint_every: int = Field(
        0,
        ge=0,
        description="checkpoint in-flight episodes every N model calls (0: never); needs a store",
    )
    prefix_steps: int = Field(
        0,
        ge=0,
        description="play each task's first N oracle actions once, fork that episode for every "
        "sample of the group, and let the policy continue each fork (0: start every sample "
        "afresh); needs a world that can fork",
    )
    env_executor: ExecutorKind = "auto"
    env_threads: int = Field(32, ge=1, description="threads for environments that block")
    slice_ms: float = Field(4.0, gt=0, description="longest run of environment work on the loop")
    gc_tuning: bool = Field(True, description="keep full garbage collections out of the run")
    seed: int = 0
