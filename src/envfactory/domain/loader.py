"""Reading domains from data files, and checking they hang together."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from envfactory.contract.errors import DomainError
from envfactory.domain.spec import DomainSpec, PriorCallRule

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "domains"
# libyaml's safe loader where PyYAML was built with it: the same data, read 8x faster (every
# process that makes a built-in world reads all of their files: 3.5 s in pure Python).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_domain(
    data: dict[str, Any], source: str = "<data>", beside: Path | None = None
) -> DomainSpec:
    """A validated domain from plain data; Python handlers are imported only from the module
    the domain names (an installed one, or ``<name>.py`` in the folder ``beside``), and only
    registered functions can be called."""
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        raise DomainError(f"{source}: {exc}") from None
    check_references(spec)
    if spec.handlers:
        if not spec.handlers.replace(".", "").replace("_", "").isalnum():
            raise DomainError(f"{source}: bad handlers module name {spec.handlers!r}")
        _import_handlers(spec.handlers, beside, source)
    return spec


def _import_handlers(module: str, beside: Path | None, source: str) -> None:
    """Import the handlers ``module``: installed, or its file found from the folder ``beside``
    or one of the three above it (``src/pkg/worlds/x.yaml`` names ``pkg.handlers``)."""
    if module in sys.modules:
        return
    relative = Path(*module.split(".")).with_suffix(".py")
    folders = [beside, *list(beside.parents)[:3]] if beside else []
    local = next((f / relative for f in folders if (f / relative).is_file()), None)
    if local is None:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise DomainError(f"{source}: cannot import handlers {module!r}: {exc}") from None
        return
    found = importlib.util.spec_from_file_location(module, local)
    assert found is not None and found.loader is not None
    loaded = importlib.util.module_from_spec(found)
    sys.modules[module] = loaded
    try:
        found.loader.exec_module(loaded)
    except Exception:
        del sys.modules[module]
        raise


def read_mapping(path: Path) -> dict[str, Any]:
    """A YAML or JSON file's mapping (a domain, or a saved world wrapping one)."""
    try:
        data = yaml.load(path.read_text(), Loader=_YAML_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise DomainError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise DomainError(f"{path}: a domain file holds a mapping")
    return data


def load_domain(path: str | Path) -> DomainSpec:
    path = Path(path)
    return parse_domain(read_mapping(path), str(path), beside=path.parent)


def builtin_domain_files() -> list[Path]:
    return sorted(BUILTIN_DIR.glob("*.yaml"))


def _match_problems(rule: str, p: PriorCallRule, params: dict[str, set[str]]) -> list[str]:
    """A ``match`` pairs a parameter of the guarded tool (``param`` or ``param.field``) with
    one of the look-up's: a name either tool lacks would make every look-up agree."""
    return [
        f"rule {rule} matches {key!r} of {p.tool} with {value!r} of {p.needs}, "
        "which is not a parameter of both"
        for key, value in p.match.items()
        if key.partition(".")[0] not in params[p.tool] or value not in params[p.needs]
    ]


def check_references(spec: DomainSpec) -> None:
    """Names that must exist: entities of refs, tools of plans and rules, rule ids of checks."""
    entities = spec.entities
    tools = {a.name for a in spec.actions}
    rules = {r.id for r in spec.rules}
    problems = []
    if len(tools) != len(spec.actions):
        problems.append("two tools share a name")
    for name, e in entities.items():
        for fname, f in e.fields.items():
            if f.ref and f.ref not in entities:
                problems.append(f"{name}.{fname} refers to unknown entity {f.ref!r}")
            if f.copy_from and f.copy_from.partition(".")[0] not in e.fields:
                problems.append(f"{name}.{fname} copies from unknown field {f.copy_from!r}")
        if e.per and e.per.entity not in entities:
            problems.append(f"{name} is generated per unknown entity {e.per.entity!r}")
        for ref in e.refs:
            problems += [
                f"{name} ref looks up with unknown tool {s.tool!r}"
                for s in ref.lookup
                if s.tool not in tools
            ]
    for a in spec.actions:
        for c in a.require:
            if c.rule and c.rule not in rules:
                problems.append(f"{a.name} enforces unknown rule {c.rule!r}")
    params = {a.name: set(a.params) for a in spec.actions}
    for r in spec.rules:
        for tool in [r.prior_call.tool, r.prior_call.needs] if r.prior_call else []:
            if tool not in tools:
                problems.append(f"rule {r.id} names unknown tool {tool!r}")
        if r.prior_call and not problems:
            problems += _match_problems(r.id, r.prior_call, params)
        if r.invariant and r.invariant.entity not in entities:
            problems.append(f"rule {r.id} names unknown entity {r.invariant.entity!r}")
    goal_ids = [g.id for g in spec.goals]
    if len(set(goal_ids)) != len(goal_ids):
        problems.append("two goals share an id")
    if problems:
        raise DomainError(f"{spec.id}: " + "; ".join(problems))
