"""Bedrock InvokeModel bodies of every model family, attacked (issue 32): the body's shape is the
invoked model's, picked by its model id, never Anthropic's for a model that is not Claude.

boto3's `invoke_model` under a capture session, against an in-process stand-in. Before: an
InvokeModel body was read as Anthropic's whenever it carried `anthropic_version`, whatever model
it went to, and every other body was opaque bytes: Nova's Converse-shaped body moving its cache
point forward (what keeps its cache) broke the gate, and so did a Llama conversation growing
its prompt.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession
from harness.providers import split_request

boto3 = pytest.importorskip("boto3")

INVOKE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{}/invoke"
JSON = [("content-type", "application/json")]
NOVA = "amazon.nova-lite-v1:0"
LLAMA = "meta.llama3-8b-instruct-v1:0"
POINT = {"cachePoint": {"type": "default"}}


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def answer(request: httpx2.Request) -> httpx2.Response:
    """Each family's own answer (Nova's Converse-like output, Llama's generation)."""
    if "nova" in request.url.path:
        message = {"role": "assistant", "content": [{"text": "Sunny."}]}
        usage = {"inputTokens": 9, "outputTokens": 1, "cacheReadInputTokenCount": 0}
        return httpx2.Response(200, json={"output": {"message": message}, "usage": usage})
    return httpx2.Response(200, json={"generation": "Sunny.", "stop_reason": "stop"})


def captured(bodies: list[tuple[str, dict[str, Any]]]) -> CaptureSession:
    """Each (model id, body) sent with boto3's `invoke_model`, captured against the stand-in."""
    session = CaptureSession(upstream=httpx2.MockTransport(answer))
    with session.intercept():
        client = boto3.client("bedrock-runtime")
        for model, body in bodies:
            client.invoke_model(modelId=model, body=json.dumps(body))
    return session


def nova(turn: int, tools: list[str]) -> dict[str, Any]:
    """Turn `turn` of a Nova conversation, its cache point on the last user message."""
    messages: list[dict[str, Any]] = []
    for number in range(1, turn + 1):
        user: list[dict[str, Any]] = [{"text": f"Question {number}?"}]
        messages.append({"role": "user", "content": [*user, POINT] if number == turn else user})
        if number < turn:
            messages.append({"role": "assistant", "content": [{"text": "Sunny."}]})
    specs = [{"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}} for n in tools]
    return {
        "schemaVersion": "messages-v1",
        "system": [{"text": "You plan walks."}],
        "toolConfig": {"tools": specs},
        "messages": messages,
        "inferenceConfig": {"maxTokens": 64 * turn},
    }


def llama(turns: list[str]) -> dict[str, Any]:
    prompt = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>You plan walks."
    for text in turns:
        prompt += f"<|start_header_id|>user<|end_header_id|>{text}<|eot_id|>"
    return {"prompt": prompt, "max_gen_len": 128, "temperature": 0.2}


def test_a_nova_conversation_moving_its_cache_point_forward_keeps_the_gate() -> None:
    session = captured([(NOVA, nova(1, ["weather", "map"])), (NOVA, nova(2, ["weather", "map"]))])
    assert [r.provider for r in session.requests] == ["bedrock", "bedrock"]
    assert session.requests[0].view is not None
    assert session.requests[0].view.settings["modelId"] == NOVA
    assert not session.prefix_breaks()


def test_near_miss_a_tool_reordered_between_nova_turns_breaks_the_gate_at_the_tools() -> None:
    session = captured([(NOVA, nova(1, ["weather", "map"])), (NOVA, nova(2, ["map", "weather"]))])
    (found,) = session.prefix_breaks()
    assert "tools" in found.to_text().splitlines()[0]


def test_a_llama_conversation_growing_its_prompt_keeps_the_gate() -> None:
    session = captured([(LLAMA, llama(["Paris?"])), (LLAMA, llama(["Paris?", "And Rome?"]))])
    assert not session.prefix_breaks()


def test_near_miss_an_earlier_llama_turn_edited_breaks_the_gate() -> None:
    session = captured([(LLAMA, llama(["Paris?"])), (LLAMA, llama(["Lyon?", "And Rome?"]))])
    assert len(session.prefix_breaks()) == 1


CLAUDE_BODY = {
    "anthropic_version": "bedrock-2023-05-31",
    "max_tokens": 64,
    "system": "You plan walks.",
    "messages": [{"role": "user", "content": "Paris?"}],
}


@pytest.mark.parametrize(
    "model",
    [
        "meta.llama3-70b-instruct-v1:0",
        "mistral.mistral-large-2407-v1:0",
        "cohere.command-r-plus-v1:0",
        "amazon.titan-text-express-v1",
        "us.meta.llama3-2-11b-instruct-v1:0",
    ],
)
def test_a_body_sent_to_a_model_that_is_not_claude_is_never_read_as_anthropics(
    model: str,
) -> None:
    split = split_request(CLAUDE_BODY, url=INVOKE.format(model), headers=JSON)
    assert split is not None and split.provider == "opaque"
    why = split.view.settings["(body shape)"]
    assert model in why and "byte for byte" in why


@pytest.mark.parametrize(
    "model",
    [
        "anthropic.claude-3-5-sonnet-20240620-v1%3A0",
        "us.anthropic.claude-sonnet-4-20250514-v1%3A0",
        "global.anthropic.claude-sonnet-4-5-20250929-v1%3A0",
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fx1",
    ],
)
def test_near_miss_a_claude_body_on_invoke_is_still_anthropics(model: str) -> None:
    split = split_request(CLAUDE_BODY, url=INVOKE.format(model), headers=JSON)
    assert split is not None and split.provider == "anthropic"
    stream = INVOKE.format(model) + "-with-response-stream"
    assert getattr(split_request(CLAUDE_BODY, url=stream, headers=JSON), "provider", None) == (
        "anthropic"
    )


SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("cohere.command-r-v1:0", {"message": "Paris?", "chat_history": []}),
    ("ai21.jamba-1-5-mini-v1:0", {"messages": [{"role": "user", "content": "Hi"}]}),
    ("mistral.mistral-large-2407-v1:0", {"messages": [], "max_tokens": 9}),  # not a `prompt`
    ("amazon.nova-canvas-v1:0", {"taskType": "TEXT_IMAGE"}),  # no Converse messages
    ("arn:aws:bedrock:us-east-1:123456789012:custom-model/x", {"inputs": "Hi"}),
]


@pytest.mark.parametrize(("model", "body"), SHAPES)
def test_a_shape_the_harness_does_not_read_is_judged_byte_for_byte_with_a_note(
    model: str, body: dict[str, Any]
) -> None:
    split = split_request(body, url=INVOKE.format(model.replace("/", "%2F")), headers=JSON)
    assert split is not None and split.provider == "opaque"
    assert split.view.blocks["body"] == body
    assert "judged byte for byte" in split.view.settings["(body shape)"]
