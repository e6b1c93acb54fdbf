"""What a stand-in provider answers in tests that drive a real SDK client over an in-process
transport (`httpx2.MockTransport`): the smallest valid response bodies."""

from __future__ import annotations

from typing import Any


def anthropic_message(text: str = "Sunny.") -> dict[str, Any]:
    """A complete Anthropic Messages response holding one text block."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
