"""Worlds from real API documents: OpenAPI 2 and 3 compiled into audited, stateful worlds.

``compile_spec(document, source)`` gives a validated domain; :class:`OpenAPIEnvironment` runs
it; ``run_import`` compiles many documents in parallel, audits each and keeps those that
pass; ``register_library`` makes saved worlds available to ``make``. See docs/openapi.md.
"""

from envfactory.openapi.compile import compile_document, compile_spec
from envfactory.openapi.corpus import fetch_directory
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.openapi.library import register_library, register_spec
from envfactory.openapi.pipeline import ImportReport, Settings, SpecResult, import_one, run_import

__all__ = [
    "ImportReport",
    "OpenAPIEnvironment",
    "Settings",
    "SpecResult",
    "compile_document",
    "compile_spec",
    "fetch_directory",
    "import_one",
    "register_library",
    "register_spec",
    "run_import",
]
