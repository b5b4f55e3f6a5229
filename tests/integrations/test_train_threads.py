"""``envfactory train`` sizes torch's threads to the cores idle as it starts: a thread that
waits for a core another job holds stalls every matrix product (runs took ten times as long)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from envfactory.training.grpo_cpu import idle_cores, threads_for


@pytest.mark.parametrize(
    ("cores", "busy_share", "threads"),
    [
        (2, 0.02, 2),  # a quiet machine: every core
        (2, 0.50, 1),  # one core taken by a calibration worker
        (2, 0.35, 1),  # a core 70% used counts as busy
        (2, 1.00, 1),  # every core busy: still one thread
        (16, 0.25, 12),  # a bigger machine with four busy cores
        (16, 0.27, 11),  # ... and a fifth a third used
    ],
)
def test_threads_are_the_cores_not_busy_in_the_sample(
    cores: int, busy_share: float, threads: int
) -> None:
    assert threads_for(cores, busy_share) == threads


def _spin(seconds: float) -> None:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_with_every_core_spinning_one_thread_is_left() -> None:
    cores = os.cpu_count() or 1
    spinners = [multiprocessing.Process(target=_spin, args=(4.0,)) for _ in range(cores)]
    for p in spinners:
        p.start()
    try:
        assert idle_cores(sample_s=1.0) == 1
    finally:
        for p in spinners:
            p.join()
