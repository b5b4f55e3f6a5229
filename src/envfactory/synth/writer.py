"""Model-written domains: a language model proposes a domain file from a seed name; the
engine's compile errors and the audit's failed checks go back to it for repair, a bounded
number of rounds.

The model is any OpenAI-compatible chat endpoint, or the embedded model served on loopback by
``envfactory serve-model``'s server. With ``constrained``, each request asks for JSON under
the domain schema (``response_format: json_schema``), for endpoints that support it; without
it, the reply is read as YAML (a fenced block, or the whole reply). Every round of every seed
ends as one stage: ``no_reply`` (the endpoint failed: an infrastructure fault, retried by
the client and recorded, never scored), ``unparsable``, ``compile_error``, ``no_tasks``,
``audit_failure`` or ``passed``. The yield per round is the share of seeds passed by then.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml
from pydantic import BaseModel, Field

from envfactory.contract.errors import DomainError, SynthesisError
from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.quality.batch import audit_at_scale, empty_cell
from envfactory.registry.table import register_compiled
from envfactory.registry.worldfile import save_world
from envfactory.synth.environment import SynthEnvironment
from envfactory.synth.vocab import draw_theme

STAGES = ("no_reply", "unparsable", "compile_error", "no_tasks", "audit_failure", "passed")

EXAMPLE = """\
id: tiny-library
name: Tiny library
description: Members borrow books.
persona: You are the librarian's assistant.
entities:
  members:
    label: member
    id_prefix: MEM
    count: 40
    fields:
      name: {faker: name}
      email: {expr: "slug(row.name) + '@library.example'", unique: true}
    refs:
      - text: "{row.name} ({row.email})"
        unique: [email]
        lookup: [{tool: find_member, args: {email: "=row.email"}}]
  books:
    label: book
    id_prefix: BK
    count: 300
    fields:
      title: {faker: catch_phrase, unique: true}
      holder_id: {type: ref, ref: members, null_rate: 0.5}
actions:
  - name: find_member
    kind: read
    description: Find a member by e-mail.
    params: {email: {description: "The member's e-mail."}}
    load: {found: {rows: members, where: {email: "=email"}, limit: 1}}
    require:
      - {check: "len(found) == 1", error: "No member has the e-mail {email}.", code: not_found}
    returns: "=found[0]"
  - name: list_loans
    kind: read
    description: Books a member holds.
    params: {member_id: {description: "Member id, like MEM-00001."}}
    load: {books: {rows: books, where: {holder_id: "=member_id"}}}
    returns: "=books"
  - name: return_book
    kind: write
    description: Record that a book came back.
    params: {book_id: {description: "Book id, like BK-00001."}}
    load: {book: "books[book_id]"}
    require: [{check: "book.holder_id is not None", error: "{book.title} is not on loan."}]
    effects: [{update: book, set: {holder_id: null}}]
goals:
  - id: return_one
    level: 1
    anchor: {entity: books, where: "row.holder_id is not None"}
    let: {member: "members[anchor.holder_id]"}
    plan:
      - {tool: list_loans, args: {member_id: "=member.id"}}
      - {tool: return_book, args: {book_id: "=anchor.id"}}
    instruction: ["{ref:member} brought back '{anchor.title}'. Please record it."]
