"""Writes the sample traces in this folder, one per format `harness scan` reads.

Each sample follows its tool's documented export shape (docs/scan.md names the fields and where
they come from) and holds two sessions of one agent: a stable one on deploy `v1.4.0`, and one on
deploy `v1.5.0` that breaks its cached prefix on its third request (a reordered tool list, an
edited system prompt, a changed setting...). Some add what only their format can show: a
counters-only record, a truncated string, a body moved to S3.

    python examples/traces/make_samples.py     # rewrites the samples (byte-identical)
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
START = 1_767_225_600  # 2026-01-01T00:00:00Z
TOOLS = ("get_weather", "read_calendar", "find_parks")
SYSTEM = "You help people plan their day. Check the weather and the calendar first. " * 8
QUESTIONS = ("Is it a good day for a walk in Paris?", "And tomorrow?", "Book the park then.")


def iso(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def anthropic_tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name.replace('_', ' ')} for a city; " * 6,
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }


def openai_tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} for a city; " * 6,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }


def turns(turn: int) -> list[tuple[str, str]]:
    """(role, text) of the conversation up to user turn `turn` (1-based)."""
    found: list[tuple[str, str]] = []
    for n in range(turn):
        found.append(("user", QUESTIONS[n]))
        if n < turn - 1:
            found.append(("assistant", f"Answer {n + 1}: it is sunny, 21 degrees."))
    return found


def tools_for(broken: bool, turn: int) -> tuple[str, ...]:
    return tuple(reversed(TOOLS)) if broken and turn >= 3 else TOOLS


def anthropic_body(turn: int, broken: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": role, "content": [{"type": "text", "text": text}]} for role, text in turns(turn)
    ]
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "tools": [anthropic_tool(name) for name in tools_for(broken, turn)],
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": messages,
    }


def openai_body(turn: int, broken: bool, *, tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-5", "messages": [{"role": "system", "content": SYSTEM}]}
    body["messages"] += [{"role": role, "content": text} for role, text in turns(turn)]
    if tools:
        body["tools"] = [openai_tool(name) for name in tools_for(broken, turn)]
    return body


def usage(turn: int, total: int = 900) -> tuple[int, int, int]:
    """(input tokens in all, read, written) for a stable conversation's turn."""
    read = 0 if turn == 1 else 700 + 40 * turn
    return total + 60 * turn, read, 120


SESSIONS = (("walk-1001", "v1.4.0", False), ("walk-2002", "v1.5.0", True))


def each() -> list[tuple[str, str, bool, int, float]]:
    found = []
    for number, (session, deploy, broken) in enumerate(SESSIONS):
        for turn in (1, 2, 3):
            found.append((session, deploy, broken, turn, START + number * 3600 + turn * 20))
    return found


