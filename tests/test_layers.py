"""The house keeps its shape: the contract imports nothing else of envfactory, each layer
imports only the layers below it (the exceptions named, each with its reason), and at most
two import cycles remain (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parent.parent / "src"

LAYERS: list[tuple[str, set[str]]] = [
    ("contract", {"contract"}),
    ("engines", {"world", "domain", "tools", "tasks", "verify", "users", "policies",
                 "harness", "episode", "trajectory", "gc_tuning", "workers", "journal"}),
    ("registry", {"registry"}),
    ("kinds", {"db", "terminal", "research", "repo", "web", "multiagent", "peers", "openapi",
               "synth", "domains", "packaging", "campaign"}),
    ("services", {"rollout", "quality", "curriculum", "credit"}),
    ("adapters", {"integrations"}),
    ("measures", {"bench", "training"}),
    ("doors", {"cli", "serving", "dashboard", "__main__", ""}),
]  # fmt: skip

#: Imports from a lower layer up, each with its reason.
UPWARD: dict[tuple[str, str], str] = {
    ("envfactory.openapi.pipeline", "envfactory.quality.batch"): "the import line audits",
    ("envfactory.synth.pipeline", "envfactory.quality.batch"): "the synthesis line audits",
    ("envfactory.synth.writer", "envfactory.quality.batch"): "the writer's line audits",
}

#: Import cycles that stay, each with its reason.
CYCLES: dict[frozenset[str], str] = {}


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in (SRC / "envfactory").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        package = path.name == "__init__.py"
        found[name.removesuffix(".__init__")] = (path, package)
    return found


def import_graph() -> nx.DiGraph:
    """Module -> module it imports (every import statement: top level, nested, type-only)."""
    mods = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, (path, package) in mods.items():
        here = name if package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                parent_package = mods.get(target, (None, False))[1] and name.startswith(
                    target + "."
                )
                if target and target != name and not parent_package:
                    graph.add_edge(name, target)
    return graph


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, (_, packages) in enumerate(LAYERS) if top in packages)


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer(module)


def test_the_contract_imports_nothing_else_of_envfactory() -> None:
    graph = import_graph()
    outside = [
        (a, b) for a, b in graph.edges if a.startswith("envfactory.contract") and layer(b) > 0
    ]
    assert not outside


def test_layers_import_only_downwards_but_for_named_exceptions() -> None:
    graph = import_graph()
    upward = {(a, b) for a, b in graph.edges if layer(b) > layer(a)}
    assert upward == set(UPWARD), sorted(upward ^ set(UPWARD))


def test_import_cycles_are_only_the_named_ones_at_most_two() -> None:
    assert len(CYCLES) <= 2  # the house allows two, each with its reason (today none)
    cycles = {frozenset(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1}
    assert cycles == set(CYCLES), sorted(map(sorted, cycles))
