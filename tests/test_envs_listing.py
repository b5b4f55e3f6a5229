"""``envfactory envs`` lists quickly and says what building says: each world it lists without
building (:data:`envfactory.cli.envs.UNBUILT`) gets the info its built world gives, and the
standard library's facts read back from the cache folder are those a fresh extraction gives,
under a key that changes with the interpreter and the extractor."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from envfactory.cli.envs import UNBUILT, env_info
from envfactory.db.environment import DatabaseEnvironment, unbuilt_info
from envfactory.domain.loader import builtin_domain_files, load_domain
from envfactory.registry import EntryPoint, list_envs, make
from envfactory.registry.table import entry
from envfactory.research.pydocs import cache, extract
from envfactory.research.pydocs.extract import Module, stdlib_isolated


def unbuilt_ids() -> list[str]:
    return [
        e
        for e in list_envs()
        if isinstance(found := entry(e), EntryPoint) and found.target in UNBUILT
    ]


def test_every_unbuilt_listing_is_the_built_worlds_info() -> None:
    ids = unbuilt_ids()
    assert {"airline", "web-airline", "retail"} <= set(ids)  # the db and web kinds at least
    for env_id in ids:
        assert env_info(env_id) == make(env_id).info(), env_id


@pytest.mark.parametrize("seed, scale", [(3, 1.0), (11, 0.8), (5, 1.7)])
def test_row_counts_match_generated_rows_at_other_seeds_and_scales(seed: int, scale: float) -> None:
    for path in builtin_domain_files():
        spec = load_domain(path)
        built = DatabaseEnvironment(spec, seed=seed, scale=scale).info()
        assert unbuilt_info(spec, seed=seed, scale=scale) == built, path.stem


@pytest.fixture(scope="module")
def fresh() -> list[Module]:
    return stdlib_isolated()


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVFACTORY_CACHE", str(tmp_path))
    return tmp_path


def test_cached_facts_equal_fresh_ones(cache_folder: Path, fresh: list[Module]) -> None:
    path = cache.cache_path(cache.cache_key())
    assert not path.exists()
    assert cache.stdlib_cached() == fresh  # extracted, and kept
    assert path.is_relative_to(cache_folder) and path.exists()
    assert cache.stdlib_cached() == fresh  # read back
    path.write_text(path.read_text()[:-100])  # a file cut short is extracted again
    assert cache.stdlib_cached() == fresh
    assert extract.modules_of(path.read_text()) == fresh


def test_a_changed_key_misses(
    cache_folder: Path, fresh: list[Module], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = cache.cache_key()
    cache.cache_path(key).parent.mkdir(parents=True)
    cache.cache_path(key).write_text("[]")  # what the cache holds is what is read
    assert cache.stdlib_cached() == []
    with monkeypatch.context() as patched:
        patched.setattr(sys, "version", sys.version + " another build")
        assert cache.cache_key() != key
    changed = tmp_path / "extract.py"
    shutil.copyfile(extract.__file__, changed)
    changed.write_text(changed.read_text() + "\n# the extractor changed\n")
    monkeypatch.setattr(extract, "__file__", str(changed))
    assert cache.cache_key() != key
    assert cache.stdlib_cached() == fresh  # the stale file is not read
