"""The audit's statistics: every threshold is a one-sided test with a stated false-alarm rate.

A world is refused on evidence, not on a raw comparison of small samples: a mean above a limit
fails only when the chance of seeing that much (or more) from a world that truly meets the
limit is below ``ALPHA``. So a world that passes at ``-n 300`` passes at ``-n 60`` unless the
smaller sample says otherwise, and a world that fails does so with a false-alarm rate of at
most ``ALPHA``.

Rewards lie in [0, 1]. Their sum is compared with a binomial of the same count of episodes and
the limit as its rate: exact for 0/1 rewards, and for partial rewards a close approximation
(a reward in [0, 1] is less spread than a coin of the same mean, so the test errs, if at all,
towards refusing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

ALPHA = 0.01  # the false-alarm rate of every audit test
CONFIDENCE = 0.95  # of the upper bounds the report states


def binomial_tail(k: float, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p); a fractional ``k`` is rounded down."""
    k_int = max(0, math.floor(k + 1e-9))
    if k_int == 0:
        return 1.0
    if k_int > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * log_p
        + (n - i) * log_q
        for i in range(k_int, n + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def p_above(values: Sequence[float], limit: float) -> float:
    """The p-value of "the mean of ``values`` is above ``limit``": the chance that a world
    whose true mean is ``limit`` earns at least this sum over as many episodes."""
    if not values:
        return 1.0
    return binomial_tail(math.fsum(values), len(values), limit)


def exceeds(values: Sequence[float], limit: float, alpha: float = ALPHA) -> bool:
    """Whether ``values`` show, at false-alarm rate ``alpha``, a mean above ``limit``."""
    return p_above(values, limit) < alpha


def upper_bound(values: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """The one-sided upper confidence bound on the mean of ``values`` (Clopper-Pearson on
    their sum): the most a world could pay, given what was seen."""
    return _upper_bound(math.fsum(values), len(values), confidence)


@lru_cache(maxsize=1024)
def _upper_bound(s: float, n: int, confidence: float) -> float:
    """:func:`upper_bound` of ``n`` values summing to ``s`` (sixty binomial tails: the
    audit's exploits mostly ask it of the same few sums)."""
    if n == 0:
        return 1.0
    if s >= n:
        return 1.0
    lo, hi = s / n, 1.0
    for _ in range(60):  # bisection: the p at which seeing ≤ s is as rare as 1 - confidence
        mid = (lo + hi) / 2
        if 1.0 - binomial_tail(s + 1, n, mid) > 1.0 - confidence:
            lo = mid
        else:
            hi = mid
    return round(hi, 4)


def p_rise(k_low: int, n_low: int, k_high: int, n_high: int, margin: float = 0.0) -> float:
    """The p-value of "a higher level succeeds more than the one below by over ``margin``",
    from successes ``k`` of ``n`` tries at each (a one-sided two-proportion z-test with the
    variance pooled where the margin is 0)."""
    if n_low == 0 or n_high == 0:
        return 1.0
    a, b = k_low / n_low, k_high / n_high
    if margin == 0.0:
        pooled = (k_low + k_high) / (n_low + n_high)
        var = pooled * (1 - pooled) * (1 / n_low + 1 / n_high)
    else:
        var = a * (1 - a) / n_low + b * (1 - b) / n_high
    if var <= 0.0:
        return 0.0 if b - a > margin else 1.0
    z = (b - a - margin) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def tasks_to_catch(rate: float, limit: float, power: float = 0.95, alpha: float = ALPHA) -> int:
    """How many episodes catch, with probability ``power``, an exploit that pays on a share
    ``rate`` of them (reward 1), when refusing takes :func:`exceeds` against ``limit``."""
    if rate <= limit:
        raise ValueError(f"an exploit paying {rate} is not above the limit {limit}")
    n = 10
    while n < 100_000:
        k = _smallest_refused(n, limit, alpha)
        if binomial_tail(k, n, rate) >= power:
            return n
        n = math.ceil(n * 1.1)
    return n


def _smallest_refused(n: int, limit: float, alpha: float) -> int:
    """The least count of paying episodes out of ``n`` that :func:`exceeds` refuses."""
    for k in range(n + 1):
        if binomial_tail(k, n, limit) < alpha:
            return k
    return n + 1


def p_gain(low: Sequence[float], high: Sequence[float], margin: float = 0.0) -> float:
    """The p-value of "the mean of ``high`` exceeds the mean of ``low`` by more than
    ``margin``" (a negative margin: "``high`` is not ``-margin`` below ``low``"), from samples
    in [0, 1] (one value per task, such as its share of successful runs).

    A one-sided z-test on Agresti-Caffo adjusted means (one success and one failure added to
    each sample, which keeps its rate near ``alpha`` when a sample is small or all 0 or all 1),
    each sample's variance taken as a coin's of its mean (the most a value in [0, 1] can have,
    so the test errs, if at all, towards passing)."""
    if not low or not high:
        return 1.0
    m, n = len(low) + 2, len(high) + 2
    a, b = (math.fsum(low) + 1) / m, (math.fsum(high) + 1) / n
    z = (b - a - margin) / math.sqrt(a * (1 - a) / m + b * (1 - b) / n)
    return 0.5 * math.erfc(z / math.sqrt(2))


def gain_power(
    rate: float, n_low: int, n_high: int, margin: float = 0.0, alpha: float = ALPHA
) -> float:
    """The chance that :func:`p_gain` refuses (finds a gain above ``margin`` at ``alpha``)
    when both samples, of ``n_low`` and ``n_high`` values, truly have the mean ``rate``
    (normal approximation): with a negative margin, the power to tell a flat curve from one
    that falls by ``-margin``."""
    if n_low == 0 or n_high == 0:
        return 0.0
    se = math.sqrt(max(rate * (1 - rate), 1e-12) * (1 / n_low + 1 / n_high))
    return 1.0 - NormalDist().cdf(NormalDist().inv_cdf(1 - alpha) + margin / se)


@lru_cache(maxsize=64)
def catch_probability(
    rate: float, first: int, cap: int, limit: float, alpha: float = ALPHA
) -> float:
    """The chance that a two-stage attack refuses an exploit paying (reward 1) on a share
    ``rate`` of tasks: ``first`` episodes, then, where any of them paid, more up to ``cap`` in
    all, refused by :func:`exceeds` against ``limit`` (exact binomial sums)."""
    k = _smallest_refused(cap, limit, alpha)
    rest = cap - first
    return math.fsum(
        _binomial_pmf(j, first, rate) * binomial_tail(k - j, rest, rate)
        for j in range(1, first + 1)
    )


def _binomial_pmf(k: int, n: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (sound at 0 and 1, unlike the normal one)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))
