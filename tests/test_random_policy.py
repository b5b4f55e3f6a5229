"""The random baseline's values are valid for any numeric bounds a schema states (an imported
API may give only a minimum above the default range, or only a negative maximum)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from envfactory.policies.scripted import random_value

bound = st.one_of(st.none(), st.integers(-10_000, 10_000))


@given(bound, bound, st.sampled_from(["integer", "number"]), st.integers(0, 2**32))
def test_numbers_fall_within_the_stated_bounds(
    lo: int | None, hi: int | None, kind: str, seed: int
) -> None:
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    schema: dict[str, object] = {"type": kind}
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    value = random_value(schema, random.Random(seed), [])
    assert isinstance(value, int if kind == "integer" else float)
    assert (lo is None or value >= lo) and (hi is None or value <= hi)
