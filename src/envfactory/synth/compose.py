"""Compose a world: an organisation's name, and a structure drawn from the world grammar.

``synthesize(index, seed)`` is a pure function: the same (index, seed) gives the same domain
data, byte for byte, on every run and machine with the same Faker release.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from faker import Faker

from envfactory.synth.grammar import compose
from envfactory.synth.grammar.shape import Data

#: The ladder rises by the writes a task needs, each a chance to go wrong: the starter level
#: (ids given, one call), then one sub-goal named by reference (a look-up, then the write: the
#: rung a model climbs to from the starter), two sub-goals, harder goals with look-alike rows
#: and facts the user holds back, three sub-goals, and at the top four harder ones over many
#: rows. Gold plans average 1.0, 2.5, 5.0, 6.1, 11.0 and 14.4 calls over the levels, and the
#: hand-written database worlds' default ladder 1.0, 1.3, 2.8, 6.7, 9.8 and 14.7
#: (``python -m envfactory.bench.ladder``).
LADDER: list[Data] = [
    {"width": 1, "indirection": 1, "goal_levels": [1, 2]},
    {"width": 2, "indirection": 1, "goal_levels": [1, 2]},
    {"width": 2, "indirection": 1, "distractors": 1, "held_back": 0.3, "goal_levels": [2, 3]},
    {"width": 3, "indirection": 2, "distractors": 2, "held_back": 0.6, "goal_levels": [2, 3, 4]},
    {"width": 4, "indirection": 2, "distractors": 2, "held_back": 0.7, "goal_levels": [3, 4]},
]


def world_id(index: int, org: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", org.lower()).strip("-")
    return f"synth-{index:05d}-{words[:32].rstrip('-')}"


@dataclass(frozen=True)
class Synthesised:
    """One composed world: its domain data, and the tags of what it is made of."""

    domain: Data
    patterns: tuple[str, ...]
    rule_kinds: dict[str, str]  # each rule's constraint kind (see synth.grammar.constraints)


def synthesize(index: int, seed: int = 0) -> Synthesised:
    """Synthesised world ``index`` of the library ``seed``."""
    rng = random.Random(f"envfactory-synth/{seed}/{index}")
    fake = Faker("en_US")
    fake.seed_instance(rng.randrange(2**31))
    org = fake.company().replace(",", "")
    made = compose(rng)
    first = next(iter(made.entities.values()))
    domain = {
        "id": world_id(index, org),
        "name": f"{org}",
        "description": f"A synthesised world: {org} and its "
        + ", ".join(str(e["label"]) + "s" for e in made.entities.values())
        + ".",
        "persona": f"You are the assistant at {org}, serving its {first['label']}s.",
        "today": "2026-06-01",
        "entities": made.entities,
        "actions": made.actions,
        "rules": made.rules,
        "goals": made.goals,
        "ladder": LADDER,
    }
    return Synthesised(domain, made.tags, made.rule_kinds)
