"""The world grammar: worlds composed from structure, solvable by construction.

``compose(rng)`` draws a world's shape (:mod:`.shape`: an entity graph, fields, lifecycles),
derives its tools and write ops from the shape (:mod:`.tools`), binds constraints from an
algebra to the ops (:mod:`.constraints`) and derives goals at every level from the ops
(:mod:`.goals`). The result is ordinary domain data for the engine, and tags naming what it
is made of (``lifecycle:<shape>``, ``constraint:<kind>``, ``graph:<production>``).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from envfactory.synth.grammar.constraints import bind_constraints
from envfactory.synth.grammar.goals import derive_goals
from envfactory.synth.grammar.shape import Data, Lifecycle, Shape, draw_shape
from envfactory.synth.grammar.tools import derive_tools


@dataclass(frozen=True)
class Composed:
    """A world's entities, actions, rules and goals, and its tags."""

    entities: Data
    actions: list[Data]
    rules: list[Data]
    goals: list[Data]
    tags: tuple[str, ...]
    rule_kinds: dict[str, str]  # each rule's constraint kind


def lifecycle_shape(lc: Lifecycle) -> str:
    """A lifecycle's shape with its names stripped: states, moves, exits, loops."""
    moves = sum(len(t.sources) for t in lc.transitions)
    terminal = sum(not lc.out_of(s) for s in lc.states)
    return f"{len(lc.states)}s{moves}m{terminal}t" + ("-setter" if lc.setter else "")


def _graph_tags(shape: Shape) -> list[str]:
    tags = [f"graph:{len(shape.entities)}-tables"]
    for e in shape.entities.values():
        if e.other is not None:
            tags.append("graph:many-to-many")
        elif e.parent is not None:
            tags.append("graph:one-to-many")
        if e.optional:
            tags.append("graph:optional-ref")
        if e.hierarchy:
            tags.append("graph:hierarchy")
    return sorted(set(tags))


def compose(rng: random.Random) -> Composed:
    """One world drawn from the grammar with ``rng``."""
    shape = draw_shape(rng)
    world = derive_tools(shape, rng)
    kinds = bind_constraints(world, rng)
    goals = derive_goals(world)
    lifecycles = [lifecycle_shape(e.lifecycle) for e in shape.entities.values() if e.lifecycle]
    tags = (
        _graph_tags(shape)
        + sorted(f"lifecycle:{s}" for s in lifecycles)
        + sorted(f"constraint:{k}" for k in Counter(kinds))
    )
    return Composed(
        world.entities,
        list(world.actions.values()),
        world.rules,
        goals,
        tuple(tags),
        world.rule_kinds,
    )
