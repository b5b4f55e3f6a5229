"""Containment: what a command in the sandbox cannot do to the host, whatever it tries."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from envfactory.contract.results import ToolFailure
from envfactory.terminal import fs
from envfactory.terminal.sandbox import Limits, Runtime, Sandbox, _remove, runtime


@pytest.fixture
def box() -> Sandbox:
    with Sandbox(Limits(wall_s=10)) as s:
        yield s  # type: ignore[misc]


def _processes_with(marker: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if marker in Path(f"/proc/{d}/cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d))
            except OSError:
                pass
    return out


def _gone(marker: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while _processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_no_network(box: Sandbox) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(3)

    def accept() -> None:
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    t = threading.Thread(target=accept)
    t.start()
    r = box.run(
        "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; "
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
    )
    t.join()
    server.close()
    assert r.output.split()[0] == "lo"  # the only interface
    assert "Error" in r.output and r.exit_code != 0
    assert not accepted  # the host's loopback is another namespace


def test_no_read_of_host_files(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    r = box.run(f"cat {secret}; cat /etc/shadow; ls /root /home {box.runtime.root}; cat /work/*")
    assert "host secret" not in r.output
    assert "No such file" in r.output
    assert set(os.listdir(box.runtime.root)) & {box.path.name}  # the host has it, the box not
    assert box.path.name not in box.run("ls -a / /work").output
    passwd = box.run("cat /etc/passwd").output
    assert passwd.strip().startswith("agent:") and "root:" not in passwd


def test_no_write_outside_the_working_directory(box: Sandbox) -> None:
    marker = f"envfactory-{os.getpid()}"
    r = box.run(
        f"for d in / /usr /usr/bin /etc /proc /sys /root; do touch $d/{marker} 2>&1; done; "
        f"echo inside > /tmp/{marker}; echo ok > here.txt"
    )
    assert r.output.count("cannot touch") == 7  # /tmp is the sandbox's own, in memory
    for d in ("/", "/usr", "/usr/bin", "/etc", "/tmp"):
        assert not Path(d, marker).exists()
    assert (box.path / "here.txt").read_text() == "ok\n"


def test_capabilities_dropped(box: Sandbox) -> None:
    r = box.run("grep CapEff /proc/self/status; mkdir m; mount -t tmpfs x m 2>&1; id -u")
    assert "0000000000000000" in r.output
    nested = box.run("unshare -U -r id 2>&1")  # no way back to root in a nested namespace
    assert nested.exit_code != 0 and "uid=0" not in nested.output
    assert "permission denied" in r.output.lower() or "must be superuser" in r.output.lower()
    assert r.output.strip().endswith("1000")


def test_fork_bomb_is_cut_off(box: Sandbox) -> None:
    marker = f"bomb{os.getpid()}"
    started = time.monotonic()
    r = box.run(f"{marker}(){{ {marker}|{marker}& }};{marker}; sleep 2", Limits(wall_s=4))
    assert time.monotonic() - started < 10
    assert "Resource temporarily unavailable" in r.output or r.limit == "wall_time"
    assert _gone(marker)  # every process of the bomb died with the sandbox
    assert subprocess.run(["true"]).returncode == 0  # the host can still start processes


def test_background_processes_die_with_the_command(box: Sandbox) -> None:
    marker = f"sleeper{os.getpid()}"
    r = box.run(
        f"(exec -a {marker} sleep 60) & nohup sh -c 'sleep 60; echo {marker}' & echo started"
    )
    assert r.output.strip() == "started" and r.seconds < 5
    assert _gone(marker)


def test_memory_bomb_is_cut_off(box: Sandbox) -> None:
    r = box.run('python3 -c "x = bytearray(4 * 1024**3)"', Limits(memory_mb=256))
    assert r.exit_code != 0 and "MemoryError" in r.output


def test_infinite_loop_hits_the_wall_clock(box: Sandbox) -> None:
    r = box.run("while :; do :; done", Limits(wall_s=1))
    assert r.limit == "wall_time" and r.seconds < 3


def test_cpu_time_limit(box: Sandbox) -> None:
    r = box.run("while :; do :; done", Limits(cpu_s=1, wall_s=20))
    assert r.limit is None and r.exit_code != 0 and r.seconds < 15


def test_output_flood_is_cut_off(box: Sandbox) -> None:
    r = box.run("yes flood", Limits(flood_bytes=1_000_000, output_chars=2000))
    assert r.limit == "output" and r.truncated
    assert len(r.output) < 2200 and "bytes omitted" in r.output


def test_file_size_limit(box: Sandbox) -> None:
    r = box.run("head -c 5M /dev/zero > big; echo $?", Limits(file_size_mb=1))
    assert (box.path / "big").stat().st_size <= 1 << 20
    assert r.output.strip().endswith(("1", "153"))


def test_symlink_and_dotdot_escapes_fail(box: Sandbox) -> None:
    box.run("ln -s /etc/passwd pw; ln -s / rootlink; ln -s .. up; mkfifo pipe")
    before = Path("/etc/passwd").read_bytes()
    for path in ("pw", "rootlink/etc/passwd", "up/x", "../x", "/etc/passwd", "sub/../../x"):
        with pytest.raises(ToolFailure):
            fs.read_file(box.path, path, 1000)
        with pytest.raises(ToolFailure):
            fs.write_file(box.path, path, b"pwned", box.owner)
    with pytest.raises(ToolFailure):
        fs.read_file(box.path, "pipe", 1000)  # a FIFO never blocks the host
    assert Path("/etc/passwd").read_bytes() == before
    tree = fs.snapshot(box.path)
    assert tree["pw"].kind == "link" and tree["pw"].data is None
    assert tree["pipe"].kind == "other"
    assert fs.write_file(box.path, "/work/ok/new.txt", b"fine", box.owner) == "ok/new.txt"
    assert box.run("cat ok/new.txt").output == "fine"


def test_host_processes_cannot_be_signalled(box: Sandbox) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        r = box.run(f"kill -9 {victim.pid} {os.getpid()} 1 2>&1; ls /proc | grep -c '^[0-9]'")
        assert victim.poll() is None  # still running
        assert int(r.output.split()[-1]) <= 5  # only the sandbox's own processes are visible
    finally:
        victim.kill()  # ours, started above
        victim.wait()


def test_teardown_and_orphan_sweep(tmp_path: Path) -> None:
    root = tmp_path / "root"
    rt = runtime(root)
    box = Sandbox(root=root)
    path = box.path
    box.run("mkdir -p locked/deeper && touch locked/deeper/f && chmod 000 locked")
    box.close()
    assert not path.exists()
    # A process that dies without closing leaves its directory; the next start-up sweeps it.
    script = (
        "import os; from pathlib import Path; from envfactory.terminal.sandbox import Sandbox;"
        f"b = Sandbox(root=Path({str(root)!r})); b.run('echo x > f'); print(b.path, flush=True);"
        "os._exit(0)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    orphan = Path(done.stdout.strip())
    assert orphan.exists(), done.stderr
    assert Runtime(root).swept >= 1
    assert not orphan.exists()
    assert rt.root == root


def test_a_leftover_swept_twice_keeps_the_root_open(tmp_path: Path) -> None:
    """Processes starting together (an audit's workers) sweep the same leftovers; the one
    that found a leftover gone set the shared root to 0700, and no sandbox on the machine
    could start ("bwrap: Can't find source path .../etc-...: Permission denied") until
    another process started."""
    root = tmp_path / "root"
    runtime(root)
    mode = stat.S_IMODE(root.stat().st_mode)
    leftover = root / "ep-1-0-1"
    (leftover / "locked").mkdir(parents=True)
    for _ in range(2):
        _remove(str(leftover))
    assert not leftover.exists()
    assert stat.S_IMODE(root.stat().st_mode) == mode  # 0711 on a root host: others cross it


def test_materialize_never_writes_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    tree = {
        "a": fs.Entry("link", target=str(outside)),
        "a/planted.txt": fs.Entry("file", data=b"x", size=1),
        "b/ok.txt": fs.Entry("file", data=b"y", size=1),
    }
    fs.materialize(tree, root)
    assert list(outside.iterdir()) == []
    assert (root / "b/ok.txt").read_bytes() == b"y" and (root / "a").is_symlink()
