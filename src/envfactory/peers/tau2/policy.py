"""tau2's policy as rules: one rule per section of ``policy.md``, its text kept verbatim.

A rule's id is its heading as a snake_case name (``## Cancel pending order`` is
``cancel_pending_order``). The tools enforce the rules whose ids they name in their errors.
"""

from __future__ import annotations

import re

from envfactory.domain.spec import RuleSpec

_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")


def rule_id(heading: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", heading.lower())) or "policy"


def policy_rules(text: str) -> list[RuleSpec]:
    """The sections of a Markdown policy as rules, in order; text before the first heading
    belongs to a rule named ``policy``."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            sections.append((m.group(2), [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            sections.append(("policy", [line]))
    rules: list[RuleSpec] = []
    seen: set[str] = set()
    for heading, lines in sections:
        body = "\n".join(lines).strip()
        if not body:
            continue
        rid = base = rule_id(heading)
        n = 2
        while rid in seen:
            rid, n = f"{base}_{n}", n + 1
        seen.add(rid)
        rules.append(RuleSpec(id=rid, text=body))
    return rules
