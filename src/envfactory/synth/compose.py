"""Compose a world: an organisation's name, and a structure drawn from the world grammar.

``synthesize(index, seed)`` is a pure function: the same (index, seed) gives the same domain
data, byte for byte, on every run and machine with the same Faker release. A composed world
climbs the engine's default difficulty ladder, as every hand-written database world does.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from faker import Faker

from envfactory.synth.grammar import compose
from envfactory.synth.grammar.shape import Data


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
    }
    return Synthesised(domain, made.tags, made.rule_kinds)
