"""A rootless sandbox on bubblewrap.

Each episode owns a fresh working directory; each command runs in its own short-lived
sandbox over it: every namespace unshared (no network, its own pids), the system read-only,
capabilities dropped, rlimits on CPU time, memory, processes and file size, a wall-clock
limit and a cap on output. Commands run under bash. When the host runs as root, sandboxes run
as a dedicated unprivileged uid so that the process limit holds. Working directories are
removed on close, at garbage collection and at exit; a crashed process's leftovers are swept
at start-up.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envfactory.contract.errors import EnvFactoryError
from envfactory.terminal.output import Capture

HOME = "/work"
SANDBOX_UID = 1000
HOST_UID_ENV = "ENVFACTORY_SANDBOX_UID"
DEFAULT_HOST_UID = 3_141_592  # the host uid sandboxes run as when the host is root
ROOT_ENV = "ENVFACTORY_SANDBOX_ROOT"
# Soft and hard limits at once (bash's ulimit sets both); nothing inside can raise them.
_ULIMIT = 'ulimit -t {cpu} -v {kb} -u {procs} -f {blocks} -n {files} -c 0 || exit 125; eval "$1"'
_TOPS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_FROM_HOST = ("alternatives", "ld.so.cache", "localtime")  # copied, links as links
_ETC_FILES = {
    "passwd": f"agent:x:{SANDBOX_UID}:{SANDBOX_UID}:agent:{HOME}:/bin/sh\n",
    "group": f"agent:x:{SANDBOX_UID}:\n",
    "hostname": "sandbox\n",
    "hosts": "127.0.0.1 localhost sandbox\n",
}
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": HOME,
    "USER": "agent",
    "LOGNAME": "agent",
    "SHELL": "/bin/sh",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@sandbox.invalid",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@sandbox.invalid",
    # A fixed clock for git, so that the same actions make the same commits.
    "GIT_AUTHOR_DATE": "2024-06-01T12:00:00+0000",
    "GIT_COMMITTER_DATE": "2024-06-01T12:00:00+0000",
}


Bind = tuple[Path, str]
"""A read-only mount: a host path and where the sandbox sees it (binds below /work cover
paths of the working directory)."""


class SandboxUnavailable(EnvFactoryError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


class SandboxError(EnvFactoryError):
    """A sandbox failed to start: an infrastructure fault, never the agent's."""


@dataclass(frozen=True)
class Limits:
    """What one command may use."""

    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 384
    processes: int = 32
    file_size_mb: int = 16
    open_files: int = 256
    tmp_mb: int = 64
    output_chars: int = 16_000
    flood_bytes: int = 4_000_000
    disk_mb: int = 64


@dataclass(frozen=True)
class RunResult:
    """What a command did. ``limit`` names the limit that cut it off (wall_time, output)."""

    exit_code: int
    output: str
    output_bytes: int
    truncated: bool
    limit: str | None
    seconds: float


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _build_etc(etc: Path) -> None:
    """The sandbox's /etc: its own user files, and the few host files programs need."""
    if etc.exists():
        _remove(str(etc))
    etc.mkdir(mode=0o755)
    for name, text in _ETC_FILES.items():
        (etc / name).write_text(text)
        os.chmod(etc / name, 0o644)
    for name in _ETC_FROM_HOST:
        src = Path("/etc") / name
        if src.is_symlink():
            os.symlink(os.readlink(src), etc / name)
        elif src.is_dir():
            (etc / name).mkdir(mode=0o755)
            for entry in os.scandir(src):
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), etc / name / entry.name)
        elif src.is_file():
            shutil.copyfile(src, etc / name)
            os.chmod(etc / name, 0o644)