def write_json(name: str, value: Any) -> None:
    (HERE / name).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def write_lines(name: str, rows: list[Any]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode("utf-8")


def otel() -> None:
    def attr(key: str, value: Any) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"key": key, "value": {"boolValue": value}}
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": value}}

    resources = []
    for deploy in ("v1.4.0", "v1.5.0"):
        spans = []
        for session, version, broken, turn, time in each():
            if version != deploy:
                continue
            total, read, written = usage(turn)
            messages = [
                {"role": role, "parts": [{"type": "text", "content": text}]}
                for role, text in turns(turn)
            ]
            tools = [
                {"type": "function", "name": n, "description": anthropic_tool(n)["description"]}
                for n in tools_for(broken, turn)
            ]
            spans.append(
                {
                    "traceId": hashlib.md5(session.encode()).hexdigest(),
                    "spanId": f"{turn:016x}",
                    "name": "chat claude-sonnet-4-5",
                    "kind": 3,
                    "startTimeUnixNano": str(int(time * 1e9)),
                    "endTimeUnixNano": str(int((time + 2) * 1e9)),
                    "attributes": [
                        attr("gen_ai.operation.name", "chat"),
                        attr("gen_ai.provider.name", "anthropic"),
                        attr("gen_ai.request.model", "claude-sonnet-4-5"),
                        attr("gen_ai.conversation.id", session),
                        attr("gen_ai.usage.input_tokens", total),
                        attr("gen_ai.usage.cache_read.input_tokens", read),
                        attr("gen_ai.usage.cache_creation.input_tokens", written),
                        attr("gen_ai.usage.output_tokens", 40),
                        attr(
                            "gen_ai.system_instructions",
                            json.dumps([{"type": "text", "content": SYSTEM}]),
                        ),
                        attr("gen_ai.tool.definitions", json.dumps(tools)),
                        attr("gen_ai.input.messages", json.dumps(messages)),
                    ],
                }
            )
        if deploy == "v1.5.0":  # content capture off: counters only, and a miss they show
            for turn, read in ((1, 0), (2, 0)):
                spans.append(
                    {
                        "traceId": "0" * 31 + "c",
                        "spanId": f"{10 + turn:016x}",
                        "name": "chat claude-sonnet-4-5",
                        "startTimeUnixNano": str(int((START + 9000 + turn * 20) * 1e9)),
                        "attributes": [
                            attr("gen_ai.operation.name", "chat"),
                            attr("gen_ai.provider.name", "anthropic"),
                            attr("gen_ai.request.model", "claude-sonnet-4-5"),
                            attr("gen_ai.conversation.id", "walk-3003"),
                            attr("gen_ai.usage.input_tokens", 1000 + turn * 50),
                            attr("gen_ai.usage.cache_read.input_tokens", read),
                            attr("gen_ai.usage.cache_creation.input_tokens", 900),
                        ],
                    }
                )
        resources.append(
            {
                "resource": {
                    "attributes": [
                        attr("service.name", "day-planner"),
                        attr("service.version", deploy),
                    ]
                },
                "scopeSpans": [
                    {"scope": {"name": "opentelemetry.instrumentation.anthropic"}, "spans": spans}
                ],
            }
        )
    write_json("otel.json", {"resourceSpans": resources})


def openinference() -> None:
    rows = []
    for session, deploy, broken, turn, time in each():
        body = openai_body(turn, False)
        if broken and turn >= 3:  # a date written into the system prompt on the third turn
            body["messages"][0]["content"] = SYSTEM + " Today is 2026-01-01."
        total, read, _ = usage(turn)
        rows.append(
            {
                "name": "ChatCompletion",
                "context": {"trace_id": f"trace-{session}-{turn}", "span_id": f"span-{turn}"},
                "start_time": iso(time),
                "attributes": {
                    "openinference.span.kind": "LLM",
                    "input.value": json.dumps(body),
                    "input.mime_type": "application/json",
                    "llm.model_name": "gpt-5",
                    "llm.provider": "openai",
                    "llm.token_count.prompt": total,
                    "llm.token_count.prompt_details.cache_read": read,
                    "llm.token_count.completion": 40,
                    "session.id": session,
                },
                "resource": {"attributes": {"service.version": deploy}},
            }
        )
    (HERE / "openinference.jsonl").write_bytes(write_lines("", rows))


def langfuse() -> None:
    data = []
    for session, deploy, broken, turn, time in each():
        body = openai_body(turn, broken)
        total, read, _ = usage(turn)
        data.append(
            {
                "id": f"gen-{session}-{turn}",
                "traceId": f"trace-{session}-{turn}",
                "type": "GENERATION",
                "name": "OpenAI-generation",
                "startTime": iso(time),
                "endTime": iso(time + 2),
                "model": "gpt-5",
                "modelParameters": {"temperature": 0.2},
                "input": {"messages": body["messages"], "tools": body["tools"]},
                "output": {"role": "assistant", "content": "It is sunny."},
                "version": deploy,
                "sessionId": session,
                "usageDetails": {"input": total - read, "input_cached_tokens": read, "output": 40},
                "metadata": {"ls_provider": "openai"},
            }
        )
    write_json(
        "langfuse.json", {"data": data, "meta": {"page": 1, "limit": 50, "totalItems": len(data)}}
    )


def _jsonb(value: Any) -> Any:
    """Key order as Postgres jsonb stores it: shorter keys first, then bytewise."""
    if isinstance(value, dict):
        return {k: _jsonb(value[k]) for k in sorted(value, key=lambda k: (len(k), k))}
    if isinstance(value, list):
        return [_jsonb(v) for v in value]
    return value


