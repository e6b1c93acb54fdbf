"""More stacks, as a user meets them (issue 34): AutoGen, Haystack and a litellm Router.

Each builds its own model client, unmodified; the capture reaches it, `harness.upstream.StandIn`
answers it, `prove_stable` judges one turn, and the gate judges the conversation. AutoGen's
reflection call (`reflect_on_tool_use=True`) drops the tools and `tool_choice`: a real cache
break the user cannot change, which `known_moves` waives by name while every other move is
still judged.

Not here, and why (decision 0024): langchain-mcp-adapters needs mcp 1.x (the suite's MCP tests
use mcp 2.3); Semantic Kernel, CrewAI and Google ADK bring hundreds of megabytes (Azure, WebRTC,
vector stores, Kubernetes clients) or pin google-genai below the suite's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness import prove_stable
from harness.capture import CaptureConfig, CaptureSession
from harness.capture._waivers import waive
from harness.upstream import StandIn, text, tool_call

pytestmark = pytest.mark.slow  # each imports an agent framework


def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def search(query: str) -> str:
    """Search the web."""
    return "nothing"


def autogen_turn() -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def turn() -> None:
        client = OpenAIChatCompletionClient(model="gpt-4o", api_key="sk-test-not-a-key")
        agent = AssistantAgent(
            "helper", model_client=client, tools=[get_weather, search], reflect_on_tool_use=True
        )
        await agent.run(task="Weather in Paris?")

    asyncio.run(turn())


def test_autogen_is_captured_proved_and_its_reflection_move_waived_by_name() -> None:
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.openai")
    script = [tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris.")]
    session = CaptureSession(upstream=StandIn(script))
    with session.intercept():
        autogen_turn()
        result = prove_stable(autogen_turn, permutations=2, capture=session)
    assert [r.provider for r in session.requests] == ["openai-chat", "openai-chat"]
    assert [len(run) for run in result.views] == [2, 2]
    breaks = session.prefix_breaks()
    # the reflection call drops the tools (and tool_choice, bookkeeping on OpenAI)
    assert [b.verdict for b in breaks] == ["tools_changed"]
    known = CaptureConfig.of(
        {"known_moves": [{"reason": "AutoGen's reflection call", "only": "tools_changed"}]}
    ).known_moves
    kept, waived = waive(breaks, known)
    assert kept == [] and len(waived) == 1
    kept, _ = waive(
        breaks, CaptureConfig.of({"known_moves": [{"reason": "r", "only": "system"}]}).known_moves
    )
    assert kept == breaks  # the near miss: a waiver for another move waives nothing here


def haystack_turn(names: tuple[str, ...] = ("search", "weather")) -> None:
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.tools import Tool
    from haystack.utils import Secret

    def run() -> str:
        return "x"

    tools = [
        Tool(name=n, description=f"The {n} tool.", parameters={"type": "object"}, function=run)
        for n in names
    ]
    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("sk-test-not-a-key"), model="gpt-4o-mini", tools=tools
    )
    generator.run(messages=[ChatMessage.from_user("Weather in Paris?")])


def test_haystack_is_captured_and_proved() -> None:
    pytest.importorskip("haystack")
    session = CaptureSession(upstream=StandIn(["Sunny."]))
    with session.intercept():
        result = prove_stable(haystack_turn, permutations=3, capture=session)
    [request] = result.views[0]
    assert [t["function"]["name"] for t in request.blocks["tools"]] == ["search", "weather"]


def test_a_litellm_router_is_captured_and_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    # litellm downloads its price list on first import unless told not to (no network in CI)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")

    def turn() -> Any:
        router = litellm.Router(
            model_list=[
                {
                    "model_name": "default",
                    "litellm_params": {"model": "openai/gpt-4o", "api_key": "sk-test-not-a-key"},
                }
            ]
        )
        tools = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in ("search", "weather")
        ]
        return router.completion(
            model="default", messages=[{"role": "user", "content": "Hi"}], tools=tools
        )

    session = CaptureSession(upstream=StandIn(["Sunny."]))
    with session.intercept():
        result = prove_stable(turn, permutations=2, capture=session)
    assert [len(run) for run in result.views] == [1, 1]
    assert result.views[0][0].provider == "openai-chat"
