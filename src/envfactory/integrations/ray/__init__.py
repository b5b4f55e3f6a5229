"""Ray: rollout workers and environment hosts as actors, and a pool that spreads groups over
workers and survives a worker's death. Optional (``envfactory[integrations]``); the
single-process :class:`~envfactory.rollout.RolloutEngine` stays the default."""

from envfactory.integrations.ray.actors import EnvHost, RolloutWorker, start_env_host
from envfactory.integrations.ray.cluster import init_local
from envfactory.integrations.ray.pool import PoolStats, RayRolloutPool

__all__ = [
    "EnvHost",
    "PoolStats",
    "RayRolloutPool",
    "RolloutWorker",
    "init_local",
    "start_env_host",
]
