"""The docs stay true: every Python example in the README and docs/ runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    pytest.param(code, id=f"{page.name}#{i}")
    for page in PAGES
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
]


@pytest.mark.parametrize("code", BLOCKS)
def test_python_example_runs(code: str) -> None:
    exec(compile(code, "<docs>", "exec"), {"__name__": "__docs__"})


def test_every_capability_page_has_a_runnable_example() -> None:
    for page in PAGES:
        if page.name not in ("benchmarks.md", "architecture.md"):
            assert "```python" in page.read_text(), f"{page.name} has no runnable example"
