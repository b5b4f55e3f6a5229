"""A library lists without building its worlds: the info ``envs`` shows is saved on each world
file's first line, equals building the world and asking, and a file without it (saved before)
or changed since is built as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envfactory.bench.library import make_library
from envfactory.cli.envs import env_info
from envfactory.contract.errors import DomainError
from envfactory.db.environment import DatabaseEnvironment
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.library import register_library
from envfactory.registry import build
from envfactory.registry.worldfile import FORMAT, save_world, saved_info
from envfactory.synth.compose import synthesize

SPECS = Path(__file__).parent / "openapi" / "specs"
SEED = 44  # a library of its own: no other test registers these ids


def synth_domain(index: int) -> dict[str, Any]:
    return synthesize(index, seed=SEED).domain


def openapi_domain(name: str) -> dict[str, Any]:
    return compile_document(read_document(SPECS / name), name, f"index-{Path(name).stem}")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 worlds saved as ``synth`` and ``openapi`` save them: 38 synthesised, 2 imported."""
    out = tmp_path_factory.mktemp("library")
    for i in range(38):
        save_world(out, synth_domain(i), {"kind": "synth", "source": f"synth/{SEED}/{i}"})
    for name in ("clinic-oas3.yaml", "shop-swagger2.json"):
        save_world(out, openapi_domain(name), {"source": name, "title": name})
    return out


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the database worlds (every library kind is one) constructed from now on."""
    made: list[str] = []
    construct = DatabaseEnvironment.__init__

    def counted(self: DatabaseEnvironment, spec: Any, *args: Any, **kwargs: Any) -> None:
        made.append(spec.id)
        construct(self, spec, *args, **kwargs)

    monkeypatch.setattr(DatabaseEnvironment, "__init__", counted)
    return made


def old_format(folder: Path, domain: dict[str, Any], meta: dict[str, Any]) -> Path:
    """A world file as ``save_world`` wrote it before it saved the listing."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{domain['id']}.json"
    path.write_text(json.dumps({"format": FORMAT, **meta, "domain": domain}, separators=(",", ":")))
    return path


def test_a_saved_library_lists_what_building_each_world_shows(library: Path) -> None:
    ids = register_library(library)
    assert len(ids) == 40
    listed = [saved_info(i) for i in ids]
    assert all(info is not None for info in listed)
    assert listed == [build(i).info() for i in ids]
    assert {info.kind for info in listed if info} == {"synth", "openapi"}
    assert all(info.rows > 0 and info.tool_names for info in listed if info)


def test_listing_stored_worlds_builds_none(library: Path, builds: list[str]) -> None:
    ids = register_library(library)
    listed = [env_info(i) for i in ids]
    assert builds == []
    assert [i.id for i in listed] == ids and all(i.rows > 0 for i in listed)


def test_a_library_saved_before_still_lists(tmp_path: Path, builds: list[str]) -> None:
    paths = [
        old_format(tmp_path, synth_domain(40), {"kind": "synth"}),
        old_format(tmp_path, openapi_domain("clinic-oas3.yaml") | {"id": "index-old"}, {}),
    ]
    ids = register_library(tmp_path)
    assert ids == sorted(p.stem for p in paths)
    assert [saved_info(i) for i in ids] == [None, None]
    listed = [env_info(i) for i in ids]
    assert sorted(builds) == sorted(ids)  # built, as before: the count sees a build
    assert listed == [build(i).info() for i in ids]


def test_a_replaced_file_lists_the_new_world(tmp_path: Path, builds: list[str]) -> None:
    first = save_world(tmp_path, synth_domain(41), {"kind": "synth"})
    other = save_world(tmp_path / "other", synth_domain(42), {"kind": "synth"})
    (env_id,) = register_library(tmp_path)
    builds.clear()  # saving built each world once
    before = saved_info(env_id)
    shutil.copyfile(other, first)  # another world under the same name
    after = saved_info(env_id)
    assert before is not None and after is not None and after != before
    assert builds == []
    assert after == build(env_id).info() and after.id == synth_domain(42)["id"]


def test_a_file_edited_by_hand_is_built_again(tmp_path: Path, builds: list[str]) -> None:
    path = save_world(tmp_path, synth_domain(43), {"kind": "synth"})
    (env_id,) = register_library(tmp_path)
    builds.clear()  # saving built the world once
    assert saved_info(env_id) is not None
    head, rest = path.read_text().split("\n", 1)
    older = json.loads(head[:-1] + "}")
    del older["listing"]["info"]["agents"]  # as a version whose info had fewer fields saved it
    path.write_text(json.dumps(older, separators=(",", ":"))[:-1] + ",\n" + rest)
    assert saved_info(env_id) is None
    description = json.dumps(synth_domain(43)["description"])
    assert description in rest
    path.write_text(head + "\n" + rest.replace(description, '"edited by hand"'))
    assert saved_info(env_id) is None  # the digest no longer matches
    assert builds == []
    assert env_info(env_id).description == "edited by hand" and builds == [env_id]


def test_save_world_refuses_an_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(DomainError, match="unknown kind 'nope'"):
        save_world(tmp_path, synth_domain(0), {"kind": "nope"})
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("saved_before", [False, True])
def test_the_benchmark_library(tmp_path: Path, saved_before: bool) -> None:
    assert make_library(tmp_path, 6, 2, saved_before) > 0
    ids = register_library(tmp_path)
    assert len(ids) == 6
    assert {build(i).info().id for i in ids} == {i for i in ids if "-copy" not in i}
    assert all((saved_info(i) is None) == saved_before for i in ids)


def test_envs_lists_a_library_as_building_it_would(library: Path, tmp_path: Path) -> None:
    for path in sorted(library.glob("*.json"))[:3]:
        shutil.copyfile(path, tmp_path / path.name)
    old_format(tmp_path, synth_domain(44), {"kind": "synth"})
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", "envs", "--json", "--library", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ENVFACTORY_LIBRARY": ""},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ids = register_library(tmp_path)
    listed = [i for i in json.loads(done.stdout) if i["id"] in ids]
    assert listed == [build(i).info().model_dump(mode="json") for i in ids]
