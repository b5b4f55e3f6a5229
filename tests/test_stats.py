"""The adaptive attack's stated error rates."""

from __future__ import annotations

import pytest

from envfactory.quality.adversary import CAP, CATCH_POWER, CATCH_RATE, EXPLOIT_MAX, FIRST
from envfactory.quality.stats import (
    ALPHA,
    binomial_tail,
    catch_probability,
    exceeds,
    tasks_to_catch,
)


def test_the_cap_catches_an_exploit_paying_on_5_percent_of_tasks() -> None:
    assert CAP == tasks_to_catch(CATCH_RATE, EXPLOIT_MAX) == 659
    assert catch_probability(CATCH_RATE, CAP, CAP, EXPLOIT_MAX) >= 0.95  # all at once
    assert CATCH_POWER == 0.93  # noticed first on 60 tasks
    assert catch_probability(CATCH_RATE, FIRST, CAP, EXPLOIT_MAX) < catch_probability(
        CATCH_RATE, 2 * FIRST, CAP, EXPLOIT_MAX
    )


def test_an_exploit_at_the_limit_is_refused_at_most_1_percent_of_the_time() -> None:
    assert catch_probability(EXPLOIT_MAX, FIRST, CAP, EXPLOIT_MAX) <= ALPHA


def test_catch_probability_sums_the_two_stages() -> None:
    """With nothing in the first stage, the second never runs; with the whole cap in the
    first, it is the one test's power."""
    assert catch_probability(0.1, 0, 100, EXPLOIT_MAX) == 0.0
    k = next(k for k in range(101) if exceeds([1.0] * k + [0.0] * (100 - k), EXPLOIT_MAX))
    assert catch_probability(0.1, 100, 100, EXPLOIT_MAX) == pytest.approx(
        binomial_tail(k, 100, 0.1)
    )
