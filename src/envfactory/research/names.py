"""Fictional names: Faker's name and place lists, bent so no real person or town is named."""

from __future__ import annotations

import random
from collections.abc import Callable

from faker.providers.address.en_US import Provider as _Address
from faker.providers.person.en_US import Provider as _Person

FIRST: list[str] = sorted(_Person.first_names)
LAST: list[str] = sorted(_Person.last_names)
CITY_PREFIXES: list[str] = list(_Address.city_prefixes)
CITY_SUFFIXES: list[str] = list(_Address.city_suffixes)

SURNAME_ENDINGS = (
    "ardt", "eval", "orne", "wyn", "ovic", "ascu", "elle", "andor", "quist", "mere",
    "otti", "ens", "arro", "ivar", "usk", "enby", "oran", "idge", "ault", "essa",
)  # fmt: skip
NICKNAMES = (
    "Red", "Doc", "Sunny", "Ace", "Skip", "Dusty", "Bunny", "Chip", "Lefty", "Moss",
    "Pip", "Rusty", "Sparrow", "Tiny", "Birdie", "Flint", "Jinx", "Kit", "Mack", "Sage",
)  # fmt: skip
REGION_SUFFIXES = ("Reach", "Province", "Vale", "Marches", "Downs", "Coast", "Highlands")
ORG_TYPES = ("Institute", "Society", "Guild", "Foundation", "Academy", "Press", "Trust", "League")
FIELDS = (
    "Cartography", "Acoustics", "Botany", "Glassmaking", "Navigation", "Folk Music",
    "Astronomy", "Printing", "Ceramics", "Hydrology", "Textiles", "Clockmaking",
)  # fmt: skip
OCCUPATIONS = (
    "cartographer", "engineer", "novelist", "botanist", "composer", "architect", "surveyor",
    "physician", "painter", "historian", "chemist", "sculptor", "economist", "photographer",
)  # fmt: skip
GENRES = ("novel", "memoir", "atlas", "treatise", "poetry collection", "play", "field guide")
ADJECTIVES = (
    "Silent", "Copper", "Hollow", "Amber", "Distant", "Broken", "Velvet", "Northern", "Quiet",
    "Crimson", "Winter", "Hidden", "Iron", "Pale", "Golden", "Salt", "Restless", "Shallow",
)  # fmt: skip
NOUNS = (
    "Harbor", "Lantern", "Orchard", "Compass", "Tide", "Ledger", "Meridian", "Furnace",
    "Archive", "Bellfry", "Causeway", "Garden", "Mirror", "Quarry", "Signal", "Threshold",
)  # fmt: skip
EVENT_TYPES = ("Exhibition", "Congress", "Festival", "Summit", "Regatta", "Symposium", "Fair")


def _root(rng: random.Random, names: list[str], lo: int, hi: int) -> str:
    return rng.choice(names)[: rng.randint(lo, hi)]


def surname(rng: random.Random) -> str:
    return (_root(rng, LAST, 3, 5) + rng.choice(SURNAME_ENDINGS)).capitalize()


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {surname(rng)}"


def city(rng: random.Random) -> str:
    base = (_root(rng, FIRST, 3, 5) + rng.choice(CITY_SUFFIXES)).capitalize()
    return f"{rng.choice(CITY_PREFIXES)} {base}" if rng.random() < 0.35 else base


def region(rng: random.Random) -> str:
    base = (_root(rng, LAST, 4, 6) + rng.choice(("ia", "ora", "and", "mark"))).capitalize()
    return f"{base} {rng.choice(REGION_SUFFIXES)}"


def org(rng: random.Random) -> str:
    name = f"{surname(rng)} {rng.choice(ORG_TYPES)}"
    return f"{name} of {rng.choice(FIELDS)}" if rng.random() < 0.5 else name


def work(rng: random.Random) -> str:
    title = f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    return f"{title} of {city(rng)}" if rng.random() < 0.7 else title


def event(rng: random.Random, year: int) -> str:
    return f"{year} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.choice(EVENT_TYPES)}"


def twin(rng: random.Random, kind: str, name: str) -> str:
    """A near-duplicate of ``name``: every word of it and one more."""
    if kind == "person":
        first, rest = name.split(" ", 1)
        return f"{first} {rng.choice(FIRST)} {rest}"
    if kind == "org":
        return f"{rng.choice(('New', 'Royal', 'Northern', 'Free'))} {name}"
    if kind == "work":
        return f"{name} {rng.choice(('Revisited', 'Returns', 'Abridged'))}"
    return f"{name} {rng.choice(('Heights', 'Junction', 'Mills'))}"


class Namer:
    """Draws names no other entity has (names and aliases share one namespace)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, draw: Callable[[], str], tries: int = 60) -> str | None:
        for _ in range(tries):
            name = draw()
            if name.lower() not in self.used:
                self.used.add(name.lower())
                return name
        return None