def _remove(path: str) -> None:
    """Remove a tree even where the sandbox took away our permissions. Only modes inside the
    tree change: the tree's own parent is the shared root, which every sandbox user must be
    able to cross (two processes sweeping the same leftover at once made the second set the
    root to 0700, and every sandbox on the machine failed to start until the next process
    did). A tree another process removed first is left at that."""

    def fix(func: object, p: str, exc: tuple[type[BaseException], BaseException, object]) -> None:
        if isinstance(exc[1], FileNotFoundError):
            return
        try:
            if p != path:
                os.chmod(os.path.dirname(p), 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


class Runtime:
    """Process-wide sandbox settings: where working directories live and who runs them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bwrap = shutil.which("bwrap") or "bwrap"
        self.setpriv = shutil.which("setpriv") or "setpriv"
        self.is_root = os.geteuid() == 0
        host_uid = int(os.environ.get(HOST_UID_ENV, DEFAULT_HOST_UID))
        self.uid, self.gid = (host_uid, host_uid) if self.is_root else (os.getuid(), os.getgid())
        self.tag = f"{os.getpid()}-{_start_time(os.getpid())}"
        self._n = 0
        self._lock = threading.Lock()
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o711 if self.is_root else 0o700)
        self.swept = self.sweep()
        self.etc = root / f"etc-{self.tag}"  # one per process: others may be using theirs
        _build_etc(self.etc)
        atexit.register(_remove, str(self.etc))
        self.base_args = self._base_args()

    # -- working directories -----------------------------------------------------------------

    def new_workdir(self) -> Path:
        with self._lock:
            self._n += 1
            n = self._n
        path = self.root / f"ep-{self.tag}-{n}"
        path.mkdir(mode=0o700)
        if self.is_root:
            os.chown(path, self.uid, self.gid)
        return path

    def sweep(self) -> int:
        """Remove working directories (``ep-PID-START-N``) and /etc copies (``etc-PID-START``)
        whose owner process is gone; how many."""
        removed = 0
        for entry in os.scandir(self.root):
            if not entry.name.startswith(("ep-", "etc-")):
                continue
            parts = entry.name.split("-")
            try:
                pid = int(parts[1])
            except (IndexError, ValueError):
                continue
            if len(parts) < 3 or _start_time(pid) != parts[2]:
                _remove(entry.path)
                removed += 1
        return removed

    # -- the command line --------------------------------------------------------------------

    def _base_args(self) -> list[str]:
        args = [self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns"]
        args += ["--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        args += ["--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
        for top in _TOPS:
            p = Path("/") / top
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), str(p)]
            elif p.is_dir():
                args += ["--ro-bind", str(p), str(p)]
        args += ["--ro-bind", str(self.etc), "/etc"]
        return [*args, "--proc", "/proc", "--dev", "/dev"]

    def argv(
        self,
        workdir: Path,
        command: str,
        limits: Limits,
        status_fd: int,
        binds: Sequence[Bind] = (),
    ) -> list[str]:
        # Read-only binds over /work (a pristine test tree) or elsewhere (a test runner).
        extra = [a for host, inside in binds for a in ("--ro-bind", str(host), inside)]
        return [
            *self.base_args,
            # Every writable place is capped: /tmp and /dev/shm are small tmpfs mounts, the
            # rest of /dev is read-only (bwrap's /dev is an uncapped tmpfs), /work is quota'd.
            "--size",
            str(limits.tmp_mb << 20),
            "--tmpfs",
            "/tmp",
            "--size",
            str(limits.tmp_mb << 20),
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            "--bind",
            str(workdir),
            HOME,
            *extra,
            "--remount-ro",
            "/",
            "--chdir",
            HOME,
            "--json-status-fd",
            str(status_fd),
            "--",
            "/bin/bash",
            "-c",
            _ULIMIT.format(
                cpu=limits.cpu_s,
                kb=limits.memory_mb * 1024,
                procs=limits.processes,
                blocks=limits.file_size_mb * 1024,
                files=limits.open_files,
            ),
            "bash",
            command,
        ]

    def run(
        self,
        workdir: Path,
        command: str,
        limits: Limits,
        binds: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run ``command`` with ``/bin/sh -c`` in a new sandbox over ``workdir``; ``binds``
        add read-only mounts, ``env`` adds to (or replaces) the sandbox's variables."""
        status_r, status_w = os.pipe()
        argv = self.argv(workdir, command, limits, status_w, binds)
        if self.is_root:
            # setpriv drops to the sandbox uid; Python's own setuid would force a full fork.
            argv = [
                self.setpriv,
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--clear-groups",
                *argv,
            ]
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(status_w,),
                start_new_session=True,
                env={**ENV, **(env or {})},
            )
        except OSError as exc:
            os.close(status_r)
            raise SandboxError(f"bubblewrap did not start: {exc}") from exc
        finally:
            os.close(status_w)
        capture = Capture(limits.output_chars)
        limit = _pump(proc, capture, started + limits.wall_s, limits.flood_bytes)
        code = proc.wait()
        with os.fdopen(status_r, "rb") as f:
            status = f.read()
        if b"child-pid" not in status:
            text = capture.text().strip()
            raise SandboxError(f"the sandbox did not start: {text[:500] or f'exit {code}'}")
        exit_code = _exit_code(status, code)
        return RunResult(
            exit_code=exit_code,
            output=capture.text(),
            output_bytes=capture.total,
            truncated=capture.truncated,
            limit=limit,
            seconds=time.perf_counter() - started,
        )


