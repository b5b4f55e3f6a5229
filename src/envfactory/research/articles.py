"""Articles: an entity's facts (as one source tells them) rendered into paragraphs of prose.

Each article records where it states each fact (the offset of the line that says it) and the
surface form it uses for the entity a relation points at (a name or an alias), so a question's
gold plan knows which page to open and what to search next.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from envfactory.research import names
from envfactory.research.graph import Entity, Facts, Graph

FAN_NOTE = (
    "Note: this page comes from an unverified fan wiki. It is community-edited, has not been "
    "fact-checked, and may contradict reliable sources."
)
ALIAS_SHARE = 0.35  # of mentions of a person with an alias that use the alias


@dataclass
class Article:
    title: str
    lead: str
    text: str = ""
    facts: dict[str, tuple[int, str]] = field(default_factory=dict)  # key -> (offset, surface)
    _lines: list[str] = field(default_factory=list)
    _size: int = 0

    def line(self, text: str, **facts: str) -> None:
        """Add a line; ``facts`` maps the fact keys it states to the surface they use."""
        for key, surface in facts.items():
            self.facts[key] = (self._size, surface)
        self._lines.append(text)
        self._size += len(text) + 1

    def para(self, *sentences: str, **facts: str) -> None:
        if self._lines:
            self.line("")
        self.line(" ".join(s for s in sentences if s), **facts)

    def done(self) -> Article:
        self.text = "\n".join(self._lines)
        return self


def pretty_date(iso: str, rng: random.Random) -> str:
    day = dt.date.fromisoformat(iso)
    if rng.random() < 0.5:
        return f"{day.day} {day:%B} {day.year}"
    return f"{day:%B} {day.day}, {day.year}"


class Renderer:
    """Renders articles of one graph; ``births`` and ``seats`` give the reverse relations."""

    def __init__(self, graph: Graph, rng: random.Random) -> None:
        self.g = graph
        self.rng = rng
        self.births: dict[int, list[int]] = {}
        self.seats: dict[int, list[int]] = {}
        for e in graph.entities:
            if e.kind == "person":
                self.births.setdefault(e.true.rel["birthplace"], []).append(e.id)
            elif e.kind == "org":
                self.seats.setdefault(e.true.rel["hq"], []).append(e.id)

    def ref(self, eid: int) -> str:
        """How an article names entity ``eid``: its name, or sometimes an alias."""
        e = self.g.entities[eid]
        if e.aliases and self.rng.random() < ALIAS_SHARE:
            return e.aliases[0]
        return e.name

    def some(self, kind: str) -> str:
        return self.g.entities[self.rng.choice(self.g.by_kind[kind])].name

    def render(self, e: Entity, fan: bool) -> Article:
        f = self.g.facts(e.id, fan)
        art: Article = getattr(self, f"_{e.kind}")(e, f)
        if fan:
            art.lead = f"[fan wiki] {art.lead}"
            art.facts = {k: (o + len(FAN_NOTE) + 2, s) for k, (o, s) in art.facts.items()}
            art._lines[:0] = [FAN_NOTE, ""]
        return art.done()

    def _person(self, e: Entity, f: Facts) -> Article:
        first, last = e.name.split(" ", 1)[0], e.name.rsplit(" ", 1)[-1]
        year, job = f.attr["birth_year"], f.attr["occupation"]
        aka = f", also known as {e.aliases[0]}," if e.aliases else ""
        lead = f"{e.name} (born {year}){aka} is a {job}."
        a = Article(e.name, lead)
        a.line(lead, birth_year=str(year))
        place = self.ref(f.rel["birthplace"])
        a.para(
            f"{first} was born in {place} in {year}.",
            f"As a child {first} was drawn to the {self.rng.choice(names.NOUNS).lower()}s of "
            f"the old quarter and later studied with {self.some('person')}.",
            birthplace=place,
        )
        org = self.ref(f.rel["member_of"])
        a.para(
            f"{last} was a member of {org}.",
            f"Colleagues there remembered {last} as a careful {job} who corresponded for years "
            f"with {self.some('person')} and travelled often to {self.some('city')}.",
            member_of=org,
        )
        a.para(
            f"Later accounts of {last}'s life, including {self.some('work')}, describe a "
            f"{self.rng.choice(names.ADJECTIVES).lower()} temperament and a lasting interest in "
            f"{self.rng.choice(names.FIELDS).lower()}."
        )
        return a

    def _org(self, e: Entity, f: Facts) -> Article:
        founded = f.attr["founded"]
        lead = f"{e.name} is an organisation founded in {founded}."
        a = Article(e.name, lead)
        a.line(lead, founded=str(founded))
        founder, hq = self.ref(f.rel["founder"]), self.ref(f.rel["hq"])
        a.para(
            f"{e.name} was founded in {founded} by {founder}.",
            f"It is headquartered in {hq}.",
            founder=founder,
            hq=hq,
        )
        a.para("History")
        span = max(1, 2024 - int(founded))
        for _ in range(self.rng.randint(2, 10)):
            year = int(founded) + self.rng.randrange(span)
            deed = self.rng.choice(
                (
                    f"opened a reading room in {self.some('city')}",
                    f"hosted a delegation from {self.some('org')}",
                    f"awarded its annual medal to {self.some('person')}",
                    f"published a survey of {self.rng.choice(names.FIELDS).lower()}",
                )
            )
            a.line(f"In {year}, the organisation {deed}.")
        a.para("Leadership", directors="served as director")
        for who, start, end in f.directors:
            a.line(f"{self.ref(who)} served as director from {start} to {end}.")
        a.para("Members")
        a.line(f"The organisation lists {len(f.roster)} members:", roster="")
        for who, year in f.roster:
            a.line(f"- {self.g.entities[who].name} (born {year})")
        a.line("", roster_end="")
        return a

    def _city(self, e: Entity, f: Facts) -> Article:
        region, people = self.ref(f.rel["region"]), f.attr["population"]
        lead = f"{e.name} is a city in {region} with a population of {int(people):,}."
        a = Article(e.name, lead)
        a.line(lead, region=region, population=str(people))
        a.para(
            f"The town grew around a {self.rng.choice(names.NOUNS).lower()} on the old road to "
            f"{self.some('city')}, and its market has been held on the same square for "
            f"{self.rng.randint(2, 9)} centuries."
        )
        born = [self.g.entities[p].name for p in self.births.get(e.id, [])[:3]]
        seats = [self.g.entities[o].name for o in self.seats.get(e.id, [])[:3]]
        if f is e.true and born:
            a.para(f"People born in {e.name} include {', '.join(born)}.")
        if f is e.true and seats:
            a.para(f"Organisations headquartered here include {', '.join(seats)}.")
        return a

    def _region(self, e: Entity, f: Facts) -> Article:
        capital, area = self.ref(f.rel["capital"]), int(f.attr["area"])
        lead = f"{e.name} is a region of {area:,} square kilometres whose capital is {capital}."
        a = Article(e.name, lead)
        a.line(lead, capital=capital, area=str(area))
        a.para(f"Its rivers drain toward {self.some('city')} and the coast beyond.")
        return a

    def _work(self, e: Entity, f: Facts) -> Article:
        author, year, genre = self.ref(f.rel["author"]), f.attr["year"], f.attr["genre"]
        lead = f"{e.name} is a {genre} by {author}, first published in {year}."
        a = Article(e.name, lead)
        a.line(lead, author=author, year=str(year))
        publisher = self.ref(f.rel["publisher"])
        a.para(
            f"The first edition was published by {publisher}.",
            f"Reviewers compared it with {self.some('work')}, and a later edition added a "
            f"preface by {self.some('person')}.",
            publisher=publisher,
        )
        return a

    def _event(self, e: Entity, f: Facts) -> Article:
        venue, when = self.ref(f.rel["venue"]), pretty_date(str(f.attr["date"]), self.rng)
        lead = f"The {e.name} was held on {when} in {venue}."
        a = Article(e.name, lead)
        a.line(lead, date=str(f.attr["date"]), venue=venue)
        organiser = self.ref(f.rel["organiser"])
        a.para(
            f"It was organised by {organiser} and drew {int(f.attr['attendance']):,} attendees.",
            f"Speakers included {self.some('person')}.",
            organiser=organiser,
            attendance=str(f.attr["attendance"]),
        )
        return a
