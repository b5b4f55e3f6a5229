"""Structural diversity: a world's structure survives renaming, rewording and new constants,
and changes when its structure does."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from envfactory.contract.errors import DomainError
from envfactory.domain.expr import FUNCTIONS
from envfactory.domain.loader import builtin_domain_files, load_domain, parse_domain
from envfactory.openapi.compile import compile_document
from envfactory.registry.worldfile import FORMAT
from envfactory.synth import diversity
from envfactory.synth.compose import synthesize
from envfactory.synth.structure import COMPONENTS, canonical_lifecycle, expr_shape, structure

HAND = builtin_domain_files()
RESERVED = set(FUNCTIONS) | {"row", "today", "item", "anchor", "result", "id"}
RESERVED |= {"True", "False", "None", "and", "or", "not", "in", "is", "if", "else", "for"}
NAMED = {"entities", "fields", "params", "load", "let", "set", "where", "args", "match"}
NAMED |= {"scope", "facts"}
SCHEMA = {"type", "kind", "code", "format", "faker", "items", "handler", "handlers", "ladder"}
SCHEMA |= {"starter", "rubric", "today", "id_prefix", "level"}
TEXT = {"description", "persona", "error", "text", "parent_text", "label"}
NUMBERS = {"count", "min", "max", "weights", "minimum", "maximum", "max_length", "limit"}
NUMBERS |= {"null_rate", "twin_rate", "decimals", "between", "max_items"}
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _data(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def _identifiers(d: dict[str, Any]) -> set[str]:
    """Every name a domain gives: entities, fields, tools, params, bindings, rules, goals,
    and the string values of choices and enums (its states)."""
    names = set(d["entities"])
    for e in d["entities"].values():
        names |= set(e["fields"])
        for f in e["fields"].values():
            names |= {str(v) for v in f.get("choices") or [] if isinstance(v, str)}
    for a in d["actions"]:
        names |= {a["name"], *a.get("params", {}), *a.get("load", {})}
        names |= {e["name"] for e in a.get("effects", []) if e.get("name")}
        for p in a.get("params", {}).values():
            names |= {v for v in p.get("enum") or [] if isinstance(v, str)}
    names |= {r["id"] for r in d.get("rules", [])}
    for g in d["goals"]:
        names |= {g["id"], *g.get("let", {})}
    return {n for n in names if IDENT.match(n) and n not in RESERVED}


def disguise(domain: dict[str, Any]) -> dict[str, Any]:
    """``domain`` with every name replaced (consistently, in a shuffled order), every text
    reworded, every number changed, and its entities, tools, rules and goals reversed."""
    names = _identifiers(domain)
    new = {n: "q" + hashlib.sha1(n.encode()).hexdigest()[:8] for n in names}

    def rename(s: str) -> str:
        return re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: new.get(m[0], m[0]), s)

    def number(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return v
        return v / 2 if 0 < v < 1 else v * 2 + 1

    def reword(s: str) -> str:
        holes = [rename(h) for h in re.findall(r"\{[^{}]*\}", s)]
        return "In other words: " + " then ".join(holes or ["nothing to fill"])

    def walk(obj: Any, key: str) -> Any:
        if key in SCHEMA:
            return obj
        if key == "per":  # its counts say one row or many per parent: structure
            return {**obj, "entity": rename(obj["entity"])}
        if key in TEXT and isinstance(obj, str):
            return reword(obj)
        if key == "instruction":
            return [reword(s) for s in obj]
        if key in NUMBERS:
            return [number(v) for v in obj] if isinstance(obj, list) else number(obj)
        if key == "choices":
            return [number(v) if isinstance(v, int | float) else walk(v, "") for v in obj]
        if isinstance(obj, dict) and isinstance(obj.get("block"), int) and "count" in obj:
            rest = walk({k: v for k, v in obj.items() if k not in ("block", "count")}, key)
            return {**rest, "block": obj["block"], "count": obj["count"] * 3}  # whole blocks
        if isinstance(obj, dict):
            if key in NAMED:  # keys are names, values are not schema
                return {rename(k): walk(v, "") for k, v in obj.items()}
            return {k: walk(v, k) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v, key) for v in obj]
        if isinstance(obj, str):
            return re.sub(r"\b\d+\b", lambda m: str(int(m[0]) * 3 + 1), rename(obj))
        return obj

    out: dict[str, Any] = walk(copy.deepcopy(domain), "")
    out["id"], out["name"] = "disguised", "Another world entirely"
    out["entities"] = dict(reversed(out["entities"].items()))
    for key in ("actions", "rules", "goals"):
        out[key] = list(reversed(out.get(key, [])))
    return out


@pytest.mark.parametrize("path", HAND, ids=[p.stem for p in HAND])
def test_renaming_rewording_and_constants_leave_the_structure(path: Path) -> None:
    data = _data(path)
    disguised = disguise(data)
    parse_domain(disguised)  # still a valid domain
    assert not set(disguised["entities"]) & set(data["entities"])
    assert not {a["name"] for a in disguised["actions"]} & {a["name"] for a in data["actions"]}
    assert json.dumps(disguised, default=str) != json.dumps(data, default=str)
    assert structure(disguised) == structure(load_domain(path))


def test_a_synthesised_world_keeps_its_structure_when_disguised() -> None:
    for i in range(3):
        domain = synthesize(i).domain
        assert structure(disguise(domain)).digest == structure(domain).digest


def test_an_openapi_world_keeps_its_structure_when_disguised() -> None:
    spec = Path(__file__).resolve().parent.parent / "openapi" / "specs" / "clinic-oas3.yaml"
    domain = compile_document(yaml.safe_load(spec.read_text()), str(spec))
    assert structure(disguise(domain)).digest == structure(domain).digest


def test_the_hand_written_domains_are_twelve_structures() -> None:
    found = [structure(load_domain(p)) for p in HAND]
    assert len(HAND) == 12 and len({s.digest for s in found}) == 12
    figures = diversity.measure_structure(found)
    assert figures["distinct_structures"] == 12 and figures["distinct_ratio"] == 1.0
    assert figures["constraint_kinds"]["prior_call:match"] == 12


TINY: dict[str, Any] = yaml.safe_load(
    """
