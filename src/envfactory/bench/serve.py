"""``envfactory bench serve`` (or ``bench-serve``): a server under load on loopback, and
OpenEnv's under the same load.

1. **Live sessions**: open ``sessions`` episodes of the world through the Open Reward Standard
   routes (``/create_session`` + ``/create``) and hold them; report the server's memory.
2. **Latency**: ``concurrent`` more sessions on the OpenEnv WebSocket channel each make a tool
   call of the world, pause (uniform, mean ``think_ms``, as an agent waiting on its model
   would), and call again, for ``seconds``; report p50 and p99 of the round trip.
3. **Throughput**: the same connections call back to back (closed loop) for ``seconds``.

Phases 2 and 3 then run on the same server with a trivial ``echo`` world
(:mod:`envfactory.serving.bench_echo`), and with identical traffic against OpenEnv's own
server hosting the same echo (:mod:`envfactory.serving.bench_peer`): ``ratio`` compares the
two echo throughputs, serving stack against serving stack. Servers run as subprocesses
(``python -m``) pinned to one core; the load comes from a lean WebSocket client
(:mod:`.wsload`) in ``client_procs`` processes (default: the CPU count) on the other cores
(the last core on a two-core machine), so the client's share of one core does not cap what
is measured. ``client_procs`` 1 drives the load from this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any

import httpx
from rich.progress import Progress

from envfactory.bench import wsload
from envfactory.registry import make


@dataclass(frozen=True)
class BenchSettings:
    env_id: str = "retail"
    sessions: int = 2000
    concurrent: int = 1000
    seconds: float = 8.0
    think_ms: float = 1000.0
    peer: bool = True
    warmup: float = 1.0
    client_procs: int | None = None  # load client processes; None: the CPU count


@dataclass
class Load:
    """What one load phase saw."""

    latencies: list[float] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    elapsed: float = 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def _server(args: list[str], port: int) -> Iterator[int]:
    """Start a server subprocess, wait for ``/health``, yield its pid, stop it."""
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: _pin(SERVER_CPU),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                raise RuntimeError(f"server {args} exited: {err}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"server {args} did not start")
            time.sleep(0.1)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


SERVER_CPU, CLIENT_CPU = 0, 1


def _pin(cpu: int) -> None:
    """Keep a process on one core (when there are two): the server on one, the load on the
    other, so a multi-threaded server cannot take the load generator's core."""
    if (os.cpu_count() or 1) >= 2 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


ECHO_CALL = {"type": "tool_call", "tool": "echo", "arguments": {"text": "hello"}}


def _tool_call(env_id: str) -> dict[str, Any]:
    """A valid tool call of the world (the first step of a gold plan), sent again and again."""
    step = make(env_id).task("train", 1, 0).hidden.gold_plan[0]
    return {"type": "tool_call", "tool": step.tool, "arguments": dict(step.arguments)}


async def _open_sessions(url: str, env_id: str, n: int) -> int:
    """Open ``n`` episodes through the standard's routes; returns how many succeeded."""
    limits = httpx.Limits(max_connections=64)
    ok = 0
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:
        gate = asyncio.Semaphore(64)

        async def one(i: int) -> None:
            nonlocal ok
            async with gate:
                sid = (await http.post("/create_session")).json()["sid"]
                body = {"env_name": env_id, "split": "train", "index": i % 1000}
                r = await http.post("/create", json=body, headers={"X-Session-ID": sid})
                ok += r.status_code == 200

        await asyncio.gather(*(one(i) for i in range(n)))
    return ok


async def _connect(url: str, n: int) -> list[wsload.Conn]:
    return await wsload.open_conns(url, range(n))


_is_observation = wsload.is_observation


def client_procs(s: BenchSettings) -> int:
    """The load client processes a run uses."""
    wanted = s.client_procs if s.client_procs is not None else os.cpu_count() or 1
    return max(1, min(wanted, s.concurrent))


def client_cpus() -> list[int]:
    """The cores the load clients run on: all but the server's (the client core alone on a
    two-core machine); none pinned on one core."""
    n = os.cpu_count() or 1
    if n < 2 or not hasattr(os, "sched_setaffinity"):
        return []
    return [c for c in range(n) if c != SERVER_CPU]


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load(tally: wsload.Tally, span: float) -> Load:
    return Load(
        latencies=tally.latencies, calls=len(tally.latencies), errors=tally.errors, elapsed=span
    )


async def _phases(
    url: str, action: dict[str, Any], s: BenchSettings, pid: int
) -> tuple[Load, Load, float]:
    """Latency phase, throughput phase, and the server's CPU microseconds per call in the
    throughput phase (to show the client is not what limits it)."""
    conns = await _connect(url, s.concurrent)
    message = json.dumps({"type": "step", "data": action})
    try:
        tally, span = await wsload.drive(
            conns, message, _is_observation, s.warmup, s.seconds, s.think_ms / 1000
        )
        latency = _load(tally, span)
        cpu0 = _cpu_s(pid)
        tally, span = await wsload.drive(conns, message, _is_observation, s.warmup, s.seconds, 0)
        cpu = _cpu_s(pid) - cpu0
        throughput = _load(tally, span)
    finally:
        for conn in conns:
            conn.close()
    per_call = cpu / max(throughput.calls, 1) * s.seconds / (s.seconds + s.warmup)
    return latency, throughput, round(1e6 * per_call, 1)


