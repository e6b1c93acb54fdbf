"""prove_stable: permutations of registration units, PYTHONHASHSEED subprocesses, capture builds.

The PYTHONHASHSEED subprocesses import this module to find their build, so it imports the
`anthropic` SDK (seconds to import) only inside the tests that use it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from harness import CacheView
from harness._shared._files import decode
from harness.agent import Header, LlmConfig, Request, ToolSchema
from harness.capture import CaptureFile, CaptureSession, current_session
from harness.prove._builds import unit_name, view_of_value
from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import (
    StabilityResult,
    make_prove_stable_fixture,
    orders_of,
    prove_stable,
)
from tests.support.stand_ins import anthropic_message

# -- a user's registry ---------------------------------------------------------------------------


def search(query: str) -> str:
    """Search the docs."""
    return query


def fetch(url: str) -> str:
    """Fetch a page."""
    return url


def summarize(text: str) -> str:
    """Summarize text."""
    return text


def translate(text: str) -> str:
    """Translate text."""
    return text


UNITS = [search, fetch, summarize, translate]


def schema(function: Any) -> dict[str, Any]:
    return {
        "name": function.__name__,
        "description": function.__doc__,
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }


def body(tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 256,
        "system": "You are a research agent.",
        "tools": tools,
        "messages": [{"role": "user", "content": "Find the changelog."}],
        **extra,
    }


def racy_build(order: list[Any]) -> dict[str, Any]:
    """Tools in registration order: what a registry filled by concurrent plugin loads sends."""
    return body([schema(function) for function in order])


def sorted_build(order: list[Any]) -> dict[str, Any]:
    return body(sorted((schema(function) for function in order), key=lambda tool: tool["name"]))


# A registry kept in a set: the same order for the whole process, another in the next one.
SET_REGISTRY = frozenset({"search", "fetch", "summarize", "translate", "calendar", "weather"})


def set_build(order: list[Any]) -> dict[str, Any]:
    """Ignores the registration order entirely (so in-process shuffles pass) but iterates a set."""
    return body([{"name": name, "description": name, "input_schema": {}} for name in SET_REGISTRY])


def set_build_sorted(order: list[Any]) -> dict[str, Any]:
    names = sorted(SET_REGISTRY)
    return body([{"name": name, "description": name, "input_schema": {}} for name in names])


# -- permutations --------------------------------------------------------------------------------


def test_a_racy_registry_fails_with_the_seed_orders_and_report() -> None:
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(racy_build, UNITS, permutations=6, seed=1234, command="pytest -k racy")

    drift = caught.value
    report = drift.report
    assert report is not None
    assert drift.seed == 1234
    assert drift.orders is not None and drift.orders[0] == (
        "search",
        "fetch",
        "summarize",
        "translate",
    )
    assert report.block == "tools" and report.verdict == "tools_changed"
    assert report.kind == "reorder" and report.tool == "translate"  # first out of place, order B
    assert report.offset > 0 and report.prefix_bytes_lost > 0
    text = str(drift)
    for expected in (
        "seed 1234",
        "first out of place",
        f"byte {report.offset}",
        "cached bytes",
        "reproduce:       pytest -k racy",
        "order (order B): translate, summarize, fetch, search",
    ):
        assert expected in text, expected


def test_the_same_registry_sorted_passes() -> None:
    result = prove_stable(sorted_build, UNITS, permutations=8, seed=99)
    assert isinstance(result, StabilityResult)
    assert len(result.orders) == 8 and len(set(result.header_bytes)) == 1
    assert result.orders[1] == ["translate", "summarize", "fetch", "search"]


def test_stability_is_not_alphabetical_order() -> None:
    def builtins_first(order: list[Any]) -> dict[str, Any]:
        names = sorted(function.__name__ for function in order)
        names.remove("search")
        return body([{"name": name} for name in ["search", *names]])

    result = prove_stable(builtins_first, UNITS, permutations=5, seed=3)
    assert len(set(result.header_bytes)) == 1  # one header for every order...
    assert len({tuple(order) for order in result.orders}) > 1  # ...of several orders
    assert b'"search"' in result.header_bytes[0]
    first_tool = result.header_bytes[0].index(b'"name"')
    assert result.header_bytes[0][first_tool:].startswith(b'"name":"search"')  # not a-z order


def test_a_difference_after_the_last_breakpoint_is_a_note_not_a_failure() -> None:
    mark = {"type": "ephemeral"}

    def build(order: list[Any]) -> dict[str, Any]:
        names = ", ".join(unit_name(u) for u in order)  # order leaks into the latest turn only
        return {
            "model": "claude-test",
            "system": [{"type": "text", "text": "s", "cache_control": mark}],
            "tools": [schema(function) for function in sorted(order, key=unit_name)],
            "messages": [{"role": "user", "content": f"enabled: {names}"}],
        }

    result = prove_stable(build, UNITS, permutations=3, seed=1)
    assert result.notes and "only after the last cache_control breakpoint" in result.notes[0]

    def without_breakpoint(order: list[Any]) -> dict[str, Any]:
        request = build(order)
        request["system"] = "s"
        request["cache_control"] = mark  # automatic caching of the whole request
        return request

    with pytest.raises(HeaderDrift):
        prove_stable(without_breakpoint, UNITS, permutations=3, seed=1)


def test_a_build_whose_request_count_depends_on_the_order_fails() -> None:
    def build(order: list[Any]) -> list[CacheView]:
        first = CacheView({}, {"tools": ["a"]})
        return [first] if order[0] is search else [first, first]

    with pytest.raises(HeaderDrift, match="sent 1 requests, order B sent 2"):
        prove_stable(build, UNITS, permutations=2)


def test_build_errors_say_which_order_was_running() -> None:
    def build(order: list[Any]) -> dict[str, Any]:
        if order[0] is translate:
            raise RuntimeError("boom")
        return sorted_build(order)

    with pytest.raises(RuntimeError) as caught:
        prove_stable(build, UNITS, permutations=2, seed=5)
    assert "while building order 2 of 2 (seed 5)" in "\n".join(caught.value.__notes__)


def test_what_a_build_may_return() -> None:
    config = LlmConfig("anthropic", "claude-test")
    tools = (ToolSchema("a", "A.", {}),)
    header = Header(config, "system", tools)
    request = Request(provider="anthropic", model="claude-test", tools=tools, session_id="s")
    assert list(view_of_value(header).blocks) == ["tools", "system"]
    assert "session_id" not in view_of_value(request).settings
    assert view_of_value(json.dumps(body([]))).provider == "anthropic"
    assert view_of_value([{"name": "a"}]).blocks == {"tools": [{"name": "a"}]}
    with pytest.raises(TypeError, match="build\\(\\) returned int"):
        view_of_value(3)
    with pytest.raises(TypeError, match="no capture session recorded a request"):
        prove_stable(lambda order: None, UNITS, permutations=2)


def test_orders_and_names() -> None:
    orders = orders_of([1, 2, 3], 4, seed=7)
    assert orders[:2] == [[1, 2, 3], [3, 2, 1]] and orders == orders_of([1, 2, 3], 4, seed=7)
    assert unit_name(search) == "search" and unit_name("github") == "github"


# -- PYTHONHASHSEED ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_set_ordered_registry_passes_in_process_but_fails_across_hash_seeds() -> None:
    prove_stable(set_build, UNITS, permutations=8, seed=11)  # one process: one set order

    with pytest.raises(HeaderDrift) as caught:
        prove_stable(set_build, UNITS, permutations=2, seed=11, hash_seeds=(0, 1, 2, 3))

    drift = caught.value
    assert drift.hash_seeds is not None and drift.hash_seeds[0] == 0
    assert drift.report is not None and drift.report.block == "tools"
    assert "header drift under PYTHONHASHSEED" in str(drift)
    assert f"PYTHONHASHSEED={drift.hash_seeds[1]}" in str(drift)


@pytest.mark.slow
def test_the_same_set_registry_sorted_passes_across_hash_seeds() -> None:
    result = prove_stable(set_build_sorted, UNITS, permutations=2, hash_seeds=(0, 1))
    assert result.hash_seeds == (0, 1)
    # a "module:function" string works as the build too
    prove_stable(
        f"{__name__}:set_build_sorted", ["search", "fetch"], permutations=2, hash_seeds=(2,)
    )


def test_hash_seed_runs_need_importable_builds_and_units() -> None:
    with pytest.raises(TypeError, match="local function or a lambda"):
        prove_stable(lambda order: body([]), UNITS, permutations=1, hash_seeds=(0, 1))

    class Plugin:  # a local class: a subprocess cannot rebuild instances of it
        name = "local"

    with pytest.raises(TypeError, match="cannot be rebuilt in a subprocess"):
        prove_stable(set_build_sorted, [Plugin()], permutations=1, hash_seeds=(0, 1))


# -- builds that send requests through a capture session -----------------------------------------


def provider(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json=anthropic_message("ok"))


def send_racy(order: list[Any]) -> None:
    """Module level: sends through whatever session prove_stable runs it in."""
    import anthropic

    session = current_session()
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
    client.messages.create(**racy_build(order))


def send_set_ordered(order: list[Any]) -> None:
    """Raw httpx2, to keep the PYTHONHASHSEED subprocesses light."""
    current_session().httpx2_client().post(
        "https://api.anthropic.com/v1/messages", json=set_build(order)
    )


def test_a_racy_registry_fails_through_the_real_sdk_and_the_sorted_one_passes() -> None:
    session = CaptureSession(upstream=httpx2.MockTransport(provider))
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(send_racy, UNITS, permutations=4, seed=8, capture=session)
    assert caught.value.report is not None and caught.value.report.block == "tools"
    assert "the request bodies as sent first differ at byte" in str(caught.value)

    import anthropic

    def send_sorted(order: list[Any]) -> None:
        client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
        client.messages.create(**sorted_build(order))

    result = prove_stable(send_sorted, UNITS, permutations=4, seed=8, capture=session)
    assert len(result.views) == 4 and all(len(views) == 1 for views in result.views)
    assert session.requests == []  # proof builds are not the test's own conversation


def test_proof_answers_are_recorded_once_and_replayed_by_position(tmp_path: Any) -> None:
    path = tmp_path / "proof.json"
    recording = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=httpx2.MockTransport(provider)
    )
    run = make_prove_stable_fixture(seed=4, permutations=5, command=None, capture=recording)
    run(lambda order: send_racy(sorted(order, key=unit_name)), UNITS)
    files, _ = recording.finish()
    cassette = decode(files[0][1], CaptureFile, path)
    assert cassette.exchanges == ()
    assert len(cassette.proofs) == 1 and len(cassette.proofs[0].exchanges) == 1
    assert cassette.proofs[0].units == ("search", "fetch", "summarize", "translate")
    path.write_bytes(files[0][1])

    replay = CaptureSession.for_test(path, "check", writes_allowed=True)  # no upstream
    result = make_prove_stable_fixture(4, 3, None, replay)(
        lambda order: send_racy(sorted(order, key=unit_name)), UNITS, permutations=6
    )
    assert len(result.orders) == 6 and result.seed == 4
    assert replay.finish() == ([], [])


@pytest.mark.slow
def test_hash_seed_children_get_the_first_builds_answers() -> None:
    session = CaptureSession(upstream=httpx2.MockTransport(provider))
    prove_stable(send_set_ordered, UNITS, permutations=3, capture=session)  # in-process: fine
    with pytest.raises(HeaderDrift, match="PYTHONHASHSEED"):
        prove_stable(send_set_ordered, UNITS, permutations=1, capture=session, hash_seeds=(0, 1, 2))


def test_proof_entries_follow_the_update_modes(tmp_path: Any) -> None:
    path = tmp_path / "proof.json"

    def session(mode: str) -> CaptureSession:
        upstream = httpx2.MockTransport(provider)
        return CaptureSession.for_test(path, mode, writes_allowed=True, upstream=upstream)

    def run(capture: CaptureSession, build: Any, units: list[Any] = UNITS) -> list[Any]:
        prove_stable(build, units, permutations=3, capture=capture)
        return capture.finish().files

    first = run(session("record"), lambda order: send_racy(sorted(order, key=unit_name)))
    path.write_bytes(first[0][1])

    def reversed_build(order: list[Any]) -> None:  # a deliberate change: reverse-sorted tools
        send_racy(sorted(order, key=unit_name, reverse=True))

    # check mode answers proof builds by position: a stable header that changed on purpose still
    # proves stable (pinning the bytes is the job of the test's own replayed requests)
    strict = CaptureSession.for_test(path, "check", writes_allowed=True)
    prove_stable(reversed_build, UNITS, permutations=2, capture=strict)
    assert strict.finish() == ([], [])
    files = run(session("update"), reversed_build)
    proof = decode(files[0][1], CaptureFile, path).proofs[0]
    assert proof.exchanges[0].request.json["tools"][0]["name"] == "translate"
    assert run(session("update-new-only"), reversed_build) == []