def _pump(
    proc: subprocess.Popen[bytes], capture: Capture, deadline: float, flood: int
) -> str | None:
    """Read output until EOF, the deadline or the flood limit; kill on a limit."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    limit: str | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                limit = "wall_time"
                break
            if not sel.select(left):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            capture.feed(chunk)
            if capture.total > flood:
                limit = "output"
                break
    if limit is not None:
        # bwrap leads its own session; its pid 1 dies with it (die-with-parent) and takes
        # every process of the sandbox's pid namespace along.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.stdout.close()
    return limit


def _exit_code(status: bytes, fallback: int) -> int:
    for line in status.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "exit-code" in doc:
            return int(doc["exit-code"])
    return fallback if fallback >= 0 else 128 - fallback


def default_root() -> Path:
    """$ENVFACTORY_SANDBOX_ROOT, else /dev/shm (memory: fast to fill and tear down), else the
    temporary directory."""
    base = os.environ.get(ROOT_ENV)
    if not base:
        shm = "/dev/shm"
        base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()
    return Path(base) / f"envfactory-sandbox-{os.geteuid()}"


_RUNTIMES: dict[Path, Runtime] = {}
_RT_LOCK = threading.Lock()


def runtime(root: Path | None = None) -> Runtime:
    """The process's sandbox runtime (created, and orphans swept, on first use)."""
    path = root or default_root()
    with _RT_LOCK:
        rt = _RUNTIMES.get(path)
        if rt is None:
            reason = unavailable_reason()
            if reason:
                raise SandboxUnavailable(reason)
            rt = _RUNTIMES[path] = Runtime(path)
        return rt


@functools.cache
def unavailable_reason() -> str | None:
    """Why sandboxes cannot run here, or None when they can (probed once per process)."""
    if not shutil.which("bwrap"):
        return (
            "bubblewrap (bwrap) is not installed; terminal worlds need it "
            "(Debian: apt-get install bubblewrap, or run `make system` as root)"
        )
    for tool in ("/bin/bash", "/bin/sh"):
        if not os.access(tool, os.X_OK):
            return f"{tool} is missing; terminal worlds need it"
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "setpriv (util-linux) is missing; terminal worlds run as root need it"
    probe = Path(tempfile.mkdtemp(prefix="envfactory-probe-", dir=default_root().parent))
    try:
        rt = Runtime(probe)
        work = rt.new_workdir()
        result = rt.run(work, "echo ok", Limits(wall_s=10))
        if result.exit_code != 0 or result.output.strip() != "ok":
            return f"bubblewrap cannot run a sandbox here: {result.output.strip()[:300]}"
    except (SandboxError, OSError) as exc:
        return f"bubblewrap cannot run a sandbox here: {exc}"
    finally:
        _remove(str(probe))
    return None


class Sandbox:
    """A fresh working directory and the commands run over it; ``close`` removes it."""

    def __init__(
        self,
        limits: Limits | None = None,
        root: Path | None = None,
        binds: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.binds = tuple(binds)
        self.env = dict(env or {})
        self.runtime = runtime(root)
        self.path = self.runtime.new_workdir()
        self._finalizer = weakref.finalize(self, _remove, str(self.path))

    @property
    def owner(self) -> tuple[int, int] | None:
        """The host uid/gid files must belong to, when the host is root."""
        return (self.runtime.uid, self.runtime.gid) if self.runtime.is_root else None

    def run(self, command: str, limits: Limits | None = None) -> RunResult:
        if not self._finalizer.alive:
            raise SandboxError("the sandbox is closed")
        if not (self.binds or self.env):  # the plain call, as every terminal world makes it
            return self.runtime.run(self.path, command, limits or self.limits)
        return self.runtime.run(self.path, command, limits or self.limits, self.binds, self.env)

    def usage(self) -> int:
        """Bytes the working directory holds."""
        total = 0
        for _, _, files, dirfd in os.fwalk(self.path):
            for name in files:
                try:
                    st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    total += st.st_blocks * 512
        return total

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
