"""Realistic values for a schema property: Faker chosen by name, format and enum.

A property's own enum comes first, then its format (``email``, ``uuid``, ``date``...), then
its name (``firstName``, ``city``, ``price``), then the spec's example (its shape kept, its
digits varied). Every generator is deterministic for a world's seed (the engine seeds Faker).
"""

from __future__ import annotations

import re
from typing import Any

from envfactory.openapi.names import words
from envfactory.openapi.schema import Prop

_PEOPLE_WORDS = """
    user person customer member contact employee owner author client patient student teacher
    agent driver guest passenger player candidate applicant recipient sender subscriber
    account_holder manager admin staff worker doctor speaker attendee
"""
PEOPLE = frozenset(_PEOPLE_WORDS.split())
_ORGS_WORDS = """
    organization organisation company vendor merchant supplier partner team
"""
ORGS = frozenset(_ORGS_WORDS.split())
_PLACES_WORDS = """
    city location place site store branch office venue warehouse
"""
PLACES = frozenset(_PLACES_WORDS.split())

# Whole-name matches (words joined by "_") and last-word matches, to Faker providers.
_BY_NAME: dict[str, str] = {
    "first_name": "first_name",
    "given_name": "first_name",
    "firstname": "first_name",
    "last_name": "last_name",
    "family_name": "last_name",
    "lastname": "last_name",
    "surname": "last_name",
    "full_name": "name",
    "fullname": "name",
    "user_name": "user_name",
    "username": "user_name",
    "login": "user_name",
    "nickname": "user_name",
    "screen_name": "user_name",
    "country_code": "country_code",
    "postal_code": "postcode",
    "post_code": "postcode",
    "postcode": "postcode",
    "zip_code": "postcode",
    "zip": "postcode",
    "zipcode": "postcode",
    "company_name": "company",
    "job_title": "job",
    "street_address": "street_address",
    "address_line_1": "street_address",
    "address_line1": "street_address",
    "currency_code": "currency_code",
    "language_code": "language_code",
    "mac_address": "mac_address",
    "ip_address": "ipv4",
    "display_name": "name",
}
_BY_LAST: dict[str, str] = {
    "email": "email",
    "mail": "email",
    "phone": "phone_number",
    "mobile": "phone_number",
    "fax": "phone_number",
    "telephone": "phone_number",
    "address": "street_address",
    "street": "street_address",
    "city": "city",
    "town": "city",
    "country": "country",
    "state": "state",
    "province": "state",
    "currency": "currency_code",
    "language": "language_code",
    "lang": "language_code",
    "locale": "locale",
    "timezone": "timezone",
    "color": "color_name",
    "colour": "color_name",
    "url": "url",
    "uri": "url",
    "link": "url",
    "website": "url",
    "homepage": "url",
    "href": "url",
    "domain": "domain_name",
    "hostname": "domain_name",
    "host": "domain_name",
    "ip": "ipv4",
    "company": "company",
    "organization": "company",
    "slug": "slug",
    "title": "catch_phrase",
    "subject": "catch_phrase",
    "headline": "catch_phrase",
    "description": "sentence",
    "summary": "sentence",
    "notes": "sentence",
    "note": "sentence",
    "comment": "sentence",
    "message": "sentence",
    "text": "sentence",
    "body": "sentence",
    "content": "sentence",
    "bio": "sentence",
    "about": "sentence",
    "reason": "sentence",
    "job": "job",
    "occupation": "job",
    "password": "password",
    "secret": "md5",
    "token": "md5",
    "hash": "md5",
    "checksum": "md5",
    "uuid": "uuid4",
    "guid": "uuid4",
    "isbn": "isbn13",
    "iban": "iban",
    "filename": "file_name",
    "file": "file_name",
    "path": "file_path",
    "tag": "word",
    "keyword": "word",
    "category": "word",
    "label": "word",
}
_BY_FORMAT: dict[str, str] = {
    "email": "email",
    "uuid": "uuid4",
    "uri": "url",
    "url": "url",
    "uri-reference": "url",
    "hostname": "domain_name",
    "ipv4": "ipv4",
    "ipv6": "ipv6",
    "password": "password",
    "byte": "md5",
}
# Providers that take no arguments: a task can draw a fresh value from them.
NO_ARGS = frozenset(
    set(_BY_NAME.values()) | set(_BY_LAST.values()) | set(_BY_FORMAT.values()) | {"word", "name"}
)
_NUMBERS: dict[str, tuple[float, float]] = {
    "price": (1, 500),
    "amount": (1, 2000),
    "cost": (1, 500),
    "total": (10, 5000),
    "balance": (0, 10000),
    "fee": (1, 100),
    "rate": (0, 1),
    "percent": (0, 100),
    "percentage": (0, 100),
    "score": (0, 100),
    "rating": (1, 5),
    "age": (18, 90),
    "quantity": (1, 50),
    "count": (0, 200),
    "size": (1, 1000),
    "weight": (1, 100),
    "height": (1, 300),
    "width": (1, 300),
    "length": (1, 300),
    "duration": (1, 3600),
    "port": (1024, 65535),
    "year": (1990, 2026),
    "priority": (1, 5),
    "latitude": (-90, 90),
    "longitude": (-180, 180),
    "lat": (-90, 90),
    "lng": (-180, 180),
    "lon": (-180, 180),
}
_FUTURE = ("due", "expires", "expiry", "expiration", "end", "until", "deadline", "scheduled")
_TIME_WORDS = ("timestamp", "time", "at", "date", "created", "updated", "modified")


