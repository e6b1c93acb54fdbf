"""The prefix-chain gate compares what the provider caches, as sent (defects 2 and 3 of issue 24).

Before, a tool schema whose `properties` (or a tool object's own keys) swapped order between two
turns passed the gate for Anthropic and Bedrock, at record and in `harness check`, while OpenAI
Chat and replay caught it; and a plain-string system prompt that gained text between turns
passed, cut to the earlier request's length as if it were a growing conversation. Met as a user
meets them: a project recording through the anthropic SDK, and `harness check` on a cassette.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.capture import CaptureSession, check_prefix_chain
from tests.support.inner import inner_pytest
from tests.support.stand_ins import anthropic_message

BEDROCK_URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude/converse"

AGENT = """
import anthropic


def converse(system, tools_per_turn):
    client = anthropic.Anthropic(api_key="test-key-not-a-secret")
    messages = [{"role": "user", "content": "Paris tomorrow?"}]
    for tools in tools_per_turn:
        client.messages.create(model="claude-test", max_tokens=64, system=system(len(messages)),
                               tools=tools, messages=messages)
        messages = [*messages, {"role": "assistant", "content": "Sunny."},
                    {"role": "user", "content": "And then?"}]
"""

CONFTEST = """
import httpx2
import pytest

ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
          "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))
"""

TESTS = """
import pytest

import agent

CITY = {"type": "string"}
DAYS = {"type": "integer"}


def weather(properties):
    return {"name": "get_weather", "description": "The weather.",
            "input_schema": {"type": "object", "properties": properties}}


def fixed(turns):
    return "You plan trips."


@pytest.mark.header_capture
def test_properties_swap_order():
    agent.converse(fixed, [[weather({"city": CITY, "days": DAYS})],
                           [weather({"days": DAYS, "city": CITY})]])


@pytest.mark.header_capture
def test_a_tool_objects_keys_swap_order():
    tool = weather({"city": CITY})
    swapped = {key: tool[key] for key in reversed(list(tool))}
    agent.converse(fixed, [[tool], [swapped]])


@pytest.mark.header_capture
def test_the_system_prompt_gains_text():
    agent.converse(lambda turns: "You plan trips." + (" Be brief." if turns > 1 else ""),
                   [[weather({"city": CITY})]] * 2)


@pytest.mark.header_capture
def test_a_stable_conversation():
    agent.converse(fixed, [[weather({"city": CITY, "days": DAYS})]] * 3)
