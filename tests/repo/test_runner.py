"""The runner's store: the modules its runs import, compiled once, never the project's source."""

from __future__ import annotations

import json

import pytest

from envfactory.repo import projects
from envfactory.repo.runner import PYCACHE, agent_env, drive, store
from envfactory.repo.verify import baseline

WHY = projects.unavailable_reason()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def test_a_store_compiles_the_runner_and_the_tests_but_never_the_source() -> None:
    p = projects.PROJECTS[0]
    s = store(p)
    assert s.compiled is not None
    made = [f.relative_to(s.compiled).as_posix() for f in s.compiled.rglob("*.pyc")]
    assert any(m.startswith(f"{projects.RUNNER[1:]}/_pytest/") for m in made)
    tests = [m for m in made if m.startswith("work/")]
    assert tests and all("-pytest-" in m for m in tests)  # as pytest rewrites them
    sources = {f"work/{rel}".removesuffix(".py") for rel in s.sources}
    assert not [m for m in tests if m.split(".", 1)[0] in sources]
    assert agent_env(s)["PYTHONPYCACHEPREFIX"] == PYCACHE


def test_a_run_with_the_compiled_modules_judges_the_source_it_is_given() -> None:
    """A source file changed in place (same size: a compiled copy of the pristine one would
    pass for it) fails its tests; the pristine one passes them."""
    p = projects.PROJECTS[0]
    s = store(p)
    rel = "inflection/__init__.py"
    pristine = s.read(rel)
    broken = pristine.replace(b"return word.lower()", b"return word.upper()", 1)
    assert broken != pristine and len(broken) == len(pristine)
    tests = [t for t in baseline(p).tests if t.startswith("test_inflection.py::test_underscore")]
    assert tests
    spec = {"mode": "run", "select": tests, "files_to_collect": ["test_inflection.py"]}
    for source, failed in ((broken, len(tests)), (pristine, 0), (broken, len(tests))):
        line, _ = drive(s, {rel: source}, spec)
        assert json.loads(line)["failed"] == failed
