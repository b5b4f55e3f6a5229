"""A command killed while its workers run sandboxes leaves nothing running behind.

An `envfactory audit` killed by a time limit left two workers running for over 90 minutes.
The stand-in below opens a real :func:`envfactory.workers.worker_pool` whose workers each run
a sandboxed command; once they run, it is killed, and every process it had started must be
gone within seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

STAND_IN = """
from envfactory.terminal.sandbox import Limits, Sandbox
from envfactory.workers import worker_pool

def job(i):
    with Sandbox(Limits(wall_s=120, cpu_s=120)) as box:
        while box.run("sleep 100").seconds < 90:  # a busy host may refuse a fork: retry
            pass

if __name__ == "__main__":
    with worker_pool(2) as pool:
        futures = [pool.submit(job, i) for i in range(2)]
        print("ready", flush=True)
        for f in futures:
            f.result()
"""


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(name))
    return tree


def _descendants(pid: int) -> dict[int, str]:
    """Every living descendant of ``pid``: pid -> its start time (to tell a reused pid)."""
    tree, found, todo = _children(), {}, [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            started = _alive(child)
            if started is not None:
                found[child] = started
                todo.append(child)
    return found


def _alive(pid: int) -> str | None:
    """The start time of ``pid`` when it runs (a zombie has finished)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_killed_command_leaves_no_worker_or_sandbox(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", STAND_IN],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        preexec_fn=_interruptible,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 30
        while True:  # two workers, each with a sandbox running `sleep`
            started = _descendants(proc.pid)
            sleeping = [p for p in started if _cmdline(p).startswith("sleep")]
            if len(sleeping) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert len(sleeping) == 2, "the stand-in never ran its sandboxes"
        os.kill(proc.pid, sig)
        proc.wait(timeout=60)  # after the whole suite, unwinding on SIGINT took over 10 s twice
        deadline = time.monotonic() + 5
        left = started
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = {p: s for p, s in started.items() if _alive(p) == s}
        assert not left, f"still running after {sig.name}: {[_cmdline(p) for p in left]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _interruptible() -> None:
    """SIGINT as a terminal delivers it: a shell's background job (pytest started with ``&``)
    ignores it, and its children inherit that, so the stand-in would never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
