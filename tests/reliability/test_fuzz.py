"""Property tests: `order_tools`, the fixture decoder, and the drift report's first difference.

Every property runs at most 200 examples (most fewer) so the suite stays fast; hypothesis' example
database replays earlier failures first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import CacheView, canonical_bytes
from harness._shared._errors import FixtureError
from harness._shared._files import Versioned, decode, encode
from harness.agent import TOOL_ORDER_REST, ToolOrderError, ToolSchema, order_tools
from harness.capture import CaptureFile
from harness.drift import compare
from harness.scenarios._formats import AnswersFile, LogFile, RequestsFile, Scenario, ToolSchemasPin
from tests.support.paths import ROOT, SHIPPED_FIXTURES, SHIPPED_PINS
from tests.support.pointer_oracle import MISSING, child, member_span, pointer_tokens
from tests.support.properties import examples

FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def no_surrogates(text: str) -> bool:
    """JSON text cannot hold lone surrogates (hypothesis may still draw them from its constants)."""
    return not any("\ud800" <= char <= "\udfff" for char in text)


def utf16(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")  # a lone surrogate is a valid name too


# -- order_tools --------------------------------------------------------------------------------

NAME_CHARS = st.one_of(
    st.sampled_from("abcxyzABCXYZ_-.09"),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),  # above the surrogates in UTF-16
    st.characters(min_codepoint=0x10000),  # astral: surrogate pairs, below U+E000 in UTF-16
    st.characters(),
)
TOOL_NAMES = st.text(NAME_CHARS, min_size=1, max_size=5).filter(lambda n: n != TOOL_ORDER_REST)


@st.composite
def registries(draw: st.DrawFn, *, shared: bool = True) -> list[ToolSchema]:
    """Tools in collection order; with `shared`, several providers may offer the same name."""
    names = draw(st.lists(TOOL_NAMES, unique=True, min_size=0, max_size=8))
    tools = []
    for name in names:
        copies = draw(st.integers(1, 3)) if shared else 1
        tools += [ToolSchema(name, f"from provider {i}", {"type": "object"}) for i in range(copies)]
    return draw(st.permutations(tools))


@st.composite
def tool_orders(draw: st.DrawFn, tools: list[ToolSchema]) -> tuple[str, ...] | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    names = sorted({t.name for t in tools})
    listed = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    position = draw(st.integers(0, len(listed)))
    return (*listed[:position], TOOL_ORDER_REST, *listed[position:])


def ident(tool: ToolSchema) -> tuple[str, str, str]:
    return tool.name, tool.description, repr(tool.parameters)  # JSON cannot hold lone surrogates


def names_of(tools: list[ToolSchema]) -> list[str]:
    return [t.name for t in tools]


def check_order(tools: list[ToolSchema], order: tuple[str, ...] | None) -> list[ToolSchema]:
    result = order_tools(tools, order)
    # a permutation: nothing dropped, nothing duplicated, nothing altered
    assert Counter(map(ident, result)) == Counter(map(ident, tools))
    # tools sharing a name stay together, in collection order
    for name in {t.name for t in tools}:
        positions = [i for i, t in enumerate(result) if t.name == name]
        assert positions == list(range(positions[0], positions[0] + len(positions)))
        assert [t for t in result if t.name == name] == [t for t in tools if t.name == name]
    if order is None:
        keys = [utf16(t.name) for t in result]
        assert keys == sorted(keys)
        return result
    # listed names take their list positions, unlisted tools sit in one block at the rest entry
    listed = [name for name in order if name != TOOL_ORDER_REST]
    rest_at = order.index(TOOL_ORDER_REST)
    segments = [*listed[:rest_at], TOOL_ORDER_REST, *listed[rest_at:]]
    blocks: list[str] = []
    for tool in result:
        segment = tool.name if tool.name in listed else TOOL_ORDER_REST
        if not blocks or blocks[-1] != segment:
            blocks.append(segment)
    present = [s for s in segments if s == TOOL_ORDER_REST or any(t.name == s for t in tools)]
    if not any(t.name not in listed for t in tools):
        present.remove(TOOL_ORDER_REST)
    assert blocks == present
    rest = [utf16(t.name) for t in result if t.name not in listed]
    assert rest == sorted(rest)  # UTF-16 code-unit order, not code-point order
    return result


@pytest.mark.slow
@settings(FAST, max_examples=examples(200))
@given(st.data())
def test_order_tools_is_a_permutation_in_the_configured_order(data: st.DataObject) -> None:
    tools = data.draw(registries())
    check_order(tools, data.draw(tool_orders(tools)))


@pytest.mark.slow
@settings(FAST, max_examples=examples(150))
@given(st.data())
def test_order_tools_does_not_depend_on_the_collection_order(data: st.DataObject) -> None:
    tools = data.draw(registries(shared=False))
    order = data.draw(tool_orders(tools))
    shuffled = data.draw(st.permutations(tools))
    assert order_tools(shuffled, order) == order_tools(tools, order)


@pytest.mark.slow
@settings(FAST, max_examples=examples(150))
@given(st.data())
def test_with_shared_names_only_the_copies_keep_collection_order(data: st.DataObject) -> None:
    tools = data.draw(registries(shared=True))
    order = data.draw(tool_orders(tools))
    shuffled = data.draw(st.permutations(tools))
    assert names_of(order_tools(shuffled, order)) == names_of(order_tools(tools, order))
    check_order(shuffled, order)


def test_code_units_differ_from_code_points_and_code_units_win() -> None:
    tools = [ToolSchema(n, "", {}) for n in ("\uff5e", "\U0001f600", "a", "\ue000")]
    assert names_of(order_tools(tools, None)) == ["a", "\U0001f600", "\ue000", "\uff5e"]
    assert sorted(t.name for t in tools) != names_of(order_tools(tools, None))  # code points
    ordered = order_tools(tools, ("\ue000", TOOL_ORDER_REST))
    assert names_of(ordered) == ["\ue000", "a", "\U0001f600", "\uff5e"]


@pytest.mark.slow
@settings(FAST, max_examples=examples(200))
@given(registries(), st.lists(st.one_of(TOOL_NAMES, st.just(TOOL_ORDER_REST)), max_size=6))
def test_any_tool_order_list_gives_an_order_or_a_tool_order_error(
    tools: list[ToolSchema], order: list[str]
) -> None:
    try:
        result = order_tools(tools, order)
    except ToolOrderError as error:
        assert str(error).startswith(("toolOrder ", "tool provider returned reserved"))
        return
    assert Counter(map(ident, result)) == Counter(map(ident, tools))


def test_a_tool_named_like_the_rest_entry_is_refused_with_or_without_an_order() -> None:
    tools = [ToolSchema("bash", "", {}), ToolSchema(TOOL_ORDER_REST, "", {})]
    for order in (None, (TOOL_ORDER_REST,)):
        with pytest.raises(ToolOrderError, match="reserved tool name"):
            order_tools(tools, order)


# -- the fixture decoder ------------------------------------------------------------------------

KINDS: dict[str, type[Versioned]] = {
    "scenario": Scenario,
    "log": LogFile,
    "requests": RequestsFile,
    "answers": AnswersFile,
    "pin": ToolSchemasPin,
    "capture": CaptureFile,
}


def _samples(kind: str) -> list[bytes]:
    if kind == "pin":
        paths = sorted(SHIPPED_PINS.glob("*/tool-schemas.expected.json"))
    elif kind == "capture":
        paths = sorted((ROOT / "examples").glob("*/fixtures/cassettes/**/*.json"))
    else:
        paths = sorted(SHIPPED_FIXTURES.glob(f"*/{kind}.json"))
    assert paths, kind
    return [path.read_bytes() for path in paths]


SAMPLES = {kind: _samples(kind) for kind in KINDS}


def assert_decodes_or_refuses(data: bytes, kind: type[Versioned]) -> None:
    try:
        value = decode(data, kind, "fuzzed.json")
    except FixtureError as error:
        assert str(error).startswith("fuzzed.json: ")
        assert error.problem
        return
    assert isinstance(value, kind)
    # whatever is accepted can be written back and reads back equal, byte-stably
    again = encode(value)
    assert decode(again, kind, "rewritten.json") == value
    assert encode(decode(again, kind, "rewritten.json")) == again


@pytest.mark.parametrize("kind", list(KINDS))
@settings(FAST, max_examples=examples(60))
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_the_decoder(kind: str, data: bytes) -> None:
    assert_decodes_or_refuses(data, KINDS[kind])


@st.composite
def byte_mutations(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(samples)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "repeat", "token"]))
        if action == "truncate":
            del data[at:]
        elif action == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif action == "insert":
            data[at:at] = draw(
                st.binary(max_size=12)
                | st.sampled_from(
                    [b"[", b"{", b'"', b"\\", b"\xff", b"\xc0\xaf", b"\x00", b"1e999"]
                )
            )
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif action == "repeat":
            end = min(len(data), at + draw(st.integers(1, 40)))
            data[at:at] = data[at:end]
        else:
            token = draw(st.sampled_from([b"1", b'"', b"true", b":", b",", b"]", b"}"]))
            data[at:at] = (
                draw(st.sampled_from([b"null", b"-0", b"1.5", b"[]", b"{}", b'""'])) + token
            )
    return bytes(data)


@pytest.mark.parametrize("kind", list(KINDS))
@settings(FAST, max_examples=examples(100))
@given(data=st.data())
def test_mutated_real_files_never_crash_the_decoder(kind: str, data: st.DataObject) -> None:
    assert_decodes_or_refuses(data.draw(byte_mutations(SAMPLES[kind])), KINDS[kind])


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8).filter(no_surrogates)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=6).filter(no_surrogates), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def json_mutations(draw: st.DrawFn, samples: list[bytes]) -> bytes:
    """A real file with one node replaced, dropped or added: exercises the type checks."""
    document = msgspec.json.decode(draw(st.sampled_from(samples)))
    nodes: list[tuple[Any, Any]] = []  # (container, key)

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            nodes.append((node, key))
            if isinstance(value, dict | list):
                walk(value)

    walk(document)
    container, key = draw(st.sampled_from(nodes))
    action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
    if action == "replace":
        container[key] = draw(JSON_VALUES)
    elif action == "drop":
        del container[key]
    elif isinstance(container, dict):
        container[draw(st.text(max_size=6).filter(no_surrogates))] = draw(JSON_VALUES)
    else:
        container.insert(key, draw(JSON_VALUES))
    return msgspec.json.encode(document)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
@settings(FAST, max_examples=examples(100))
@given(data=st.data())
def test_structurally_mutated_files_never_crash_the_decoder(kind: str, data: st.DataObject) -> None:
    assert_decodes_or_refuses(data.draw(json_mutations(SAMPLES[kind])), KINDS[kind])


# -- the drift report ---------------------------------------------------------------------------

TEXT = st.text(st.one_of(st.characters(), st.sampled_from('"\\\n/~é😀')), max_size=10).filter(
    no_surrogates
)
PARAMETERS = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=5,
)


@st.composite
def tools(draw: st.DrawFn) -> dict[str, Any]:
    items = [
        ("name", draw(st.sampled_from(["bash", "grep", "read_file", "web_fetch", "todo"]))),
        ("description", draw(TEXT)),
        ("parameters", draw(PARAMETERS)),
    ]
    if draw(st.integers(0, 5)) == 0:
        items = draw(st.permutations(items))  # key order is part of the bytes
    return dict(items)


@st.composite
def views(draw: st.DrawFn) -> CacheView:
    settings_ = {"provider": draw(st.sampled_from(["anthropic", "openai"])), "model": "m"}
    if draw(st.booleans()):
        settings_["max_tokens"] = draw(st.sampled_from([1024, 1024.0, 4096, True]))
    blocks: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        blocks["tools"] = draw(st.lists(tools(), max_size=5))
    if draw(st.integers(0, 4)):
        blocks["system"] = draw(TEXT)
    if draw(st.booleans()):
        blocks["messages"] = draw(st.lists(st.fixed_dictionaries({"role": TEXT}), max_size=2))
    return CacheView(settings_, dict(draw(st.permutations(list(blocks.items())))))


@st.composite
def mutated(draw: st.DrawFn, view: CacheView) -> CacheView:
    settings_, blocks = dict(view.settings), dict(view.blocks)
    tool_list = list(blocks.get("tools", []))
    action = draw(
        st.sampled_from(
            ["reorder", "drop", "add", "describe", "keys", "system", "setting", "blocks", "type"]
        )
    )
    if action == "reorder" and tool_list:
        blocks["tools"] = draw(st.permutations(tool_list))
    elif action == "drop" and tool_list:
        blocks["tools"] = tool_list[:-1] if draw(st.booleans()) else tool_list[1:]
    elif action == "add":
        tool_list.insert(draw(st.integers(0, len(tool_list))), draw(tools()))
        blocks["tools"] = tool_list
    elif action == "describe" and tool_list:
        index = draw(st.integers(0, len(tool_list) - 1))
        tool_list[index] = {**tool_list[index], "description": draw(TEXT)}
        blocks["tools"] = tool_list
    elif action == "keys" and tool_list:
        tool_list[0] = dict(reversed(list(tool_list[0].items())))
        blocks["tools"] = tool_list
    elif action == "system":
        blocks["system"] = blocks.get("system", "") + draw(TEXT)
    elif action == "setting":
        settings_["model"] = draw(st.sampled_from(["m", "m2", 1]))
    elif action == "blocks":
        blocks = dict(draw(st.permutations(list(blocks.items()))))
        if blocks and draw(st.booleans()):
            blocks.pop(draw(st.sampled_from(sorted(blocks))))
    elif action == "type" and tool_list:
        tool_list[-1] = {**tool_list[-1], "parameters": draw(PARAMETERS)}
        blocks["tools"] = tool_list
    return CacheView(settings_, blocks)


@st.composite
def view_pairs(draw: st.DrawFn) -> tuple[CacheView, CacheView]:
    a = draw(views())
    how = draw(st.sampled_from(["same", "independent", "mutated", "mutated", "mutated"]))
    if how == "same":
        return a, a
    if how == "independent":
        return a, draw(views())
    return a, draw(mutated(a))


def _enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


@pytest.mark.slow
@settings(FAST, max_examples=examples(200))
@given(view_pairs())
def test_the_drift_report_points_at_the_real_first_difference(
    pair: tuple[CacheView, CacheView],
) -> None:
    a, b = pair
    bytes_a, bytes_b = canonical_bytes(a), canonical_bytes(b)
    report = compare(a, b)

    assert report.identical == (bytes_a == bytes_b)
    if report.identical:
        assert report.offset == -1 and report.pointer == ""
        return
    offset = report.offset
    assert 0 <= offset <= min(len(bytes_a), len(bytes_b))
    assert bytes_a[:offset] == bytes_b[:offset]
    assert offset == min(len(bytes_a), len(bytes_b)) or bytes_a[offset] != bytes_b[offset]

    doc_a, doc_b = msgspec.json.decode(bytes_a), msgspec.json.decode(bytes_b)
    tokens = pointer_tokens(report.pointer)
    node_a, node_b = doc_a, doc_b
    for depth, token in enumerate(tokens):
        node_a, node_b = child(node_a, token), child(node_b, token)
        if depth < len(tokens) - 1:  # only the last step may be missing on one side
            assert node_a is not MISSING and node_b is not MISSING, report.pointer
    assert node_a is not MISSING or node_b is not MISSING
    assert node_a is MISSING or node_b is MISSING or _enc(node_a) != _enc(node_b)
    spans = [s for s in (member_span(doc_a, tokens), member_span(doc_b, tokens)) if s is not None]
    assert any(start <= offset < end for start, end in spans), (report.pointer, offset, spans)

    # the verdict names the first block, in cache order, whose bytes differ
    if _enc(doc_a["settings"]) != _enc(doc_b["settings"]):
        assert (report.block, report.verdict) == ("settings", "model_changed")
    elif report.kind != "block-order":
        # a's blocks, each block only b has at its place in b (the cache order b sends)
        order = [k for k in doc_a if k != "settings"]
        keys_b = [k for k in doc_b if k != "settings"]
        for index, key in enumerate(keys_b):
            if key not in doc_a:
                after = next((k for k in keys_b[index + 1 :] if k in order), None)
                order.insert(order.index(after) if after is not None else len(order), key)
        first = next(k for k in order if _enc(doc_a.get(k)) != _enc(doc_b.get(k)))
        assert report.block == first
    for render in (report.to_text, report.to_markdown, report.to_json):
        assert render()


def test_a_lone_surrogate_in_a_schema_key_gives_a_report_not_a_crash() -> None:
    a = CacheView({"model": "m"}, {"tools": [{"name": "bash", "parameters": {"\ud800": 1}}]})
    b = CacheView({"model": "m"}, {"tools": [{"name": "bash", "parameters": {"\ud800": 2}}]})
    report = compare(a, b)
    assert not report.identical and report.block == "tools"