id: tiny
name: Tiny desk
description: Tickets move through states.
persona: You are the desk assistant.
entities:
  people:
    id_prefix: PPL
    count: 30
    fields:
      name: {faker: name}
      email: {expr: "slug(row.name) + '@x.example'", unique: true}
  tickets:
    id_prefix: TCK
    count: 90
    fields:
      owner_id: {type: ref, ref: people}
      status: {choices: [open, held, closed]}
rules:
  - id: only_open
    text: Only open tickets can be closed.
actions:
  - name: get_ticket
    kind: read
    description: Read a ticket.
    params: {ticket_id: {description: The ticket.}}
    load: {t: "tickets[ticket_id]"}
    returns: "=t"
  - name: close_ticket
    kind: write
    description: Close a ticket.
    params: {ticket_id: {description: The ticket.}}
    load: {t: "tickets[ticket_id]"}
    require: [{check: "t.status in ['open']", error: "Not open.", rule: only_open}]
    effects: [{update: t, set: {status: closed}}]
goals:
  - id: close_one
    anchor: {entity: tickets, where: "row.status == 'open'"}
    plan: [{tool: close_ticket, args: {ticket_id: "=anchor.id"}}]
    instruction: ["Close ticket {anchor.id}."]
"""
)


def _changed(edit: Any) -> set[str]:
    """The components an edit of TINY changes (and the digest must change with them)."""
    before, domain = structure(TINY), copy.deepcopy(TINY)
    edit(domain)
    after = structure(domain)
    assert after.digest != before.digest
    return {c for c in COMPONENTS if after.components[c] != before.components[c]}


def test_an_optional_reference_is_new_structure() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["entities"]["tickets"]["fields"]["helper_id"] = {
            "type": "ref",
            "ref": "people",
            "null_rate": 0.5,
        }

    assert _changed(edit) == {"entity_graph"}


def test_a_lifecycle_transition_is_new_structure() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["actions"][1]["require"][0]["check"] = "t.status in ['open', 'held']"

    assert _changed(edit) == {"lifecycles"}


def test_a_guard_written_another_way_is_the_same_lifecycle() -> None:
    domain = copy.deepcopy(TINY)
    domain["actions"][1]["require"][0]["check"] = "t.status == 'open' or t.status == 'held'"
    widened = copy.deepcopy(TINY)
    widened["actions"][1]["require"][0]["check"] = "t.status in ['open', 'held']"
    assert structure(domain).lifecycles == structure(widened).lifecycles
    assert structure(domain).lifecycles != structure(TINY).lifecycles


def test_a_rule_is_new_structure() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["rules"].append(
            {
                "id": "look_first",
                "text": "Read a ticket before closing it.",
                "prior_call": {"tool": "close_ticket", "needs": "get_ticket"},
            }
        )

    assert _changed(edit) == {"rules"}


def test_a_plan_shape_is_new_structure() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["goals"][0]["plan"].insert(0, {"tool": "get_ticket", "args": {"ticket_id": "=anchor.id"}})

    assert _changed(edit) == {"plans"}


def test_a_repeated_tool_is_not_new_structure() -> None:
    domain = copy.deepcopy(TINY)
    domain["actions"].append({**domain["actions"][0], "name": "read_ticket"})
    assert structure(domain).digest == structure(TINY).digest


def test_lifecycles_are_compared_up_to_renaming_of_states() -> None:
    chain = {("a", "b"), ("b", "c")}
    label, colour = canonical_lifecycle("abc", {"a"}, chain)
    renamed, _ = canonical_lifecycle("zyx", {"z"}, {("z", "y"), ("y", "x")})
    assert label == renamed and label.startswith("3 states, 1 initial: ")
    assert len(set(colour.values())) == 3  # a chain has no symmetry
    star, colour = canonical_lifecycle("abc", {"a"}, {("a", "b"), ("a", "c")})
    assert star != label and colour["b"] == colour["c"]


def test_expressions_are_compared_by_shape() -> None:
    roles = {"amount": "p:number", "acct": "one"}
    same = ["amount > 500 and acct.open", "acct.open and 750 < amount"]
    assert len({expr_shape(e, roles) for e in same}) == 1
    assert expr_shape("amount >= 500", roles) != expr_shape("amount > 500", roles)
    assert expr_shape("acct.x == 'a'", roles) == expr_shape("'b' == acct.y", roles)
    assert expr_shape("len(amount)", roles) != expr_shape("abs(amount)", roles)


def test_data_and_spec_agree_and_bad_data_is_refused() -> None:
    assert structure(TINY) == structure(parse_domain(TINY))
    broken = copy.deepcopy(TINY)
    broken["entities"]["tickets"]["fields"]["owner_id"]["ref"] = "nobody"
    with pytest.raises(DomainError, match="unknown entity 'nobody'"):
        structure(broken, "broken.json")


def _save(folder: Path, domain: dict[str, Any], tags: list[str]) -> None:
    """A library world file, as the synthesiser saves one (without building it)."""
    data = {"format": FORMAT, "kind": "synth", "patterns": tags, "domain": domain}
    (folder / f"{domain['id']}.json").write_text(json.dumps(data, default=str))


def test_the_command_reads_a_library_from_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = synthesize(0)
    _save(tmp_path, first.domain, list(first.patterns))
    _save(tmp_path, disguise(first.domain), ["disguised"])
    broken = {**TINY, "id": "broken", "goals": [{**TINY["goals"][0], "level": 9}]}
    _save(tmp_path, broken, [])
    diversity.main(["--library", str(tmp_path), "--no-tasks", "--json"])
    report = json.loads(capsys.readouterr().out)
    lib, hand = report["library"]["structure"], report["hand_written"]["structure"]
    assert lib["worlds"] == 2 and lib["distinct_structures"] == 1
    assert lib["largest_same_structure"] == 2 and lib["distinct"]["plans"] == 1
    assert lib["tags"] == {p: 1 for p in [*first.patterns, "disguised"]}
    assert lib["refused"]["worlds"] == 1 and "broken.json" in lib["refused"]["first"][0]
    assert hand["worlds"] == hand["distinct_structures"] == 12
    assert "tasks" not in report["library"]


def test_the_command_measures_the_composer_directly(capsys: pytest.CaptureFixture[str]) -> None:
    diversity.main(["--composed", "3", "--json"])
    lib = json.loads(capsys.readouterr().out)["library"]["structure"]
    assert lib["worlds"] == 3 and 1 <= lib["distinct_structures"] <= 3
    assert sum(lib["tags"].values()) == sum(len(synthesize(i).patterns) for i in range(3))


def test_the_command_refuses_a_missing_library(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no such library folder"):
        diversity.main(["--library", str(tmp_path / "none"), "--no-tasks"])
