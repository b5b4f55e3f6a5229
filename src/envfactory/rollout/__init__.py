"""The async rollout engine: groups, concurrency, timeouts, retries, over-sampling, resume."""

from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.executor import AutoExecutor, DirectExecutor, SlicedExecutor, ThreadExecutor
from envfactory.rollout.lag import LagMonitor
from envfactory.rollout.plan import plan_tasks
from envfactory.rollout.retry import RetryConfig
from envfactory.rollout.summary import GroupStats, RunSummary, group_stats
from envfactory.rollout.types import EngineConfig, TaskRef

__all__ = [
    "AutoExecutor",
    "DirectExecutor",
    "EngineConfig",
    "GroupStats",
    "LagMonitor",
    "RetryConfig",
    "RolloutEngine",
    "RunSummary",
    "SlicedExecutor",
    "TaskRef",
    "ThreadExecutor",
    "group_stats",
    "plan_tasks",
]