# Words that decide a provider wherever they stand in the name (``emailAddress``).
_ANYWHERE = {"email": "email", "phone": "phone_number", "url": "url", "website": "url"}
# Identifier-like names get identifier-like values.
_PATTERNS = {
    "version": "#.#",
    "number": "##########",
    "no": "########",
    "reference": "REF-#######",
    "ref": "REF-#######",
    "code": "######",
    "sku": "SKU-#####",
    "pin": "####",
}


def _name_provider(ws: list[str], noun: str) -> str | None:
    joined = "_".join(ws)
    if joined in _BY_NAME:
        return _BY_NAME[joined]
    for w in ws:
        if w in _ANYWHERE:
            return _ANYWHERE[w]
    if ws and ws[-1] == "name":
        owner = "_".join(ws[:-1]) or noun
        if owner in PEOPLE or (noun in PEOPLE and not ws[:-1]):
            return "name"
        if owner in ORGS or (noun in ORGS and not ws[:-1]):
            return "company"
        if owner in PLACES or (noun in PLACES and not ws[:-1]):
            return "city"
        return "catch_phrase" if not ws[:-1] or ws[:-1] == ["display"] else "word"
    return _BY_LAST.get(ws[-1]) if ws else None


def _date_range(ws: list[str]) -> tuple[int, int]:
    if any(w in _FUTURE for w in ws):
        return 1, 365
    if "birth" in ws or "dob" in ws:
        return -25000, -6600
    return -700, -1


def _number(p: Prop, ws: list[str]) -> dict[str, Any]:
    lo, hi = next((_NUMBERS[w] for w in reversed(ws) if w in _NUMBERS), (1, 100))
    if ws and ws[-1] in _TIME_WORDS and p.type == "integer" and (p.format or "") == "int64":
        lo, hi = 1_700_000_000, 1_780_000_000
    if p.example is not None and isinstance(p.example, (int, float)) and p.example > 0:
        lo, hi = p.example * 0.5, p.example * 2
    lo = max(lo, p.minimum) if p.minimum is not None else lo
    hi = min(hi, p.maximum) if p.maximum is not None else hi
    if hi < lo:
        hi = lo
    if p.type == "integer":
        return {"type": "integer", "min": int(lo), "max": max(int(lo), int(hi))}
    return {"type": "number", "min": round(lo, 2), "max": round(hi, 2), "decimals": 2}


def _example_pattern(example: str) -> str | None:
    """The shape of an example (``ABC-1234`` -> ``ABC-####``): its digits varied."""
    if not example or len(example) > 40 or " " in example or not re.search(r"\d", example):
        return None
    return re.sub(r"\d", "#", example.replace("#", "").replace("?", ""))


# The longest string with no known shape that is drawn as digits: a word would not fit.
SHORT = 4


def date_time_expr(offset: int = 0) -> str:
    """An ISO date-time in the past two years, spread by the row's index."""
    return (
        f"add_days(today, -((index * 37 + {offset}) % 700) - 1) + 'T' + "
        "str(10 + index % 9) + ':' + str(10 + (index * 7) % 50) + ':00Z'"
    )


def generator(p: Prop, noun: str) -> dict[str, Any]:
    """FieldSpec data for a property of a resource named ``noun``."""
    ws = words(p.name)
    if p.enum:
        kind = {"integer": "integer", "number": "number", "boolean": "boolean"}.get(p.type)
        return {"type": kind or "string", "choices": list(p.enum)}
    if p.type == "boolean":
        return {"type": "boolean"}
    if p.type in ("integer", "number"):
        return _number(p, ws)
    fmt = (p.format or "").lower()
    if fmt == "date" or (ws and ws[-1] in ("date", "day", "dob", "birthday") and not fmt):
        lo, hi = _date_range(ws)
        return {"type": "date", "min": lo, "max": hi}
    if fmt in ("date-time", "datetime") or (ws and ws[-1] in ("at", "timestamp", "time")):
        return {"expr": date_time_expr(len(p.name))}
    if ws and ws[-1] in ("status", "state"):  # a state with no enum: the usual life cycle
        return {"choices": ["active", "inactive", "pending", "archived"]}
    provider = _BY_FORMAT.get(fmt) or _name_provider(ws, noun)
    if provider is None and ws and ws[-1] in ("id", "ids", "uuid", "guid"):
        provider = "uuid4"
    if provider is None and ws and ws[-1] in _PATTERNS:
        return {"pattern": _PATTERNS[ws[-1]]}
    if provider is None and isinstance(p.example, str):
        pattern = _example_pattern(p.example)
        if pattern:
            return {"pattern": pattern}
        if " " in p.example:
            provider = "sentence"
    if provider is None and p.max_length is not None and p.max_length <= SHORT:
        return {"pattern": "#" * p.max_length}  # a two-digit month, a four-digit year
    if provider is None:
        provider = "word"
    out: dict[str, Any] = {"faker": provider}
    if provider == "sentence":
        out["faker_args"] = {"nb_words": 6}
    return out
