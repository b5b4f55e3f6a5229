"""Import tau2-bench's retail domain: the database as rows, the policy as rules, the tools and
goals from this package's data files."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.peers.tau2.data import Tau2DataMissing, Tau2Retail, load
from envfactory.peers.tau2.documents import DocumentError, Rows, database_rows
from envfactory.peers.tau2.policy import policy_rules
from envfactory.peers.tau2.tools import ENFORCED_RULES

HERE = Path(__file__).resolve().parent
DOMAIN_FILE = HERE / "retail.yaml"
GOALS_FILE = HERE / "retail_goals.yaml"


@dataclass(frozen=True)
class Imported:
    """tau2's retail domain ready to compile: the spec (tools, tables, rules) and its rows."""

    data: Tau2Retail
    domain: dict[str, Any]
    spec: DomainSpec
    rows: Rows

    def procedural(self, env_id: str) -> DomainSpec:
        """The spec under another id, with this package's goal templates, ladder and persona;
        rules gain the checks ``prior_calls`` names and lose the paragraphs ``drop_policy``
        names."""
        extra = yaml.safe_load(GOALS_FILE.read_text())
        checks = extra.pop("prior_calls", {})
        dropped = [d.lower() for d in extra.pop("drop_policy", [])]
        rules = []
        for rule in self.domain["rules"]:
            kept = [
                p for p in rule["text"].split("\n\n") if not any(d in p.lower() for d in dropped)
            ]
            rules.append({**rule, "text": "\n\n".join(kept)})
            if rule["id"] in checks:
                rules[-1]["prior_call"] = checks[rule["id"]]
        unknown = sorted(set(checks) - {r["id"] for r in rules})
        if unknown:
            raise Tau2DataMissing(f"policy.md has no section for {unknown}")
        return parse_domain({**self.domain, "id": env_id, "rules": rules, **extra}, str(GOALS_FILE))


@lru_cache(maxsize=2)
def import_retail(folder: Path | None = None) -> Imported:
    """tau2's retail data as an envfactory domain (once per process and folder)."""
    data = load(folder)
    try:
        rows = database_rows(data.db)
    except (DocumentError, KeyError, TypeError, AttributeError) as exc:
        raise Tau2DataMissing(
            f"{data.folder / 'db.json'}: unexpected record shape: {exc}"
        ) from None
    rules = policy_rules(data.policy)
    absent = sorted(set(ENFORCED_RULES) - {r.id for r in rules})
    if absent:
        raise Tau2DataMissing(f"{data.folder / 'policy.md'} has no section for {absent}")
    domain = yaml.safe_load(DOMAIN_FILE.read_text())
    domain["rules"] = [r.model_dump(exclude_none=True) for r in rules]
    for name, entity in domain["entities"].items():
        entity["count"] = len(rows[name])
    return Imported(data, domain, parse_domain(domain, str(DOMAIN_FILE)), rows)
