"""``envfactory bench sandbox``: what the terminal worlds' sandbox costs, as medians.

In one run: a plain subprocess start (``/bin/true``) beside a sandbox start (``true`` in a
fresh bubblewrap sandbox, limits and all), then 1,000 sandboxed episodes started and torn
down: working directory made and filled with the task's files, one command run in the
sandbox, directory removed; one thread per core runs them (``workers``), as a rollout engine
would. ``episodes_1000_cpu_s`` is the CPU time those took (this process and the sandboxes),
which a busy machine does not inflate the way it does wall time.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from statistics import median

from pydantic import BaseModel

from envfactory.contract.actions import ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.contract.tasks import SPLITS
from envfactory.registry import make
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.sandbox import Sandbox


class SandboxBench(BaseModel):
    env: str
    sandbox_start_ms_p50: float
    subprocess_start_ms_p50: float
    episodes: int
    workers: int
    episodes_1000_s: float
    episodes_1000_cpu_s: float
    episode_ms_p50: float
    starts_measured: int


def _cpu() -> float:
    """CPU seconds of this process and its finished children (user + system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _ms(samples: list[float]) -> float:
    return round(median(samples) * 1000, 2)


def bench_sandbox(
    env_id: str = "term-organize-files",
    starts: int = 200,
    episodes: int = 1000,
    workers: int | None = None,
) -> SandboxBench:
    env = make(env_id)
    if not isinstance(env, TerminalEnvironment):
        raise WrongKind(f"{env_id} is a {env.kind} world; this benchmark measures terminal ones")
    clock = time.perf_counter
    plain: list[float] = []
    boxed: list[float] = []
    with Sandbox(env.limits) as box:
        box.run("true")
        for _ in range(starts):
            t0 = clock()
            subprocess.run(["/bin/true"], check=True)
            plain.append(clock() - t0)
            t0 = clock()
            box.run("true")
            boxed.append(clock() - t0)
    tasks = [
        env.task(SPLITS[i % 3], env.difficulties[i % len(env.difficulties)], i // 15)
        for i in range(50)
    ]
    look = ToolCall(tool="run_command", arguments={"command": "ls"})
    workers = workers or os.cpu_count() or 1
    per: list[float] = []

    def play(share: range) -> None:
        ep = env.episode()
        for i in share:
            t0 = clock()
            ep.reset(tasks[i % len(tasks)])
            ep.step(look)
            ep.close()
            per.append(clock() - t0)

    started, cpu = clock(), _cpu()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(play, [range(w, episodes, workers) for w in range(workers)]))
    total, cpu_used = clock() - started, _cpu() - cpu
    return SandboxBench(
        env=env_id,
        sandbox_start_ms_p50=_ms(boxed),
        subprocess_start_ms_p50=_ms(plain),
        episodes=episodes,
        workers=workers,
        episodes_1000_s=round(total * 1000 / episodes, 2),
        episodes_1000_cpu_s=round(cpu_used * 1000 / episodes, 2),
        episode_ms_p50=_ms(per),
        starts_measured=starts,
    )