def _phases_pooled(
    url: str, action: dict[str, Any], s: BenchSettings, pid: int
) -> tuple[Load, Load, float]:
    """:func:`_phases` with the connections spread over :func:`client_procs` processes."""
    message = json.dumps({"type": "step", "data": action})
    with wsload.ClientPool(url, s.concurrent, client_procs(s), client_cpus()) as pool:
        tally, span = pool.drive(message, s.warmup, s.seconds, s.think_ms / 1000)
        latency = _load(tally, span)
        cpu0 = _cpu_s(pid)
        tally, span = pool.drive(message, s.warmup, s.seconds, 0)
        cpu = _cpu_s(pid) - cpu0
        throughput = _load(tally, span)
    # the pool's start delay (0.2 s) and its gathering of the tallies count with the warmup
    per_call = cpu / max(throughput.calls, 1) * s.seconds / (s.seconds + s.warmup + 0.2)
    return latency, throughput, round(1e6 * per_call, 1)


def _measure(
    url: str, action: dict[str, Any], s: BenchSettings, pid: int
) -> tuple[Load, Load, float]:
    if client_procs(s) > 1:
        return _phases_pooled(url, action, s, pid)
    return asyncio.run(_phases(url, action, s, pid))


def _raise_fd_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _summary(prefix: str, phases: tuple[Load, Load, float]) -> dict[str, Any]:
    latency, throughput, cpu_us = phases
    return {
        f"{prefix}calls_per_s": round(throughput.calls / max(throughput.elapsed, 1e-9), 1),
        f"{prefix}p50_ms": latency.percentile(0.50),
        f"{prefix}p99_ms": latency.percentile(0.99),
        f"{prefix}latency_calls": latency.calls,
        f"{prefix}saturated_p50_ms": throughput.percentile(0.50),
        f"{prefix}server_cpu_us_per_call": cpu_us,
        f"{prefix}errors": latency.errors + throughput.errors,
    }


def bench_serve(**settings: Any) -> dict[str, Any]:
    """:func:`run_bench` with :class:`BenchSettings` given as keywords (the section's run)."""
    return run_bench(BenchSettings(**settings))


bench_serve.__signature__ = inspect.signature(BenchSettings)  # type: ignore[attr-defined]


def run_bench(s: BenchSettings) -> dict[str, Any]:
    """Run every phase and return the JSON record. This process runs on the client's core
    meanwhile, and on its own cores again afterwards."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_setaffinity") else None
    try:
        return _run(s)
    finally:
        if cores is not None:
            os.sched_setaffinity(0, cores)


def _run(s: BenchSettings) -> dict[str, Any]:
    _raise_fd_limit()
    _pin(CLIENT_CPU)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    out: dict[str, Any] = {"env": s.env_id, "concurrent": s.concurrent, "think_ms": s.think_ms}
    procs = client_procs(s)
    pinned = client_cpus()
    out |= {"client_procs": procs, "client_cpus": pinned if procs > 1 else pinned[:1]}
    port = _free_port()
    capacity = str(s.sessions + s.concurrent + 64)
    ours = ["-m", "envfactory.serving.bench_echo", "--port", str(port), "--envs", s.env_id]
    peer_on = s.peer and find_spec("openenv") is not None
    with Progress(transient=True) as progress:
        bar = progress.add_task("bench-serve", total=3 + peer_on)
        with _server([*ours, "--max-sessions", capacity], port) as pid:
            url = f"http://127.0.0.1:{port}"
            rss0 = _rss_mb(pid)
            opened = asyncio.run(_open_sessions(url, s.env_id, s.sessions))
            live = httpx.get(f"{url}/envfactory/stats").json()["sessions"]
            rss1 = _rss_mb(pid)
            out |= {"sessions": live, "sessions_opened": opened, "server_rss_mb": rss1}
            out["kb_per_session"] = round(1024 * (rss1 - rss0) / max(live, 1), 1)
            progress.advance(bar)
            world = f"ws://127.0.0.1:{port}/openenv/{s.env_id}/ws"
            out |= _summary("", _measure(world, _tool_call(s.env_id), s, pid))
            progress.advance(bar)
            echo = f"ws://127.0.0.1:{port}/openenv/echo/ws"
            out |= _summary("echo_", _measure(echo, ECHO_CALL, s, pid))
            progress.advance(bar)
        if peer_on:
            port = _free_port()
            peer = ["-m", "envfactory.serving.bench_peer", "--port", str(port)]
            with _server([*peer, "--max-sessions", capacity], port) as pid:
                peer_url = f"ws://127.0.0.1:{port}/ws"
                out |= _summary("openenv_", _measure(peer_url, ECHO_CALL, s, pid))
            progress.advance(bar)
            out["ratio"] = round(out["echo_calls_per_s"] / max(out["openenv_calls_per_s"], 1), 2)
            cpu_ours = max(out["echo_server_cpu_us_per_call"], 1e-9)
            out["cpu_ratio"] = round(out["openenv_server_cpu_us_per_call"] / cpu_ours, 2)
    out["cpus"] = os.cpu_count()
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out