def _cut(text: str, limit: int = 200) -> str:
    head, tail = int(limit * 0.35), int(limit * 0.65)
    skipped = len(text) - head - tail
    note = "Truncated to stay under the database limit."
    return f"{text[:head]}... (litellm_truncated skipped {skipped} chars. {note}) ...{text[-tail:]}"


def litellm() -> None:
    rows = []
    for session, deploy, broken, turn, time in each():
        body = anthropic_body(turn, False)
        system = SYSTEM + (" Be brief." if broken and turn >= 3 else "")
        body["system"][0]["text"] = _cut(system)
        total, read, written = usage(turn)
        metadata = {
            "spend_logs_metadata": {"deploy": deploy},
            "usage_object": {
                "prompt_tokens": total,
                "completion_tokens": 40,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
            },
        }
        rows.append(
            {
                "request_id": f"chatcmpl-{session}-{turn}",
                "call_type": "acompletion",
                "api_key": "hashed-virtual-key-of-the-sample",
                "spend": 0.0031,
                "total_tokens": total + 40,
                "prompt_tokens": total,
                "completion_tokens": 40,
                "startTime": iso(time),
                "endTime": iso(time + 2),
                "model": "claude-sonnet-4-5",
                "custom_llm_provider": "anthropic",
                "api_base": "https://api.anthropic.com/v1/messages",
                "user": "",
                "metadata": json.dumps(metadata),
                "cache_hit": "False",
                "cache_key": "",
                "request_tags": "[]",
                "session_id": session,
                "proxy_server_request": _jsonb(body),
                "status": "success",
            }
        )
    write_json("litellm.json", rows)


def helicone() -> None:
    rows = []
    for session, deploy, broken, turn, time in each():
        body = openai_body(turn, False)
        body["reasoning_effort"] = "high" if broken and turn >= 3 else "low"
        total, read, _ = usage(turn)
        rows.append(
            {
                "request_id": f"5f0c1e2a-{session}-{turn}",
                "request_created_at": iso(time),
                "request_path": "/v1/chat/completions",
                "target_url": "https://api.openai.com/v1/chat/completions",
                "provider": "OPENAI",
                "model": "gpt-5",
                "request_body": body,
                "response_body": {"id": f"chatcmpl-{turn}", "object": "chat.completion"},
                "prompt_tokens": total,
                "completion_tokens": 40,
                "prompt_cache_read_tokens": read,
                "properties": {"Helicone-Session-Id": session, "deploy": deploy},
            }
        )
    (HERE / "helicone.jsonl").write_bytes(write_lines("", rows))


