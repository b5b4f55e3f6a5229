"""Anchor-state step advantages (the GiGPO idea).

Within a group of rollouts of one task, turns taken from the same state (equal canonical hash)
are alternatives to each other. Each turn's return is the discounted sum of its own and later
step rewards plus the episode's reward, discounted from the last turn; the step advantage of a
turn is its return normalised within its anchor group (a turn alone in its group gets 0). The
advantage a turn is trained on is the episode advantage plus ω times its step advantage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from envfactory.credit.stats import normalise
from envfactory.credit.turns import Turn


def returns(turns: Sequence[Turn], reward: float, gamma: float = 1.0) -> list[float]:
    """G_t = Σ_{k≥t} γ^{k−t} r_k + γ^{T−1−t} R for one episode's turns (in order)."""
    out: list[float] = []
    g = reward
    for i, t in enumerate(reversed(turns)):
        g = t.reward + (g if i == 0 else gamma * g)
        out.append(g)
    return out[::-1]


def anchor_advantages(
    turns: Sequence[Turn], values: Mapping[tuple[int, int], float], *, std: bool = True
) -> dict[tuple[int, int], float]:
    """Step advantages: ``values[(episode, call)]`` normalised among the turns that acted from
    the same state. Keys are (episode, call)."""
    groups: dict[str, list[Turn]] = defaultdict(list)
    for t in turns:
        groups[t.before].append(t)
    out: dict[tuple[int, int], float] = {}
    for members in groups.values():
        vals = [values[(t.episode, t.call)] for t in members]
        adv = normalise(vals, std=std) if len(members) > 1 else [0.0]
        for t, a in zip(members, adv, strict=True):
            out[(t.episode, t.call)] = a
    return out


def gigpo_step_advantages(
    episodes: Sequence[Sequence[Turn]],
    rewards: Sequence[float],
    *,
    gamma: float = 1.0,
    std: bool = True,
) -> dict[tuple[int, int], float]:
    """Step advantages of a group: discounted returns compared within anchor groups."""
    values: dict[tuple[int, int], float] = {}
    for turns, reward in zip(episodes, rewards, strict=True):
        for t, g in zip(turns, returns(turns, reward, gamma), strict=True):
            values[(t.episode, t.call)] = g
    return anchor_advantages([t for ts in episodes for t in ts], values, std=std)
