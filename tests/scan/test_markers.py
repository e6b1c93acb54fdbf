"""Cache markers set aside from a block's JSON text (`harness.scan._markers.unmarked`): the
one-marker-key path (every provider's split names one key, so it is the path every scan takes)
cuts exactly what the general path cuts, and what is left decodes to what the cache model's own
`strip` leaves, on texts built to hold markers in every place a body puts them."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.cache._markers import strip
from harness.scan._markers import needles_of, unmarked

MARKERS = ("cache_control",)
NEEDLE = needles_of(MARKERS)
ABSENT = b'"never-a-marker-key"'  # a second key no text holds: the general path, one key found

marker = st.fixed_dictionaries(
    {"type": st.just("ephemeral")}, optional={"ttl": st.sampled_from(["5m", "1h"])}
)
text = st.sampled_from(["hi", "cache_control", '"cache_control":{}', "a,b", ""])
leaf = st.one_of(text, st.integers(-5, 5), st.none(), st.booleans())


def _objects(children: Any) -> Any:
    keys = st.sampled_from(["type", "text", "content", "x"])
    members = st.dictionaries(keys, children)
    # a marked object holds more than the marker: one that holds only a marker goes whole, and
    # stands in a list (as the texts a body holds put it)
    marked = st.tuples(st.dictionaries(keys, children, min_size=1), marker).map(
        lambda pair: {**pair[0], "cache_control": pair[1]}
    )
    return st.one_of(members, marked)


def _lists(children: Any) -> Any:
    # an item that is only a marker (as Bedrock's cache points are) stands only in a list
    return st.lists(st.one_of(children, marker.map(lambda m: {"cache_control": m})), max_size=4)


values = st.recursive(leaf, lambda children: st.one_of(_objects(children), _lists(children)))
spacing = st.sampled_from([{"separators": (",", ":")}, {}, {"indent": 1}])


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(value=_lists(values), layout=spacing)
def test_one_marker_key_cuts_what_the_general_path_cuts(value: Any, layout: Any) -> None:
    data = json.dumps(value, **layout).encode()
    one: set[bytes] = set()
    general: set[bytes] = set()
    assert unmarked(data, one, NEEDLE) == unmarked(data, general, (*NEEDLE, ABSENT))
    assert one == general


def _points_side_by_side(value: Any) -> bool:
    """Whether a list holds two marker-only items in a row: the cut then leaves a comma behind
    (`["a",]`). Such a text is only ever digested, and it stays apart from every text whose
    markers the cache model would strip to something else, but it does not decode."""
    if isinstance(value, dict):
        return any(_points_side_by_side(item) for item in value.values())
    if isinstance(value, list):
        alone = [isinstance(item, dict) and set(item) == {"cache_control"} for item in value]
        return any(a and b for a, b in itertools.pairwise(alone)) or any(
            _points_side_by_side(item) for item in value
        )
    return False


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(value=_lists(values), layout=spacing)
def test_what_is_left_is_what_the_cache_model_strips_to(value: Any, layout: Any) -> None:
    assume(not _points_side_by_side(value))
    data = json.dumps(value, **layout).encode()
    left = unmarked(data, set(), NEEDLE)
    assert msgspec.json.decode(left) == strip(value, MARKERS)


def test_a_quoted_marker_key_inside_a_string_is_left_alone() -> None:
    data = b'[{"text":"\\"cache_control\\":{}","cache_control":{"type":"ephemeral"}}]'
    ttls: set[bytes] = set()
    assert unmarked(data, ttls, NEEDLE) == b'[{"text":"\\"cache_control\\":{}"}]'
    assert ttls == {b""}
