"""`harness.upstream.StandIn`: every provider shape a project scripts, through the real SDKs.

Each test drives a provider's own SDK over the stand-in (as the client's transport, or as the
capture's `harness_upstream`): a scripted tool call, then the text once the tool's result is in
the conversation, streamed where the SDK asks for a stream, with usage counters; over `httpx` and
`httpx2` alike. The answers depend only on the request: the same request gets the same answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import httpx2
import pytest

from harness.capture import CaptureSession
from harness.upstream import StandIn, Turn, parallel, text, tool_call

WEATHER = {"city": "Paris"}
SCRIPT = [tool_call("get_weather", WEATHER), text("Sunny in Paris.")]
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object"}}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": {}}]


@pytest.fixture(params=["httpx2", "httpx"])
def library(request: pytest.FixtureRequest) -> Any:
    return httpx2 if request.param == "httpx2" else httpx


def test_anthropic_messages_call_the_tool_then_answer_in_text_streamed_or_not() -> None:
    import anthropic

    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=StandIn(SCRIPT)))
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.messages.create(model="m", max_tokens=9, tools=ANTHROPIC_TOOLS, messages=asked)
    call = first.content[0]
    assert (first.stop_reason, call.type, call.name, call.input) == (
        "tool_use",
        "tool_use",
        "get_weather",
        WEATHER,
    )
    assert first.usage.input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    answered = [
        *asked,
        {"role": "assistant", "content": [call.model_dump()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id}]},
    ]
    with client.messages.stream(
        model="m", max_tokens=9, tools=ANTHROPIC_TOOLS, messages=answered
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Sunny in Paris." and final.stop_reason == "end_turn"
    again = client.messages.create(model="m", max_tokens=9, tools=ANTHROPIC_TOOLS, messages=asked)
    assert again.content[0].id == call.id  # the same request, the same answer


def test_openai_chat_completions_over_httpx_and_httpx2(library: Any) -> None:
    import openai

    stand_in = StandIn(SCRIPT)
    client = openai.OpenAI(api_key="k", http_client=library.Client(transport=stand_in))
    asked: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="gpt-5", messages=asked, tools=CHAT_TOOLS)
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", WEATHER)
    assert first.usage is not None and first.usage.prompt_tokens_details.cached_tokens == 0
    asked += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    chunks = list(
        client.chat.completions.create(
            model="gpt-5",
            messages=asked,
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    words = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert words == "Sunny in Paris."
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert [r.shape for r in stand_in.requests] == ["openai-chat", "openai-chat"]


# slow: 2.0-2.5 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_openai_responses_stream_and_continue_a_stored_response() -> None:
    import openai

    client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=StandIn(SCRIPT)))
    with client.responses.stream(model="gpt-5", input="Weather?", tools=RESPONSES_TOOLS) as s:
        first = s.get_final_response()
    call = first.output[0]
    assert call.type == "function_call" and json.loads(call.arguments) == WEATHER
    # the next request carries only the tool's output: its turn is read from the response id
    follow = client.responses.create(
        model="gpt-5",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    )
    assert follow.output_text == "Sunny in Paris."
    assert follow.usage is not None and follow.usage.input_tokens_details.cached_tokens == 0


def test_the_anthropic_tool_runner_on_a_server_held_thread_reaches_its_last_turn() -> None:
    anthropic = pytest.importorskip("anthropic")
    if not hasattr(anthropic, "beta_tool"):
        pytest.skip("an anthropic without the tool runner")

    @anthropic.beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    stand_in = StandIn([tool_call("get_weather", {"city": c}) for c in ("Paris", "Rome")])
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=stand_in))
    runner = client.beta.messages.tool_runner(
        model="m",
        max_tokens=9,
        tools=[get_weather],
        messages=[{"role": "user", "content": "Weather?"}],
        max_iterations=6,
    )
    assert [message.stop_reason for message in runner] == ["tool_use", "tool_use", "end_turn"]
    # the continuations carry only the tool's result: their turn is read from the message id
    threads = [received.body.get("thread") for received in stand_in.requests]
    assert threads[1:] == [
        {"type": "continue", "previous_message_id": f"msg_standin00{turn}"} for turn in (0, 1)
    ]
    assert [received.turn for received in stand_in.requests] == [0, 1, 2]


def test_an_unnamed_tool_call_calls_the_first_tool_offered_and_parallel_calls_share_a_turn() -> (
    None
):
    import anthropic

    script = [parallel(tool_call(), tool_call("lookup", {"q": "x"})), text("Done.")]
    client = anthropic.Anthropic(api_key="k", http_client=httpx2.Client(transport=StandIn(script)))
    tools = [{"name": "search", "input_schema": {"type": "object"}}, *ANTHROPIC_TOOLS]
    answer = client.messages.create(
        model="m", max_tokens=9, tools=tools, messages=[{"role": "user", "content": "Hi"}]
    )
    assert [block.name for block in answer.content] == ["search", "lookup"]
    assert len({block.id for block in answer.content}) == 2


def test_past_the_script_a_text_repeats_and_a_last_tool_call_ends_in_text() -> None:
    looping = StandIn([tool_call("get_weather")])
    body = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    reply = looping.answer(
        "POST", "https://api.anthropic.com/v1/messages", json.dumps(body).encode()
    )
    assert json.loads(reply.body)["content"] == [{"type": "text", "text": "Done."}]


def test_a_tool_call_on_a_request_offering_no_tool_and_an_unknown_path_answer_an_error() -> None:
    import openai

    client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=StandIn([tool_call()])))
    with pytest.raises(openai.BadRequestError, match="offers none"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}])
    reply = StandIn().answer("POST", "https://example.test/v9/nothing", b"{}")
    assert reply.status == 404 and b"nothing there answers POST /v9/nothing" in reply.body


def test_a_turn_says_something() -> None:
    with pytest.raises(ValueError, match="a text or a tool call"):
        Turn()
    with pytest.raises(TypeError, match="StandIn takes turns"):
        StandIn([42])  # type: ignore[list-item]


@pytest.mark.slow  # imports google-genai and boto3
def test_gemini_and_bedrock_through_the_capture_sync_async_and_streamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    boto3 = pytest.importorskip("boto3")
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    session = CaptureSession(upstream=StandIn(SCRIPT))
    declared = [types.FunctionDeclaration(name="get_weather")]
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=declared)])
    spec = {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {}}}}]}
    asked = [{"role": "user", "content": [{"text": "Weather?"}]}]
    with session.intercept():
        gemini = genai.Client(api_key="k")
        first = gemini.models.generate_content(
            model="gemini-2.5-flash", contents="Hi", config=config
        )
        assert first.function_calls[0].name == "get_weather"
        assert first.function_calls[0].args == WEATHER
        assert first.usage_metadata.prompt_token_count > 0

        async def streamed() -> list[Any]:
            contents = [
                types.Content(role="user", parts=[types.Part(text="Hi")]),
                types.Content(role="model", parts=[types.Part(text="Calling.")]),
            ]
            chunks = await gemini.aio.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents
            )
            return [chunk.text async for chunk in chunks]

        assert "".join(asyncio.run(streamed())) == "Sunny in Paris."
        bedrock = boto3.client("bedrock-runtime")
        reply = bedrock.converse(modelId="anthropic.claude", messages=asked, toolConfig=spec)
        assert reply["output"]["message"]["content"][0]["toolUse"]["input"] == WEATHER
        assert reply["usage"]["cacheReadInputTokens"] == 0
        answered = [
            *asked,
            reply["output"]["message"],
            {"role": "user", "content": [{"text": "ok"}]},
        ]
        events = bedrock.converse_stream(
            modelId="anthropic.claude", messages=answered, toolConfig=spec
        )
        words = [
            e["contentBlockDelta"]["delta"]["text"]
            for e in events["stream"]
            if "contentBlockDelta" in e
        ]
        assert words == ["Sunny in Paris."]
    providers = [r.split.provider for r in session.requests if r.split is not None]
    assert providers == ["gemini", "gemini", "bedrock", "bedrock"]
