"""Vocabulary for synthesised worlds: who the organisation is and what its nouns are.

Occupations, company names, cities and colours come from Faker's providers (a well-kept
package with real word lists); the nouns each action pattern needs (what is booked, what is
requested, what is tracked) come from the short lists below, each with its own plural and
id prefix. A :class:`Theme` is drawn from a seeded ``random.Random``, so a world's names are
a function of its seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from faker import Faker
from faker.providers.job import Provider as Jobs


@dataclass(frozen=True)
class Noun:
    """A countable noun: ``word`` in instructions, ``slug`` in tool names, ``table`` the
    entity's name."""

    word: str
    plural: str

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.word.lower()).strip("_")

    @property
    def table(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.plural.lower()).strip("_")


def _nouns(text: str) -> tuple[Noun, ...]:
    """``"word/plural, ..."``; a bare word takes an ``s``."""
    out = []
    for item in text.split(","):
        word, _, plural = item.strip().partition("/")
        out.append(Noun(word, plural or word + "s"))
    return tuple(out)


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(","))


CLIENTS = _nouns(
    "customer, member, patient, client, tenant, student, subscriber, resident, patron, "
    "participant, applicant, policyholder, borrower, visitor, account holder"
)
RESOURCES = _nouns(
    "room, desk, court, studio, vehicle, bay, lane, booth, workshop, lab, boat, kiln, "
    "pitch, stall, cabin, pod, hall, track, van, bike, rig, darkroom, kitchen/kitchens, "
    "booth room, practice room, meeting room, charging point, loading dock, sauna, "
    "simulator, telescope, recording booth, editing suite, rehearsal space"
)
BOOKINGS = _nouns("booking, reservation, appointment, session, rental, hold, slot")
ACCOUNTS = _nouns("account, wallet, fund, budget line, deposit account, credit line, purse")
TRANSFERS = _nouns("transfer, movement, payment, allocation, remittance")
REQUESTS = _nouns(
    "expense claim, purchase request, refund request, grant application, budget request, "
    "reimbursement claim, travel request, equipment request, fee waiver, supply order"
)
TICKETS = _nouns(
    "ticket, work order, case, job, inspection, repair order, incident, service request, "
    "maintenance task, complaint, enquiry, callout"
)
TIERS = (
    ("standard", "silver", "gold"),
    ("basic", "plus", "premier"),
    ("bronze", "silver", "platinum"),
    ("regular", "priority", "elite"),
    ("essential", "advanced", "premium"),
)
CATEGORIES = _words(
    "travel, equipment, training, software, catering, postage, printing, furniture, "
    "consulting, events, maintenance, supplies, licences, shipping, marketing, repairs"
)
SUBJECTS = _words(
    "billing, access, delivery, noise, leak, heating, login, refund, schedule, damage, "
    "invoice, booking, parking, cleaning, lighting, signage, wifi, key card, payment, "
    "upgrade, survey, warranty, labelling"
)


@dataclass(frozen=True)
class Theme:
    """The names one world uses."""

    org: str  # "Carroll Inc"
    trade: str  # an occupation: "acupuncturist"
    client: Noun
    staff: Noun
    resource: Noun
    booking: Noun
    account: Noun
    transfer: Noun
    request: Noun
    ticket: Noun
    tiers: tuple[str, str, str]
    sites: tuple[str, ...]
    categories: tuple[str, ...]
    subjects: tuple[str, ...]
    mail_domain: str

    @property
    def top_tier(self) -> str:
        return self.tiers[-1]


def _trade(rng: random.Random) -> str:
    """An occupation as a noun phrase: "Engineer, civil (consulting)" -> "civil engineer"."""
    job = re.sub(r"\(.*?\)|/.*?(?=,|$)", "", rng.choice(sorted(Jobs.jobs)))
    head, _, kind = job.partition(",")
    words = [re.sub(r"[^a-z-]", "", w) for w in f"{kind} {head}".lower().split()][-3:]
    while words[0] in ("and", "of", "the", ""):
        words.pop(0)
    return " ".join(words)


def draw_theme(rng: random.Random) -> Theme:
    """A theme from ``rng``: an organisation of some trade, and its nouns."""
    fake = Faker("en_US")
    fake.seed_instance(rng.randrange(2**31))
    org = fake.company().replace(",", "")
    trade = _trade(rng)
    staff_word = trade if len(trade) <= 24 else " ".join(trade.split()[-2:])
    return Theme(
        org=org,
        trade=trade,
        client=rng.choice(CLIENTS),
        staff=Noun(staff_word, f"{staff_word}s"),
        resource=rng.choice(RESOURCES),
        booking=rng.choice(BOOKINGS),
        account=rng.choice(ACCOUNTS),
        transfer=rng.choice(TRANSFERS),
        request=rng.choice(REQUESTS),
        ticket=rng.choice(TICKETS),
        tiers=rng.choice(TIERS),
        sites=tuple(sorted({fake.city() for _ in range(4)})),
        categories=tuple(rng.sample(CATEGORIES, 6)),
        subjects=tuple(sorted(set(rng.sample(SUBJECTS, 8)))),
        mail_domain=re.sub(r"[^a-z]+", "", org.lower())[:18] + ".example",
    )
