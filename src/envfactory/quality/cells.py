"""Which tasks a quality check samples: every split by its share, difficulties in turn."""

from __future__ import annotations

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split
from envfactory.tasks.seeds import SPLIT_SHARES


def sample_cells(env: Environment, n: int) -> list[tuple[Split, int, int]]:
    """Up to ``n`` (split, difficulty, index) cells: the environment's splits by their share,
    difficulties in turn; an environment with a finite task list gives at most what it has."""
    shares = [(s, share) for s, share in SPLIT_SHARES if s in env.splits]
    total = sum(share for _, share in shares)
    cells: list[tuple[Split, int, int]] = []
    remaining = n
    for i, (split, share) in enumerate(shares):
        k = remaining if i == len(shares) - 1 else round(n * share / total)
        remaining -= k
        cells += _cells(env, split, k)
    return cells


def _cells(env: Environment, split: Split, k: int) -> list[tuple[Split, int, int]]:
    """``k`` cells of one split, round-robin over difficulties, skipping full ones."""
    sizes = {d: env.tasks_up_to(split, d, k) for d in env.difficulties}
    out: list[tuple[Split, int, int]] = []
    index = 0
    while len(out) < k:
        open_ = [d for d in env.difficulties if index < sizes[d]]
        if not open_:
            break
        for d in open_:
            if len(out) < k:
                out.append((split, d, index))
        index += 1
    return out
