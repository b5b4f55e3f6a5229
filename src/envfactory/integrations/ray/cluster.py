"""A local Ray cluster that stays on loopback (tests, benchmarks, one-machine runs)."""

from __future__ import annotations

from typing import Any

#: Ray swaps 127.0.0.1 for the machine's network address; another loopback address keeps
#: every connection between the cluster's processes on the loopback interface.
LOOPBACK = "127.0.0.2"


def init_local(num_cpus: int = 2, **kwargs: Any) -> Any:
    """``ray.init`` of a local cluster with ``num_cpus`` CPUs, no dashboard, on loopback."""
    import ray

    options: dict[str, Any] = {
        "num_cpus": num_cpus,
        "include_dashboard": False,
        "log_to_driver": False,
        "object_store_memory": 128 * 1024 * 1024,
        "_node_ip_address": LOOPBACK,
    }
    return ray.init(**{**options, **kwargs})
