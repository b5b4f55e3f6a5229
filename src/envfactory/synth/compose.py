"""Compose a domain from parts: a theme, the people archetype, and some action patterns.

``synthesize(index, seed)`` is a pure function: the same (index, seed) gives the same domain
data, byte for byte, on every run and machine.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from envfactory.synth.builders import Data
from envfactory.synth.parts import Part, approvals, bookings, ledger, people, workflow
from envfactory.synth.vocab import Theme, draw_theme

PartMaker = Callable[[Theme, random.Random], Part]

#: The action patterns a world draws from (the people archetype is always there).
PATTERNS: dict[str, PartMaker] = {
    "bookings": bookings,
    "ledger": ledger,
    "approvals": approvals,
    "workflow": workflow,
}
MIN_PATTERNS = 2

#: The ladder rises by the writes a task needs, each a chance to go wrong: the starter level
#: (ids given, one call), then two sub-goals from level 1 on, harder goals, look-alike rows
#: and facts the user holds back, three sub-goals, and at the top four harder ones over many
#: rows. (With the engine's default ladder, levels 0 and 1 both draw one-write goals, and a
#: noisy agent does as well on either.)
LADDER: list[Data] = [
    {"width": 2, "indirection": 1, "goal_levels": [1, 2]},
    {"width": 2, "indirection": 1, "distractors": 1, "held_back": 0.3, "goal_levels": [2, 3]},
    {"width": 2, "indirection": 2, "distractors": 1, "held_back": 0.5, "goal_levels": [2, 3, 4]},
    {"width": 3, "indirection": 2, "distractors": 2, "held_back": 0.6, "goal_levels": [2, 3, 4]},
    {"width": 4, "indirection": 2, "distractors": 2, "held_back": 0.7, "goal_levels": [3, 4]},
]


def world_id(index: int, theme: Theme) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", f"{theme.org} {theme.trade}".lower()).strip("-")
    return f"synth-{index:05d}-{words[:32].rstrip('-')}"


@dataclass(frozen=True)
class Synthesised:
    """One composed world: its domain data, and the patterns it was made of."""

    domain: Data
    patterns: tuple[str, ...]
    theme: Theme


def synthesize(index: int, seed: int = 0) -> Synthesised:
    """Synthesised world ``index`` of the library ``seed``."""
    rng = random.Random(f"envfactory-synth/{seed}/{index}")
    theme = draw_theme(rng)
    names = sorted(PATTERNS)
    chosen = sorted(rng.sample(names, rng.randint(min(MIN_PATTERNS, len(names)), len(names))))
    parts = [people(theme, rng)] + [PATTERNS[name](theme, rng) for name in chosen]
    merged = Part()
    for part in parts:
        merged.entities.update(part.entities)
        merged.actions += part.actions
        merged.rules += part.rules
        merged.goals += part.goals
    what = ", ".join(chosen)
    domain = {
        "id": world_id(index, theme),
        "name": f"{theme.org}, {theme.trade} services",
        "description": f"A synthesised world: the {theme.client.plural} of {theme.org}, a "
        f"firm of {theme.trade}s, and its {what}.",
        "persona": f"You are the assistant at {theme.org}, serving its {theme.client.plural}.",
        "today": "2026-06-01",
        "entities": merged.entities,
        "actions": merged.actions,
        "rules": merged.rules,
        "goals": merged.goals,
        "ladder": LADDER,
    }
    return Synthesised(domain, tuple(chosen), theme)