"""


def test_a_record_run_fails_on_key_order_and_on_a_grown_system_prompt(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=TESTS)
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert out.count("the prefix-chain gate failed") == 3
    assert "tools_changed: request 2" in out and "system_changed: request 2" in out
    cassettes = pytester.path / "fixtures" / "cassettes" / "test_agent"
    assert [p.name for p in cassettes.iterdir()] == ["test_a_stable_conversation.json"]


# -- harness check on a recorded cassette -------------------------------------------------------


def weather(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "get_weather",
        "description": "The weather.",
        "input_schema": {"type": "object", "properties": properties},
    }


CITY, DAYS = {"type": "string"}, {"type": "integer"}


def recorded(folder: Path, systems: list[Any], tools: list[list[Any]]) -> Path:
    """A cassette of one conversation, one request per turn, written as the plugin writes it."""
    path = folder / "fixtures" / "cassettes" / "tests" / "test_agent" / "test_turns.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = httpx2.MockTransport(lambda _: httpx2.Response(200, json=anthropic_message()))
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=answer)
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
    messages: list[Any] = [{"role": "user", "content": "Paris tomorrow?"}]
    for system, turn_tools in zip(systems, tools, strict=True):
        client.messages.create(
            model="claude-test", max_tokens=64, system=system, tools=turn_tools, messages=messages
        )
        messages = [
            *messages,
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And then?"},
        ]
    path.write_bytes(session.finish().files[0][1])
    return path


@pytest.mark.parametrize(
    ("systems", "tools", "verdict"),
    [
        (
            ["s", "s"],
            [[weather({"city": CITY, "days": DAYS})], [weather({"days": DAYS, "city": CITY})]],
            "tools_changed",
        ),
        (["You plan trips.", "You plan trips. Be brief."], [[weather({})]] * 2, "system_changed"),
        (["You plan trips. Be brief.", "You plan trips."], [[weather({})]] * 2, "system_changed"),
    ],
    ids=["properties-swapped", "system-grew", "system-shrank"],
)
def test_harness_check_finds_the_break_in_a_cassette(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    systems: list[Any],
    tools: list[list[Any]],
    verdict: str,
) -> None:
    from harness.cli import main

    recorded(tmp_path, systems, tools)
    code = main(["check", str(tmp_path / "fixtures")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"{verdict}: request 2" in out


def test_harness_check_passes_a_conversation_that_only_grows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    marked = [{"type": "text", "text": "You plan trips.", "cache_control": {"type": "ephemeral"}}]
    recorded(tmp_path, [marked] * 3, [[weather({"city": CITY, "days": DAYS})]] * 3)
    assert main(["check", str(tmp_path / "fixtures")]) == 0, capsys.readouterr().out


# -- the gate's own rule, per provider ------------------------------------------------------------


def bedrock(tools: list[Any], messages: list[Any], system: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "toolConfig": {"tools": tools},
        "messages": messages,
    }
    if system is not None:
        body["system"] = system
    return body


def test_bedrock_tools_whose_keys_swap_order_break_the_chain() -> None:
    spec = {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}
    swapped = {"inputSchema": spec["inputSchema"], "name": "get_weather"}
    point = {"cachePoint": {"type": "default"}}
    first = [{"role": "user", "content": [{"text": "Paris?"}, point]}]
    second = [
        {"role": "user", "content": [{"text": "Paris?"}]},
        {"role": "assistant", "content": [{"text": "Sunny."}]},
        {"role": "user", "content": [{"text": "Then?"}, point]},
    ]

    class Sent:
        def __init__(self, number: int, body: dict[str, Any]) -> None:
            from harness.capture._captured import split_exchange

            self.number, self.url, self.method = number, BEDROCK_URL, "POST"
            self.split = split_exchange("POST", BEDROCK_URL, (), json.dumps(body).encode())

        def continues_stored(self) -> bool:
            return False

    kept = check_prefix_chain(
        [
            Sent(1, bedrock([{"toolSpec": spec}], first)),
            Sent(2, bedrock([{"toolSpec": spec}], second)),
        ]
    )
    assert kept == []
    (broken,) = check_prefix_chain(
        [
            Sent(1, bedrock([{"toolSpec": spec}], first)),
            Sent(2, bedrock([{"toolSpec": swapped}], second)),
        ]
    )
    assert broken.block == "tools"


def test_a_list_system_cut_at_its_breakpoint_still_extends() -> None:
    """The near miss of defect 3: a system list whose breakpoint is on its first block keeps the
    cached prefix when a block is added after the breakpoint."""
    mark = {"type": "ephemeral"}
    first = {
        "model": "claude-test",
        "system": [{"type": "text", "text": "You plan trips.", "cache_control": mark}],
        "messages": [{"role": "user", "content": "Paris?"}],
    }
    second = {
        **first,
        "system": [*first["system"], {"type": "text", "text": "Today is Monday."}],
        "messages": [
            {"role": "user", "content": "Paris?"},
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "Then?"},
        ],
    }
    assert check_prefix_chain([first, second]) == []


def test_a_list_system_held_whole_that_gains_a_block_breaks() -> None:
    """Without a breakpoint in it, the system is cached whole: a block added at its end is a
    break, as a string that gains text is."""
    first = {
        "model": "claude-test",
        "system": [{"type": "text", "text": "You plan trips."}],
        "messages": [{"role": "user", "content": "Paris?"}],
    }
    second = {
        **first,
        "system": [*first["system"], {"type": "text", "text": "Today is Monday."}],
        "messages": [*first["messages"], {"role": "assistant", "content": "Sunny."}],
    }
    (broken,) = check_prefix_chain([first, second])
    assert broken.block == "system"
