"""``envfactory serve`` as a process, and ``envfactory bench-serve``'s JSON record."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx

from envfactory.serving.server import free_port


def test_serve_command_answers_health_and_openapi() -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "envfactory", "serve", "--port", str(port), "--envs", "retail"]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert health.json() == {"status": "ok"}
        doc = httpx.get(f"http://127.0.0.1:{port}/openapi.json").json()
        assert {"/retail/tools", "/{env_name}/call", "/create"} & set(doc["paths"])
        assert "/envfactory/sessions/{sid}/verdict" in doc["paths"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_refuses_public_bind_without_token() -> None:
    cmd = [sys.executable, "-m", "envfactory", "serve", "--host", "0.0.0.0", "--port", "9"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "token" in out.stderr


def test_bench_serve_prints_its_record() -> None:
    cmd = [sys.executable, "-m", "envfactory", "bench-serve", "--json", "--sessions", "20"]
    cmd += ["--concurrent", "10", "--seconds", "0.5", "--think-ms", "20"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    for key in ("sessions", "calls_per_s", "p50_ms", "p99_ms", "errors"):
        assert key in record
    assert record["sessions"] == 20 and record["errors"] == 0 and record["calls_per_s"] > 0
    assert record["openenv_calls_per_s"] > 0 and record["ratio"] > 0
