"""Reward propagated over the state graph of a group (the RewardFlow idea).

The group's rollouts visit states (canonical hashes); equal states are one node and each turn
is an edge from the state it acted from to the state it reached. An episode's final state is a
terminal node carrying the episode's reward (the mean, when several episodes end there).
Terminal rewards then flow backwards:

- ``bfs``: V(s) = max over terminals t reachable from s of γ^d(s, t) · R(t), with d the
  shortest number of edges (a breadth-first search over reversed edges from each terminal);
- ``ppr``: personalised PageRank on the reversed graph, restarting at terminals in proportion
  to their reward (probability ``alpha``), walking to predecessors in proportion to how often
  each edge was taken; scaled so the best node has the best terminal reward.

Each turn is then credited with the value of the state it reached.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from envfactory.credit.turns import Turn

Flow = Literal["bfs", "ppr"]


@dataclass
class StateGraph:
    """Nodes are state hashes; ``edges[s][s2]`` counts turns from s to s2 (s2 != s)."""

    nodes: set[str] = field(default_factory=set)
    edges: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    terminal: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def build(cls, episodes: Sequence[tuple[Sequence[Turn], str, float]]) -> StateGraph:
        """From (turns, final state, reward) per episode."""
        g = cls()
        for turns, final, reward in episodes:
            g.nodes.add(final)
            for t in turns:
                g.nodes.update((t.before, t.after))
                if t.after != t.before:
                    out = g.edges[t.before]
                    out[t.after] = out.get(t.after, 0) + 1
            g.terminal[final].append(reward)
        return g

    def rewards(self) -> dict[str, float]:
        return {s: sum(r) / len(r) for s, r in self.terminal.items()}

    def predecessors(self) -> dict[str, dict[str, int]]:
        back: dict[str, dict[str, int]] = defaultdict(dict)
        for s, outs in self.edges.items():
            for s2, n in outs.items():
                back[s2][s] = n
        return back


def bfs_values(graph: StateGraph, gamma: float = 0.9) -> dict[str, float]:
    """V(s) = max_t γ^d(s,t) R(t) over the terminals t that s reaches."""
    values = dict.fromkeys(graph.nodes, 0.0)
    back = graph.predecessors()
    for t, r in graph.rewards().items():
        if r <= 0:
            continue
        seen, queue = {t: 0}, deque([t])
        while queue:
            s = queue.popleft()
            values[s] = max(values[s], r * gamma ** seen[s])
            for p in back.get(s, {}):
                if p not in seen:
                    seen[p] = seen[s] + 1
                    queue.append(p)
    return values


def ppr_values(
    graph: StateGraph, alpha: float = 0.15, tol: float = 1e-12, max_iter: int = 10_000
) -> dict[str, float]:
    """Personalised PageRank of the reversed graph, restarting at rewarded terminals."""
    rewards = graph.rewards()
    mass = sum(r for r in rewards.values() if r > 0)
    if mass <= 0:
        return dict.fromkeys(graph.nodes, 0.0)
    restart = {s: r / mass for s, r in rewards.items() if r > 0}
    back = graph.predecessors()
    out_weight = {s: sum(p.values()) for s, p in back.items()}
    rank = dict(restart)
    for _ in range(max_iter):
        nxt = {s: alpha * w for s, w in restart.items()}
        dangling = 0.0
        for s, p in rank.items():
            total = out_weight.get(s, 0)
            if not total:
                dangling += p
                continue
            for q, n in back[s].items():
                nxt[q] = nxt.get(q, 0.0) + (1 - alpha) * p * n / total
        for s, w in restart.items():
            nxt[s] = nxt.get(s, 0.0) + (1 - alpha) * dangling * w
        delta = sum(abs(nxt.get(s, 0.0) - rank.get(s, 0.0)) for s in set(nxt) | set(rank))
        rank = nxt
        if delta < tol:
            break
    top = max(rank.values())
    best = max(rewards.values())
    return {s: best * rank.get(s, 0.0) / top for s in graph.nodes}


def state_values(graph: StateGraph, flow: Flow = "bfs", gamma: float = 0.9) -> dict[str, float]:
    return bfs_values(graph, gamma) if flow == "bfs" else ppr_values(graph, alpha=1 - gamma)
