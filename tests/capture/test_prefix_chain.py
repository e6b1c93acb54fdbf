"""The prefix-chain gate per endpoint: each request extends the prefix of the one it continues.

Requests go through a capture session's client to a stand-in upstream, as an SDK would send them;
the session's `prefix_chain()` is what the plugin gates every captured test on.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession, PrefixBroken

ANTHROPIC = "https://api.anthropic.com/v1/messages"
CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent"
BEDROCK = "https://bedrock-runtime.eu-west-1.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse"
MARK = {"type": "ephemeral"}


def session() -> CaptureSession:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"id": "resp_1", "ok": True})

    return CaptureSession(upstream=httpx2.MockTransport(answer))


def send(capture: CaptureSession, url: str, body: dict[str, Any]) -> None:
    capture.httpx2_client().post(url, content=json.dumps(body, separators=(",", ":")))


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"{name}.", "input_schema": {"type": "object"}}


def claude(
    system: str, turns: list[str], tools: tuple[str, ...] = ("bash", "grep")
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for index, text in enumerate(turns):
        if index:
            messages.append({"role": "assistant", "content": f"reply {index}"})
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    messages[-1]["content"][-1]["cache_control"] = MARK  # the breakpoint moves forward each turn
    return {
        "model": "claude-test",
        "max_tokens": 64,
        "system": [{"type": "text", "text": system, "cache_control": MARK}],
        "tools": [tool(name) for name in tools],
        "messages": messages,
    }


def gpt(turns: list[str], tools: tuple[str, ...] = ("f",)) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "developer", "content": "rules"}]
    for index, text in enumerate(turns):
        if index:
            messages.append({"role": "assistant", "content": f"reply {index}"})
        messages.append({"role": "user", "content": text})
    functions = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in tools]
    return {"model": "gpt-test", "messages": messages, "tools": functions}


def test_requests_to_other_endpoints_are_other_chains() -> None:
    capture = session()
    send(capture, ANTHROPIC, claude("Agent.", ["one"]))
    send(capture, CHAT, gpt(["one"]))
    send(capture, ANTHROPIC, claude("Agent.", ["one", "two"]))
    send(capture, CHAT, gpt(["one", "two"]))
    chain = capture.prefix_chain()
    assert chain.breaks == []
    assert dict(chain.seen) == {"anthropic": 2, "openai-chat": 2}
    assert dict(chain.judged) == {"anthropic": 1, "openai-chat": 1}
    assert chain.coverage() == "prefix chain: anthropic 2 (judged 1), openai-chat 2 (judged 1)"


def test_a_tool_moved_mid_conversation_breaks_naming_the_endpoint() -> None:
    capture = session()
    send(capture, ANTHROPIC, claude("Agent.", ["one"]))
    send(capture, CHAT, gpt(["one"]))
    send(capture, ANTHROPIC, claude("Agent.", ["one", "two"], tools=("grep", "bash")))
    (found,) = capture.prefix_breaks()
    assert (found.index, found.previous, found.block) == (3, 1, "tools")
    assert found.report.tool == "grep" and found.verdict == "tools_changed"
    assert "POST api.anthropic.com/v1/messages" in found.to_text()
    with pytest.raises(PrefixBroken, match="tools_changed: request 3"):
        capture.assert_prefix_extends()


def test_two_agents_taking_turns_on_one_endpoint_are_two_conversations() -> None:
    capture = session()
    send(capture, ANTHROPIC, claude("Planner.", ["plan a trip"]))
    send(capture, ANTHROPIC, claude("Executor.", ["book the train"]))
    send(capture, ANTHROPIC, claude("Planner.", ["plan a trip", "and a hotel"]))
    send(capture, ANTHROPIC, claude("Executor.", ["book the train", "first class"]))
    assert capture.prefix_breaks() == []

    send(capture, ANTHROPIC, claude("Executor!", ["book the train", "first class", "now"]))
    (found,) = capture.prefix_breaks()
    assert (found.index, found.previous, found.block) == (5, 4, "system")


def test_a_new_conversation_starts_a_chain_and_the_same_opening_may_start_over() -> None:
    capture = session()
    send(capture, CHAT, gpt(["first question", "more"]))
    send(capture, CHAT, gpt(["another question"]))  # a new conversation: nothing to extend
    send(capture, CHAT, gpt(["first question"]))  # back to an earlier point: still cached
    assert capture.prefix_breaks() == []

    send(capture, CHAT, gpt(["first question"], tools=("g",)))  # same opening, other tools
    (found,) = capture.prefix_breaks()
    assert (found.index, found.previous, found.block) == (4, 3, "tools")


def test_an_edited_first_message_in_a_longer_history_is_a_break() -> None:
    capture = session()
    send(capture, CHAT, gpt(["one", "two"]))
    send(capture, CHAT, gpt(["ONE", "two", "three"]))
    (found,) = capture.prefix_breaks()
    assert found.block == "messages" and found.report.pointer.startswith("/messages/0")


def test_gemini_models_are_endpoints_of_their_own() -> None:
    def body(tools: list[str], turns: int) -> dict[str, Any]:
        contents = [{"role": "user", "parts": [{"text": f"q{i}"}]} for i in range(turns)]
        return {
            "contents": contents,
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": n} for n in tools]}],
        }

    capture = session()
    send(capture, GEMINI.format(model="gemini-pro"), body(["a", "b"], 1))
    send(capture, GEMINI.format(model="gemini-flash"), body(["b", "a"], 1))
    send(capture, GEMINI.format(model="gemini-pro"), body(["a", "b"], 2))
    assert capture.prefix_breaks() == []
    send(capture, GEMINI.format(model="gemini-flash"), body(["a", "b"], 2))
    (found,) = capture.prefix_breaks()
    assert (found.index, found.previous, found.verdict) == (4, 2, "tools_changed")
    assert found.report.tool == "a"


def bedrock(tools: list[str], turns: int, system: str = "Be careful.") -> dict[str, Any]:
    point = {"cachePoint": {"type": "default"}}
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": [{"text": f"a{turn}"}]})
        messages.append({"role": "user", "content": [{"text": f"q{turn}"}]})
    messages[-1]["content"].append(point)  # the cache point moves forward each turn
    specs = [{"toolSpec": {"name": n, "inputSchema": {"json": {}}}} for n in tools]
    return {
        "messages": messages,
        "system": [{"text": system}, point],
        "toolConfig": {"tools": [*specs, point]},
    }


def test_bedrock_cache_points_move_forward_and_tools_may_not() -> None:
    capture = session()
    send(capture, BEDROCK, bedrock(["search", "fetch"], 1))
    send(capture, BEDROCK, bedrock(["search", "fetch"], 2))
    send(capture, BEDROCK, bedrock(["search", "fetch"], 3))
    assert capture.prefix_breaks() == []
    send(capture, BEDROCK, bedrock(["fetch", "search"], 4))
    (found,) = capture.prefix_breaks()
    assert (found.block, found.report.tool) == ("tools", "fetch")


def test_a_cache_ttl_changed_where_both_mark_the_same_place_is_named() -> None:
    capture = session()
    first = claude("Agent.", ["one"])
    send(capture, ANTHROPIC, first)
    second = claude("Agent.", ["one", "two"])
    second["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    send(capture, ANTHROPIC, second)
    (found,) = capture.prefix_breaks()
    assert found.verdict == "cache_ttl_changed"
    assert found.report.pointer == "/system/0/cache_control/ttl"


def test_a_stored_responses_continuation_is_judged_on_what_it_sends_again() -> None:
    def body(**extra: Any) -> dict[str, Any]:
        tools = [{"type": "function", "name": "f", "parameters": {}}]
        return {"model": "gpt-test", "instructions": "be brief", "tools": tools, **extra}

    capture = session()
    send(capture, RESPONSES, body(input="first"))
    send(capture, RESPONSES, body(input="next", previous_response_id="resp_1"))
    assert capture.prefix_breaks() == []
    send(capture, RESPONSES, body(input="again", previous_response_id="resp_1", tools=[]))
    (found,) = capture.prefix_breaks()
    assert (found.index, found.block) == (3, "tools")


def test_requests_no_provider_claims_are_counted_not_judged() -> None:
    capture = session()
    capture.httpx2_client().get("https://api.anthropic.com/v1/models")
    send(capture, ANTHROPIC, claude("Agent.", ["one"]))
    chain = capture.prefix_chain()
    assert chain.unrecognised == 1 and chain.seen["anthropic"] == 1
    assert chain.coverage().endswith("; 1 other request(s) not checked")