def bedrock() -> None:
    rows = []
    for session, deploy, broken, turn, time in each():
        names = tools_for(broken, turn)
        body = {
            "messages": [{"role": role, "content": [{"text": text}]} for role, text in turns(turn)],
            "system": [{"text": SYSTEM}, {"cachePoint": {"type": "default"}}],
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": n,
                            "description": anthropic_tool(n)["description"],
                            "inputSchema": {"json": anthropic_tool(n)["input_schema"]},
                        }
                    }
                    for n in names
                ]
            },
            "inferenceConfig": {"maxTokens": 1024},
        }
        total, read, written = usage(turn)
        given: dict[str, Any] = {
            "inputContentType": "application/json",
            "inputTokenCount": total - read - written,
            "cacheReadInputTokenCount": read,
            "cacheWriteInputTokenCount": written,
        }
        if session == "walk-1001" and turn == 3:  # over 100 KB in real life: moved to S3
            given["inputBodyS3Path"] = (
                "s3://logs/AWSLogs/123/BedrockModelInvocationLogs/body-1001-3.json"
            )
        else:
            given["inputBodyJson"] = body
        rows.append(
            {
                "schemaType": "ModelInvocationLog",
                "schemaVersion": "1.0",
                "timestamp": iso(time),
                "accountId": "123456789012",
                "identity": {"arn": "arn:aws:sts::123456789012:assumed-role/planner/app"},
                "region": "us-east-1",
                "requestId": f"915a6a04-{session}-{turn}",
                "operation": "Converse",
                "modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0",
                "input": given,
                "output": {"outputContentType": "application/json", "outputTokenCount": 40},
                "requestMetadata": {"session_id": session, "deploy": deploy},
            }
        )
    data = write_lines("", rows)
    (HERE / "bedrock.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))


def proxy() -> None:
    rows = []
    for session, deploy, broken, turn, time in each():
        body = anthropic_body(turn, False)
        if broken and turn >= 3:  # the history rewritten: an earlier answer edited
            body["messages"][1]["content"][0]["text"] = "Answer 1: it may rain later."
        total, read, written = usage(turn)
        rows.append(
            {
                "url": "https://api.anthropic.com/v1/messages",
                "time": iso(time),
                "headers": {"x-session-id": session, "x-deploy": deploy},
                "body": body,
                "response": {
                    "id": f"msg_{session}_{turn}",
                    "usage": {
                        "input_tokens": total - read - written,
                        "cache_read_input_tokens": read,
                        "cache_creation_input_tokens": written,
                        "output_tokens": 40,
                    },
                },
            }
        )
    data = write_lines("", rows)
    try:
        import zstandard
    except ImportError:  # the scan extra brings it
        raise SystemExit(
            "pip install 'prompt-cache-harness[scan]' to write the zstd sample"
        ) from None
    level = zstandard.ZstdCompressor(level=10, write_content_size=True)
    (HERE / "proxy.jsonl.zst").write_bytes(level.compress(data))


def cassette() -> None:
    source = HERE.parent / "pydantic_ai_agent/fixtures/cassettes/tests/test_agent"
    found = json.loads((source / "test_a_follow_up_extends_the_cached_prefix.json").read_text())
    broken = copy.deepcopy(found)
    last = broken["exchanges"][-1]["request"]["json"]
    last["tools"] = list(reversed(last["tools"]))
    (HERE / "cassettes").mkdir(exist_ok=True)
    (HERE / "cassettes/test_follow_up.json").write_text(json.dumps(found, indent=2) + "\n")
    (HERE / "cassettes/test_follow_up_reordered.json").write_text(
        json.dumps(broken, indent=2) + "\n"
    )


def _yaml_cassette(name: str, interactions: list[dict[str, Any]]) -> None:
    import yaml

    text = yaml.safe_dump({"interactions": interactions, "version": 1}, width=120)
    (HERE / name).write_text(text, encoding="utf-8")


def vcr() -> None:
    interactions = []
    for turn in (1, 2, 3):
        body = openai_body(turn, True)
        total, read, _ = usage(turn)
        answer = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny."}}],
            "usage": {
                "prompt_tokens": total,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": read},
            },
        }
        interactions.append(
            {
                "request": {
                    "body": json.dumps(body),
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                },
                "response": {
                    "body": {"string": json.dumps(answer)},
                    "headers": {"Content-Type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        )
    _yaml_cassette("vcr_cassette.yaml", interactions)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def pydantic_ai() -> None:
    interactions = []
    for turn in (1, 2, 3):
        body = anthropic_body(turn, False)
        if turn == 3:
            body["system"][0]["text"] = SYSTEM + " Answer in French."
        total, read, written = usage(turn)
        answer = {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Sunny."}],
            "usage": {
                "input_tokens": total - read - written,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": 5,
            },
        }
        interactions.append(
            {
                "request": {
                    "headers": {"content-type": ["application/json"]},
                    "method": "POST",
                    "parsed_body": _sorted(body),
                    "uri": "https://api.anthropic.com/v1/messages",
                },
                "response": {
                    "headers": {"content-type": ["application/json"]},
                    "parsed_body": _sorted(answer),
                    "status": {"code": 200, "message": "OK"},
                },
            }
        )
    _yaml_cassette("pydantic_ai_cassette.yaml", interactions)


if __name__ == "__main__":
    for make in (
        otel,
        openinference,
        langfuse,
        litellm,
        helicone,
        bedrock,
        proxy,
        cassette,
        vcr,
        pydantic_ai,
    ):
        make()
