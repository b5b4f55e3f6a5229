"""The load generator's multi-process path: connections spread over client processes, each
phase started on all of them at once and their tallies merged (``bench-serve``'s
``--client-procs``). Timing is measured by the benchmark, not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys

from envfactory.bench import wsload
from envfactory.bench.serve import ECHO_CALL, _free_port, _server


def test_a_pool_spreads_connections_over_processes_and_merges_their_tallies() -> None:
    port = _free_port()
    args = ["-m", "envfactory.serving.bench_echo", "--port", str(port), "--envs", "retail"]
    with _server([*args, "--max-sessions", "64"], port):
        url = f"ws://127.0.0.1:{port}/openenv/echo/ws"
        message = json.dumps({"type": "step", "data": ECHO_CALL})
        with wsload.ClientPool(url, concurrent=5, procs=2) as pool:
            assert pool.procs == 2
            paced, span = pool.drive(message, warmup=0.1, seconds=0.5, think=0.01)
            closed, _ = pool.drive(message, warmup=0.1, seconds=0.5, think=0)
        assert paced.errors == 0 and closed.errors == 0
        assert len(paced.latencies) >= 5 and len(closed.latencies) > len(paced.latencies)
        assert 0.3 < span < 2.0


def test_bench_serve_reports_its_client_processes() -> None:
    cmd = [sys.executable, "-m", "envfactory", "bench-serve", "--json", "--no-peer"]
    cmd += ["--sessions", "4", "--concurrent", "4", "--seconds", "0.3", "--think-ms", "10"]
    out = subprocess.run([*cmd, "--client-procs", "2"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    assert record["client_procs"] == 2 and record["errors"] == 0 and record["calls_per_s"] > 0
    assert record["echo_errors"] == 0 and isinstance(record["client_cpus"], list)
