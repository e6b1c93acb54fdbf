"""What the capture tests send: tools and a system prompt, the real SDK clients on a capture
session, and a recording made against the stand-in `Provider`.

Shared by the capture tests (sessions, redaction, prefix breaks) and the providers' request
splits, which read the same bodies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai

from harness.capture import CaptureSession
from tests.support.stand_ins import Provider

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"


def tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


def function_tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": f"The {name} tool.", "parameters": {}},
    }


TOOLS = [tool("bash"), tool("grep"), tool("read_file")]
SYSTEM = "You are a careful agent."


def claude(session: CaptureSession) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())


def gpt(session: CaptureSession) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", http_client=session.httpx2_client())


def ask_claude(session: CaptureSession, tools: list[dict[str, Any]] = TOOLS, **extra: Any) -> Any:
    return claude(session).messages.create(
        model="claude-test",
        max_tokens=64,
        system=SYSTEM,
        tools=tools,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "Weather?"}],
        **extra,
    )


def recorded(tmp_path: Path, run: Any, *, name: str = "cassette.json") -> Path:
    """Record `run(session)` against the stand-in provider and write the cassette."""
    path = tmp_path / name
    session = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=Provider().transport()
    )
    run(session)
    files, _ = session.finish()
    assert [target for target, _ in files] == [path]
    path.write_bytes(files[0][1])
    return path
