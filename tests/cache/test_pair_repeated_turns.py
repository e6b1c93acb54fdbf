"""Setting cache markers aside pairs a conversation's repeated turns at once (compared and encoded
in C) and walks only the turns after them. Whatever the two message lists hold (markers on any
turn, Bedrock's cache points with their TTLs, values equal in Python but not in bytes, a shorthand
on one side), the result is the walk's, to the byte and to each side's key order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness._shared._views import encode_json
from harness.cache import _markers
from harness.providers import provider_named
from tests.support.properties import examples

MARKERS = ("cache_control", "cachePoint")
SHORTHAND = provider_named("anthropic").shorthand

texts = st.sampled_from(["hi", "hello", 'a"b', "x" * 40, "é中"])
markers = st.sampled_from(
    [
        {"cache_control": {"type": "ephemeral"}},
        {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]
)


@st.composite
def turn(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["short", "long", "point", "number", "reordered"]))
    role = draw(st.sampled_from(["user", "assistant"]))
    if kind == "short":
        return {"role": role, "content": draw(texts)}
    if kind == "point":  # Bedrock's block of its own
        return {"cachePoint": {"type": "default", "ttl": draw(st.sampled_from(["5m", "1h"]))}}
    if kind == "number":  # 1 == 1.0 in Python, not in bytes
        return {
            "role": role,
            "content": [{"type": "text", "text": "n", "n": draw(st.sampled_from([1, 1.0]))}],
        }
    block: dict[str, Any] = {"type": "text", "text": draw(texts)}
    if draw(st.booleans()):
        block.update(draw(markers))
    if kind == "reordered":  # equal as dicts, other bytes
        return {"content": [block], "role": role}
    return {"role": role, "content": [block]}


def twin(value: Any) -> Any:
    """Equal in Python, other bytes: keys in reverse order, whole floats for integers."""
    if isinstance(value, dict):
        return {key: twin(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [twin(item) for item in value]
    return float(value) if type(value) is int else value


@st.composite
def two_lists(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    shared = draw(st.lists(turn(), max_size=8))
    twins = [twin(item) if draw(st.booleans()) else item for item in shared]
    a = [*shared, *draw(st.lists(turn(), max_size=3))]
    b = [*twins, *draw(st.lists(turn(), max_size=4))]
    for side in (a, b):  # now and then a turn of the shared part moved or changed on one side
        if side and draw(st.integers(0, 3)) == 0:
            side[draw(st.integers(0, len(side) - 1))] = draw(turn())
    return a, b


@given(two_lists())
@settings(max_examples=examples(200), deadline=None)
def test_pairing_repeated_turns_at_once_is_the_walk(lists: tuple[list[Any], list[Any]]) -> None:
    a, b = lists
    for shorthand in (None, SHORTHAND):
        fast = _markers._pair(a, b, MARKERS, shorthand)
        walked = _markers._pair_items(a, b, MARKERS, shorthand)
        assert encode_json(fast[0]) == encode_json(walked[0])
        assert encode_json(fast[1]) == encode_json(walked[1])


def test_a_marker_in_a_repeated_turn_is_set_aside() -> None:
    """The near miss of the fast path: the turns repeat, one of them marked on one side only."""
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "q", **{"cache_control": {"type": "ephemeral"}}}],
    }
    plain = {"role": "user", "content": [{"type": "text", "text": "q"}]}
    a = [plain, {"role": "assistant", "content": "r"}, marked]
    b = [plain, {"role": "assistant", "content": "r"}, plain, {"role": "user", "content": "next"}]
    left, right = _markers._pair(a, b, MARKERS)
    assert left == [plain, {"role": "assistant", "content": "r"}, plain]
    assert right[:3] == left


def test_a_long_conversations_repeated_turns_are_not_walked(monkeypatch: Any) -> None:
    """The cost of a turn is the turn's: pairing request 200 with request 199 looks at the turns
    after the ones they repeat, not at all 400 (counted, not timed)."""
    looked_at = []
    only_marker = _markers._only_marker
    monkeypatch.setattr(
        _markers,
        "_only_marker",
        lambda item, keys: looked_at.append(item) or only_marker(item, keys),
    )
    history = [
        {"role": role, "content": [{"type": "text", "text": f"{role} {n}"}]}
        for n in range(200)
        for role in ("user", "assistant")
    ]
    marked = {"type": "text", "text": "now", "cache_control": {"type": "ephemeral"}}
    a = [*history[:-2], {"role": "user", "content": [marked]}]
    b = [*history, {"role": "user", "content": [{**marked, "text": "next"}]}]
    left, right = _markers._pair(a, b, MARKERS)
    assert right[: len(left) - 1] == left[:-1]
    assert 0 < len(looked_at) <= 20
