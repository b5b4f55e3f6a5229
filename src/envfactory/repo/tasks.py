"""What a repository task hides (its project, mutations and bugs) and the hash of a project's
sources, shared by the environment that drafts tasks and the episode that plays them."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.tasks import HiddenTask
from envfactory.repo import projects
from envfactory.repo.projects import Project


class Bug(BaseModel):
    """One injected mutation and the tests it makes fail (with their messages)."""

    file: str
    op: str
    line: int
    old: str  # the gold edit: ``old`` (unique in the file as the task starts) becomes ``new``
    new: str
    failing: dict[str, str]
    qualname: str = ""  # the outermost function holding it ("" outside functions)


class RepoHidden(HiddenTask):
    project: str
    mutations: list[dict[str, Any]]
    bugs: list[Bug]
    shape: list[str] = Field(default_factory=list)


def source_hash(p: Project, changed: dict[str, bytes]) -> str:
    """The hash of the project's source files, pristine but for ``changed``."""
    root = projects.tree_path(p)
    h = hashlib.blake2b(digest_size=16)
    for rel in projects.source_files(p):
        data = changed.get(rel)
        if data is None:
            data = (root / rel).read_bytes()
        h.update(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest()