"""

SYSTEM = (
    "You write domain files for envfactory, a factory of tool-use worlds. A domain file is "
    "YAML with: id, name, description, persona, entities (tables with generated fields and "
    "refs), actions (read and write tools with params, load, require, effects, returns) and "
    "goals (an anchor row, let bindings, a gold plan of tool calls, instructions), with goals "
    "at levels 1 to 4. Expressions are Python expressions over rows. Here is a complete, "
    "valid example:\n\n" + EXAMPLE
)


@dataclass(frozen=True)
class WriterSettings:
    """The endpoint, how long a reply may be, how many repair rounds, how worlds are audited."""

    base_url: str
    model: str
    rounds: int = 3
    max_tokens: int = 1024
    temperature: float = 0.7
    constrained: bool = False
    audit_n: int = 60
    diversity: int = 100
    timeout_s: float = 600.0


class SeedResult(BaseModel):
    """What the model made of one seed name, round by round."""

    seed: str
    stages: list[str] = Field(description="the stage each round ended at")
    details: list[str] = Field(default_factory=list, description="what went back to the model")
    env_id: str | None = None
    passed: bool = False


class WriterReport(BaseModel):
    generated: int = Field(description="seed names the model wrote domains for")
    passed_audit: int
    seconds: float
    model: str
    rounds: int
    constrained: bool
    yield_per_round: list[float] = Field(description="share of seeds passed by each round")
    stages_per_round: list[dict[str, int]]
    results: list[SeedResult]


def seed_names(n: int, seed: int = 0) -> list[str]:
    """``n`` seed names: an organisation, its trade, and whom it serves."""
    out = []
    for i in range(n):
        t = draw_theme(random.Random(f"envfactory-writer/{seed}/{i}"))
        out.append(f"{t.org}, {t.trade} services for {t.client.plural}")
    return out


def _slug(text: str) -> str:
    return "written-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].rstrip("-")


def read_reply(text: str) -> dict[str, Any]:
    """The domain data in a reply: a fenced block, or the whole reply, as YAML (JSON is
    YAML). Raises ValueError when there is none."""
    fenced = re.search(r"```(?:ya?ml|json)?\s*\n(.*?)```", text, re.S)
    body = fenced.group(1) if fenced else text
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ValueError(f"the reply is not YAML: {str(exc)[:300]}") from None
    if not isinstance(data, dict):
        raise ValueError("the reply is not a YAML mapping with the domain's keys")
    return data


class _Chat:
    def __init__(self, s: WriterSettings) -> None:
        self.s = s
        self.http = httpx.Client(base_url=s.base_url, timeout=s.timeout_s)

    def reply(self, messages: list[dict[str, str]]) -> str | None:
        """The model's reply, or None when the endpoint failed after a retry."""
        body: dict[str, Any] = {
            "model": self.s.model,
            "messages": messages,
            "max_tokens": self.s.max_tokens,
            "temperature": self.s.temperature,
        }
        if self.s.constrained:
            schema = DomainSpec.model_json_schema()
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "domain", "schema": schema},
            }
        for _ in range(2):
            try:
                r = self.http.post("/chat/completions", json=body)
                if r.status_code == 200:
                    return str(r.json()["choices"][0]["message"].get("content") or "")
            except httpx.HTTPError:
                continue
        return None


def _judge(text: str, seed: str, s: WriterSettings) -> tuple[str, str, dict[str, Any] | None]:
    """(stage, what to tell the model, the domain data when it compiled)."""
    try:
        data = read_reply(text)
    except ValueError as exc:
        return "unparsable", str(exc), None
    data["id"] = _slug(seed)
    try:
        spec = parse_domain(data, data["id"])
        env = SynthEnvironment(spec)
        register_compiled(spec.id, lambda seed=0, scale=1.0: SynthEnvironment(spec, seed=seed))
        if why := empty_cell(env):
            return "no_tasks", why, data
        report, _ = audit_at_scale(env, s.audit_n, s.diversity)
    except DomainError as exc:
        return "compile_error", str(exc)[:1500], None
    except SynthesisError as exc:
        return "no_tasks", str(exc)[:1500], data
    except Exception as exc:  # the model's data reached a corner the engine does not guard
        return "compile_error", f"{type(exc).__name__}: {exc}"[:1500], None
    if not report.passed:
        return "audit_failure", "; ".join(report.problems[:5]), data
    return "passed", "", data


def write_one(chat: _Chat, seed: str, s: WriterSettings, out: Path | None) -> SeedResult:
    """Up to ``s.rounds`` rounds of writing and repairing one seed's domain."""
    result = SeedResult(seed=seed, stages=[])
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Write the domain file for: {seed}. Reply with the YAML."},
    ]
    for _ in range(s.rounds):
        text = chat.reply(messages)
        if text is None:
            result.stages.append("no_reply")
            result.details.append("the endpoint did not answer")
            continue
        stage, detail, data = _judge(text, seed, s)
        result.stages.append(stage)
        result.details.append(detail[:500])
        if stage == "passed" and data is not None:
            result.passed, result.env_id = True, data["id"]
            if out is not None:
                meta = {"kind": "synth", "source": f"writer/{s.model}", "title": seed}
                save_world(out, data, meta | {"writer": s.model, "rounds": len(result.stages)})
            break
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"The engine refused it: {detail}\nReply with the "
             "corrected file, the whole YAML."},
        ]  # fmt: skip
    return result


def write_domains(
    seeds: list[str], s: WriterSettings, out: Path | None = None, progress: Any = None
) -> WriterReport:
    """Have the model write (and repair) a domain for each seed name."""
    started = time.perf_counter()
    chat = _Chat(s)
    results = []
    try:
        for seed in seeds:
            results.append(write_one(chat, seed, s, out))
            if progress is not None:
                progress(results[-1].passed)
    finally:
        chat.http.close()
    per_round = []
    passed_by = []
    for r in range(s.rounds):
        per_round.append(dict(Counter(x.stages[r] for x in results if len(x.stages) > r)))
        done = sum(1 for x in results if x.passed and len(x.stages) <= r + 1)
        passed_by.append(round(done / len(results), 4) if results else 0.0)
    return WriterReport(
        generated=len(results),
        passed_audit=sum(x.passed for x in results),
        seconds=round(time.perf_counter() - started, 2),
        model=s.model,
        rounds=s.rounds,
        constrained=s.constrained,
        yield_per_round=passed_by,
        stages_per_round=per_round,
        results=results,
    )
