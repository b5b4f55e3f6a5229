"""Worker pools that never outlive the command that started them.

A process pool's workers are forked children; when the command is killed (SIGKILL from a
time limit, SIGTERM, Ctrl-C) they would be re-parented to init and go on running, with any
sandboxes they started. :func:`worker_pool` closes both ways out:

- each worker asks the kernel for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so a
  parent killed outright takes its workers along; sandboxes die with their worker in turn
  (bubblewrap's ``--die-with-parent``);
- while the pool is open, SIGTERM raises :class:`SystemExit` in the main thread, and leaving
  the pool by any exception (that, or Ctrl-C's ``KeyboardInterrupt``) kills the workers at
  once instead of waiting for their jobs.

:func:`imap_unordered` can also run its items as Ray tasks on the cluster this process is
connected to (``ray=True``); Ray is an optional dependency, imported only then.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from types import FrameType
from typing import Any, TypeVar

PR_SET_PDEATHSIG = 1
T = TypeVar("T")


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent (``parent``) exits; exit now if
    it already has (it may die before the request is made)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(parent: int, initializer: Callable[[], object] | None) -> None:
    die_with_parent(parent)
    if initializer is not None:
        initializer()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def worker_pool(
    jobs: int, initializer: Callable[[], object] | None = None
) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``jobs`` workers whose workers die with this process; used as
    ``with worker_pool(4) as pool: ...``. Submit from the thread that opened it: a worker's
    death signal follows the thread that forked it."""
    pool = ProcessPoolExecutor(
        max_workers=jobs, initializer=_start_worker, initargs=(os.getpid(), initializer)
    )
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main else None
    try:
        yield pool
    except BaseException:
        for process in list(pool._processes.values()):
            with contextlib.suppress(OSError, ValueError):
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def imap_unordered(
    fn: Callable[..., T],
    items: Iterable[tuple[Any, ...]],
    jobs: int,
    initializer: Callable[[], object] | None = None,
    ray: bool = False,
) -> Iterator[T]:
    """``fn(*item)`` for every item, ``jobs`` at a time in a :func:`worker_pool`, yielded as
    each finishes (at most ``4 * jobs`` queued at once, so a long list is never all
    submitted). One job runs them in this process, in order. ``ray``: as Ray tasks instead
    (see :func:`ray_imap_unordered`; ``jobs`` is then the cluster's)."""
    if ray:
        yield from ray_imap_unordered(fn, items, initializer)
        return
    if jobs <= 1:
        if initializer is not None:
            initializer()
        for item in items:
            yield fn(*item)
        return
    with worker_pool(jobs, initializer=initializer) as pool:
        queue = iter(items)
        pending: set[Future[T]] = set()
        while True:
            for item in queue:
                pending.add(pool.submit(fn, *item))
                if len(pending) >= jobs * 4:
                    break
            if not pending:
                return
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


_initialised: set[Callable[[], object]] = set()


def _ray_task(fn: Callable[..., T], initializer: Callable[[], object] | None, *item: Any) -> T:
    if initializer is not None and initializer not in _initialised:
        initializer()  # once per Ray worker process, as a pool's initializer
        _initialised.add(initializer)
    return fn(*item)


def ray_imap_unordered(
    fn: Callable[..., T],
    items: Iterable[tuple[Any, ...]],
    initializer: Callable[[], object] | None = None,
) -> Iterator[T]:
    """``fn(*item)`` for every item as Ray tasks on the cluster this process is connected to
    (``ray.init`` first), yielded as each finishes; at most twice the cluster's CPUs are
    submitted at once, and those still pending are cancelled if the caller stops early.
    ``fn`` and the items travel by pickle: the workers need envfactory installed."""
    import ray

    if not ray.is_initialized():
        raise RuntimeError("not connected to Ray: call ray.init() first")
    task = ray.remote(_ray_task)
    limit = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    queue = iter(items)
    pending: list[Any] = []
    try:
        while True:
            for item in queue:
                pending.append(task.remote(fn, initializer, *item))
                if len(pending) >= limit:
                    break
            if not pending:
                return
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
