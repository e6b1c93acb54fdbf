"""The gate knows the providers' 2026 features: none of them is a false break.

Each test here failed before the rules pack: opting into the providers' own cache diagnostics,
an explicit OpenAI breakpoint that moves forward, a retention change called `model_changed`,
a setting no rule knows called a certain break. Requests go through a capture session to a
stand-in upstream, as an SDK sends them; `prefix_chain()` is what the plugin gates a test on.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from harness.capture import CaptureSession

ANTHROPIC = "https://api.anthropic.com/v1/messages"
CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
MARK = {"type": "ephemeral"}
BREAKPOINT = {"mode": "explicit"}


def session() -> CaptureSession:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"id": "resp_1", "ok": True})

    return CaptureSession(upstream=httpx2.MockTransport(answer))


def send(*bodies: dict[str, Any], url: str) -> CaptureSession:
    capture = session()
    for body in bodies:
        capture.httpx2_client().post(url, content=json.dumps(body, separators=(",", ":")))
    return capture


def claude(turns: int, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"reply {turn}"})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {turn}"}]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": [{"type": "text", "text": "You plan trips.", "cache_control": MARK}],
        "messages": messages,
        **extra,
    }


def responses(turns: int, **extra: Any) -> dict[str, Any]:
    """A GPT-5.6 Responses conversation whose explicit breakpoint sits on the newest input."""
    items: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            items.append(
                {"role": "assistant", "content": [{"type": "output_text", "text": f"r{turn}"}]}
            )
        items.append({"role": "user", "content": [{"type": "input_text", "text": f"q{turn}"}]})
    items[-1]["content"][-1]["prompt_cache_breakpoint"] = BREAKPOINT
    return {"model": "gpt-5.6", "instructions": "Be brief.", "input": items, **extra}


def chat(turns: int, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "developer", "content": "Be brief."}]
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"r{turn}"})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"q{turn}"}]})
    messages[-1]["content"][-1]["prompt_cache_breakpoint"] = BREAKPOINT
    return {"model": "gpt-5.6", "messages": messages, **extra}


def test_anthropic_cache_diagnostics_that_change_every_turn_never_break_the_prefix() -> None:
    capture = send(
        claude(1, diagnostics={"previous_message_id": "msg_01"}),
        claude(2, diagnostics={"previous_message_id": "msg_02"}),
        url=ANTHROPIC,
    )
    assert capture.prefix_breaks() == []  # was model_changed: every conversation failed
    assert capture.prefix_chain().warnings == []
    assert capture.requests[0].split is not None
    assert capture.requests[0].split.bookkeeping["diagnostics"] == {"previous_message_id": "msg_01"}


def test_openai_comparison_response_ids_never_break_the_prefix() -> None:
    capture = send(
        responses(1, prompt_cache_options={"comparison_response_id": "resp_1"}),
        responses(2, prompt_cache_options={"comparison_response_id": "resp_2"}),
        url=RESPONSES,
    )
    assert capture.prefix_breaks() == [] and capture.prefix_chain().warnings == []


def test_bookkeeping_fields_never_break_the_prefix() -> None:
    capture = send(
        claude(1, metadata={"user_id": "u1"}, stream=False, max_tokens=64),
        claude(2, metadata={"user_id": "u2"}, stream=True, max_tokens=4096),
        url=ANTHROPIC,
    )
    assert capture.prefix_breaks() == []
    capture = send(chat(1, user="a", max_completion_tokens=10), chat(2, user="b"), url=CHAT)
    assert capture.prefix_breaks() == []


def test_an_explicit_openai_breakpoint_that_moves_forward_is_an_extension() -> None:
    assert send(responses(1), responses(2), responses(3), url=RESPONSES).prefix_breaks() == []
    assert send(chat(1), chat(2), url=CHAT).prefix_breaks() == []  # was input_changed


def test_an_openai_breakpoint_ttl_change_at_the_same_place_is_a_ttl_verdict() -> None:
    first = responses(1)
    second = responses(2)
    second["input"][0]["content"][0]["prompt_cache_breakpoint"] = {**BREAKPOINT, "ttl": "12h"}
    first["input"][0]["content"][0]["prompt_cache_breakpoint"] = {**BREAKPOINT, "ttl": "30m"}
    (found,) = send(first, second, url=RESPONSES).prefix_breaks()
    assert found.verdict == "cache_ttl_changed"


def test_a_retention_change_has_its_own_word_and_is_a_warning() -> None:
    for before, after, word in (
        (
            {"prompt_cache_retention": "in_memory"},
            {"prompt_cache_retention": "24h"},
            "prompt_cache_retention_changed",
        ),
        (
            {"prompt_cache_options": {"ttl": "30m"}},
            {"prompt_cache_options": {"ttl": "12h"}},
            "prompt_cache_ttl_changed",
        ),
    ):
        chain = send(responses(1, **before), responses(2, **after), url=RESPONSES).prefix_chain()
        assert chain.breaks == []  # was model_changed, a certain break
        (found,) = chain.warnings
        assert found.verdict == word and ("retention" in word or "ttl" in word)
        assert found.severity == "warning"
        assert "model_changed" not in found.to_text()
        assert "whose cache effect is not documented" in found.to_text()


def test_a_setting_no_rule_knows_is_an_unknown_effect_not_a_certain_break() -> None:
    chain = send(
        responses(1, truncation="auto"), responses(2, truncation="disabled"), url=RESPONSES
    ).prefix_chain()
    assert chain.breaks == []
    (found,) = chain.warnings
    assert (found.verdict, found.report.kind) == ("unknown_setting_changed", "unknown-setting")
    assert found.bytes_lost == 0 and "at stake" in found.to_text()
    assert "a setting no rule knows changed (truncation" in found.report.summary


def test_an_unknown_setting_beside_a_moved_tool_is_the_tools_verdict() -> None:
    tools = [{"type": "function", "name": name, "parameters": {}} for name in ("a", "b")]
    (found,) = send(
        responses(1, truncation="auto", tools=tools),
        responses(2, truncation="disabled", tools=tools[::-1]),
        url=RESPONSES,
    ).prefix_breaks()
    assert (found.verdict, found.severity) == ("tools_changed", "error")


def test_a_known_setting_still_breaks_for_certain() -> None:
    (found,) = send(
        responses(1, reasoning={"effort": "low"}),
        responses(2, reasoning={"effort": "high"}),
        url=RESPONSES,
    ).prefix_breaks()
    assert (found.verdict, found.severity) == ("reasoning_effort_changed", "error")


def test_a_compacted_context_is_named_context_compacted() -> None:
    compacted = responses(1)
    compacted["input"] = [
        {"type": "compaction", "encrypted_content": "gAAAA-summary"},
        *compacted["input"],
    ]
    chain = send(responses(3), compacted, url=RESPONSES).prefix_chain()
    assert chain.breaks == []
    (found,) = chain.warnings
    assert (found.verdict, found.report.kind) == ("context_compacted", "compaction")
    assert "compacted the context" in found.report.summary


def test_a_moved_anthropic_breakpoint_is_still_an_extension_and_an_edit_still_breaks() -> None:
    assert send(claude(1), claude(2), claude(3), url=ANTHROPIC).prefix_breaks() == []
    edited = claude(2)
    edited["system"][0]["text"] = "You plan walks."
    (found,) = send(claude(1), edited, url=ANTHROPIC).prefix_breaks()
    assert found.verdict == "system_changed"


def test_a_responses_verbosity_change_is_named_verbosity_not_the_text_format() -> None:
    (found,) = send(
        responses(1, text={"format": {"type": "text"}, "verbosity": "low"}),
        responses(2, text={"format": {"type": "text"}, "verbosity": "high"}),
        url=RESPONSES,
    ).prefix_breaks()
    assert found.verdict == "verbosity_changed"  # OpenAI's own miss reason; was text_format
    (found,) = send(
        responses(1, text={"format": {"type": "text"}, "verbosity": "low"}),
        responses(2, text={"format": {"type": "json_object"}, "verbosity": "low"}),
        url=RESPONSES,
    ).prefix_breaks()
    assert found.verdict == "text_format_changed"
    same = responses(2, text={"verbosity": "low"})
    assert send(responses(1, text={"verbosity": "low"}), same, url=RESPONSES).prefix_breaks() == []
