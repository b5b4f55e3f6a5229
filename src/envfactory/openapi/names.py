"""Names: words from API identifiers, singular nouns, and identifiers safe everywhere.

An API names things ``displayName``, ``user-id``, ``$top`` or ``IdentityPools``; a world needs
names that are SQLite columns, expression variables and tool parameters at once, and words an
instruction can say ("display name", "identity pool").
"""

from __future__ import annotations

import hashlib
import keyword
import re
import string

_CAMEL = re.compile(r"[A-Z]+\d*(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")

# SQLite keywords (https://sqlite.org/lang_keywords.html): never a bare column or table name.
_SQL_WORDS = """
    abort action add after all alter always analyze and as asc attach autoincrement before begin
    between by cascade case cast check collate column commit conflict constraint create
    cross current current_date current_time current_timestamp database default deferrable
    deferred delete desc detach distinct do drop each else end escape except exclude exclusive
    exists explain fail filter first following for foreign from full generated glob group groups
    having if ignore immediate in index indexed initially inner insert instead intersect into is
    isnull join key last left like limit match materialized natural no not nothing notnull null
    nulls of offset on or order others outer over partition plan pragma preceding primary query
    raise range recursive references regexp reindex release rename replace restrict returning
    right rollback row rows savepoint select set table temp temporary then ties to transaction
    trigger unbounded union unique update using vacuum values view virtual when where window with
    without"""
SQL_KEYWORDS = frozenset(_SQL_WORDS.split())
# Names a tool's generated expressions use besides its parameters: a parameter with one of
# these names would hide it (``title`` or ``count`` are fine: no generated tool calls them).
RESERVED = frozenset(
    {"row", "item", "today", "found", "target", "parent", "created", "true", "false", "none"}
    | {"len", "lower", "str", "int", "all", "any"}
)

_IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "data": "data",
    "media": "media",
    "criteria": "criterion",
    "indices": "index",
    "matrices": "matrix",
    "vertices": "vertex",
    "analyses": "analysis",
    "statuses": "status",
    "aliases": "alias",
    "buses": "bus",
    "addresses": "address",
    "processes": "process",
    "businesses": "business",
    "quizzes": "quiz",
    "leaves": "leave",
    "movies": "movie",
    "cookies": "cookie",
    "apis": "api",
    "skus": "sku",
}
_INVARIANT = ("ss", "us", "is", "news", "series", "species", "data", "info", "metadata", "sms")


def words(name: str) -> list[str]:
    """``displayName`` / ``display_name`` / ``DisplayName`` -> ``['display', 'name']``."""
    out: list[str] = []
    for chunk in re.split(r"[^A-Za-z0-9]+", name):
        out += [w.lower() for w in _CAMEL.findall(chunk)]
    return out


def snake(name: str) -> str:
    return "_".join(words(name))


def human(name: str) -> str:
    """Words an instruction can say: ``displayName`` -> ``display name``."""
    return " ".join(words(name)) or name


def singular(word: str) -> str:
    """A simple English singular: ``categories`` -> ``category``, ``boxes`` -> ``box``."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith(_INVARIANT) or len(w) <= 3:
        return w
    if w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "zzes", "sses")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def article(phrase: str) -> str:
    """``a user``, ``an integration``."""
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def plural(word: str) -> str:
    w = word.lower()
    for many, one in _IRREGULAR.items():
        if one == w:
            return many
    if w.endswith(("s", "x", "z", "ch", "sh")):
        return w + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return w[:-1] + "ies"
    return w + "s"


def identifier(name: str, taken: set[str] | None = None) -> str:
    """A column or table name, safe in SQL and as a key expressions read (``row.name``): the
    API's own name when it is safe (``displayName``), else a cleaned one (``user-id`` ->
    ``user_id``, ``$top`` -> ``top``, ``order`` -> ``order_``). With ``taken`` (lower-cased
    names already used), a name is made unique: SQLite columns are case-insensitive."""
    base = name if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) else snake(name)
    if not base or not base[0].isalpha():
        base = "f_" + base if base else "field"
    if len(base) > 48:
        base = base[:40] + "_" + short_hash(name, 6)
    low = base.lower()
    if low in SQL_KEYWORDS or keyword.iskeyword(base) or low == "id":
        base += "_"
    if taken is not None:
        candidate, n = base, 2
        while candidate.lower() in taken:
            candidate = f"{base}{n}"
            n += 1
        taken.add(candidate.lower())
        base = candidate
    return base


def param_name(name: str, taken: set[str]) -> str:
    """A tool parameter name: the API's own when it is a safe Python name (SQL keywords are
    fine here), else a cleaned one; unique within the tool."""
    base = name if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) else snake(name)
    if not base or not base[0].isalpha():
        base = "p_" + base if base else "param"
    if keyword.iskeyword(base) or base.lower() in RESERVED:
        base += "_"
    candidate, n = base, 2
    while candidate.lower() in taken:
        candidate = f"{base}{n}"
        n += 1
    taken.add(candidate.lower())
    return candidate


def tool_name(operation_id: str, taken: set[str]) -> str:
    """A tool name from an operation id: snake_case, at most 64 characters, unique."""
    base = snake(operation_id) or "call"
    if not base[0].isalpha():
        base = "op_" + base
    if len(base) > 60:
        base = base[:52] + "_" + short_hash(operation_id, 7)
    candidate, n = base, 2
    while candidate in taken:
        candidate = f"{base}_{n}"
        n += 1
    taken.add(candidate)
    return candidate


def short_hash(text: str, n: int = 8) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()[:n]


def id_prefix(noun: str, taken: set[str]) -> str:
    """Three capital letters for ids (``USR``-00001): consonants of the noun first."""
    letters = "".join(c for c in "".join(words(noun)).upper() if c.isalpha()) or "ROW"
    consonants = letters[0] + "".join(c for c in letters[1:] if c not in "AEIOU")
    options = [(consonants + "XX")[:3], (letters + "XX")[:3]]
    options += [letters[0] + a + b for a in string.ascii_uppercase for b in string.ascii_uppercase]
    prefix = next(c for c in options if c not in taken)
    taken.add(prefix)
    return prefix


def world_id(source: str) -> str:
    """A registry id from a document's path: ``azure.com/mysql-Keys.json`` ->
    ``azure-com-mysql-keys``."""
    stem = re.sub(r"\.(json|ya?ml)$", "", source, flags=re.I)
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "api"
    if not slug[0].isalpha():
        slug = "api-" + slug
    if len(slug) > 60:
        slug = slug[:51].rstrip("-") + "-" + short_hash(stem)
    return slug
