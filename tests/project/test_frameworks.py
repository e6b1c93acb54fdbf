"""Capture reaches what frameworks send, with no client handed in: record once, replay offline.

Each framework builds its own HTTP client (pydantic-ai's providers, openai-agents' default
client, LangChain's chat models, an agent fed by an MCP server's tools). Each agent here has the
same three tools and answers one question with a tool call. The test records it through
`session.intercept()` against a stand-in API, replays it with no upstream at all, and then shows
the replay failing on the bug the harness exists for: the same tools in another order, or one
tool's description edited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.capture import CaptureSession, CassetteMismatch
from tests.support.stand_ins import ANSWER, StandInApi

# The frameworks take seconds to import, and each test imports one.
pytestmark = pytest.mark.slow

Run = Callable[[Sequence[tuple[str, str]]], str]  # the agent, given its tools: its answer

QUESTION = "Is it a good day for a walk in Paris?"
TOOLS: tuple[tuple[str, str], ...] = (
    ("get_weather", "Current weather for a city."),
    ("get_forecast", "Three-day forecast for a city."),
    ("geocode", "Coordinates of a city."),
)
REORDERED = (TOOLS[1], TOOLS[0], TOOLS[2])
EDITED = (("get_weather", "The weather in a city, now."), TOOLS[1], TOOLS[2])


def tool_function(name: str, description: str) -> Callable[[str], str]:
    def tool(city: str) -> str:
        return f"{name}({city}): sunny, 21C"

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = description
    return tool


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    yield


def prove_capture(tmp_path: Path, run: Run, provider: str) -> None:
    """Record `run` once, replay it offline, and fail it on a reordered and an edited tool."""
    path = tmp_path / "cassette.json"
    api = StandInApi()
    recording = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=api.transport()
    )
    with recording.intercept():
        assert ANSWER in run(TOOLS)
    assert len(api.bodies) == 2, "a tool call, then the answer"
    assert [r.split.provider for r in recording.requests if r.split] == [provider] * 2
    files, breaks = recording.finish()
    assert breaks == []
    path.write_bytes(files[0][1])

    replay = CaptureSession.for_test(path, "check", writes_allowed=False)  # no upstream: offline
    with replay.intercept():
        assert ANSWER in run(TOOLS)
    assert [r.source for r in replay.requests] == ["cassette", "cassette"]
    assert replay.errors == [] and replay.prefix_breaks() == []

    for tools, kind in ((REORDERED, "reorder"), (EDITED, "content")):
        broken = CaptureSession.for_test(path, "check", writes_allowed=False)
        with broken.intercept(), pytest.raises(Exception) as caught:
            run(tools)
        mismatch = next(e for e in broken.errors if isinstance(e, CassetteMismatch))
        assert mismatch.report is not None
        assert (mismatch.report.verdict, mismatch.report.kind) == ("tools_changed", kind)
        assert mismatch.report.tool == ("get_forecast" if kind == "reorder" else "get_weather")
        assert caught.value is not None  # raised through the framework (maybe wrapped by it)


# -- pydantic-ai ----------------------------------------------------------------------------


def pydantic_ai_agent(model: str) -> Run:
    from pydantic_ai import Agent, Tool

    def run(tools: Sequence[tuple[str, str]]) -> str:
        agent = Agent(
            model,
            instructions="You help people plan their day. Use the tools.",
            tools=[Tool(tool_function(n, d), name=n, description=d) for n, d in tools],
        )
        return str(agent.run_sync(QUESTION).output)

    return run


@pytest.mark.usefixtures("keys")
def test_pydantic_ai_on_anthropic(tmp_path: Path) -> None:
    prove_capture(tmp_path, pydantic_ai_agent("anthropic:claude-sonnet-4-5"), "anthropic")


@pytest.mark.usefixtures("keys")
def test_pydantic_ai_on_openai_responses(tmp_path: Path) -> None:
    prove_capture(tmp_path, pydantic_ai_agent("openai:gpt-4.1"), "openai-responses")


# -- openai-agents --------------------------------------------------------------------------


@pytest.mark.usefixtures("keys")
def test_openai_agents(tmp_path: Path) -> None:
    from agents import Agent, Runner, function_tool

    def run(tools: Sequence[tuple[str, str]]) -> str:
        agent = Agent(
            name="day planner",
            instructions="You help people plan their day. Use the tools.",
            model="gpt-4.1",
            tools=[
                function_tool(tool_function(n, d), name_override=n, description_override=d)
                for n, d in tools
            ],
        )
        return str(Runner.run_sync(agent, QUESTION).final_output)

    prove_capture(tmp_path, run, "openai-responses")


# -- LangChain ------------------------------------------------------------------------------


def langchain_agent(make_model: Callable[[], Any]) -> Run:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import StructuredTool

    def run(tools: Sequence[tuple[str, str]]) -> str:
        functions = {
            n: StructuredTool.from_function(tool_function(n, d), name=n, description=d)
            for n, d in tools
        }
        model = make_model().bind_tools(list(functions.values()))
        messages: list[Any] = [HumanMessage(QUESTION)]
        for _ in range(3):
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return str(reply.text)
            for call in reply.tool_calls:
                result = functions[call["name"]].invoke(call["args"])
                messages.append(ToolMessage(result, tool_call_id=call["id"]))
        raise AssertionError("no answer")

    return run


@pytest.mark.usefixtures("keys")
def test_langchain_anthropic(tmp_path: Path) -> None:
    from langchain_anthropic import ChatAnthropic

    run = langchain_agent(lambda: ChatAnthropic(model="claude-sonnet-4-5", max_retries=0))
    prove_capture(tmp_path, run, "anthropic")


@pytest.mark.usefixtures("keys")
def test_langchain_openai(tmp_path: Path) -> None:
    from langchain_openai import ChatOpenAI

    run = langchain_agent(lambda: ChatOpenAI(model="gpt-4.1", max_retries=0))
    prove_capture(tmp_path, run, "openai-chat")


# -- an MCP client whose tools feed the anthropic SDK ---------------------------------------


def mcp_agent() -> Run:
    import anthropic
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    def run(tools: Sequence[tuple[str, str]]) -> str:
        server = MCPServer("weather")
        for name, description in tools:
            server.add_tool(tool_function(name, description), name=name, description=description)

        async def converse() -> str:
            client = anthropic.AsyncAnthropic()  # the agent's own client
            async with Client(server) as mcp:
                listed = (await mcp.list_tools()).tools
                schemas: Any = [
                    {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                    for t in listed
                ]
                messages: list[Any] = [{"role": "user", "content": QUESTION}]
                for _ in range(3):
                    reply = await client.messages.create(
                        model="claude-sonnet-4-5", max_tokens=256, tools=schemas, messages=messages
                    )
                    messages.append({"role": "assistant", "content": reply.content})
                    calls = [block for block in reply.content if block.type == "tool_use"]
                    if not calls:
                        return "".join(b.text for b in reply.content if b.type == "text")
                    results = []
                    for call in calls:
                        result = await mcp.call_tool(call.name, dict(call.input))
                        text = "".join(getattr(part, "text", "") for part in result.content)
                        results.append(
                            {"type": "tool_result", "tool_use_id": call.id, "content": text}
                        )
                    messages.append({"role": "user", "content": results})
            raise AssertionError("no answer")

        return asyncio.run(converse())

    return run


@pytest.mark.usefixtures("keys")
def test_mcp_tools_feeding_the_anthropic_sdk(tmp_path: Path) -> None:
    prove_capture(tmp_path, mcp_agent(), "anthropic")
