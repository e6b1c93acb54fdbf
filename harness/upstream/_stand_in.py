"""`StandIn`: one in-process stand-in for every provider shape, as an httpx-style transport.

It answers Anthropic Messages, OpenAI Chat Completions and Responses, Gemini and Bedrock Converse
(and the token-counting and model-listing calls frameworks make beside them) from one script of
turns (`harness.upstream._script`), as JSON or as the provider's stream when the request asks for
one, with usage counters. It takes the requests of `httpx` and `httpx2` clients alike and answers
each in its own library's types, so it needs whichever library the project has and imports
neither itself. Return it from a conftest's `harness_upstream` fixture (the capture forwards to
it in record mode, whatever the client: aiohttp, botocore and urllib's requests too), or give it
to a client as its transport.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

from harness.upstream._anthropic import AnthropicMessages
from harness.upstream._bedrock import BedrockConverse
from harness.upstream._google import Gemini
from harness.upstream._openai import OpenAIChat, OpenAIResponses
from harness.upstream._script import Turn, estimate_tokens, text, turn_at
from harness.upstream._shape import Reply, Shape, error

__all__ = ["Received", "StandIn"]

SHAPES: Final[tuple[Shape, ...]] = (
    OpenAIResponses(),
    AnthropicMessages(),
    OpenAIChat(),
    Gemini(),
    BedrockConverse(),
)


class Received(NamedTuple):
    """One request the stand-in answered: the shape it was read as, and what it held."""

    shape: str
    method: str
    url: str
    body: Any  # the decoded JSON body ({} for none)
    turn: int  # the script's turn it got


class StandIn:
    """An httpx/httpx2 transport answering every provider shape from one script.

    `script`: the turns, in order (`text("...")`, `tool_call("name", {...})`, or a plain string
    for a text); the default is one text, "Done.". `requests` lists what it answered.
    """

    def __init__(self, script: Iterable[Turn | str] | None = None) -> None:
        turns = [text(item) if isinstance(item, str) else item for item in (script or ("Done.",))]
        for item in turns:
            if not isinstance(item, Turn):
                raise TypeError(
                    "StandIn takes turns: text('...'), tool_call('name', {...}) or a string,"
                    f" not {type(item).__name__}"
                )
        self.script: Sequence[Turn] = tuple(turns)
        self._lock = threading.Lock()
        self.requests: list[Received] = []

    # -- httpx and httpx2 transports ------------------------------------------------------------

    def handle_request(self, request: Any) -> Any:
        request.read()
        return self._response(request)

    async def handle_async_request(self, request: Any) -> Any:
        await request.aread()
        return self._response(request)

    def __call__(self, request: Any) -> Any:
        """A `MockTransport` handler too: `httpx2.MockTransport(StandIn(...))`."""
        return self._response(request)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    # -- the answer -----------------------------------------------------------------------------

    def answer(self, method: str, url: str, content: bytes) -> Reply:
        """The reply to one request, in no library's types."""
        path, _, query = url.partition("?")
        path = path.split("://", 1)[-1]
        path = path[path.find("/") :] if "/" in path else "/"
        try:
            body = json.loads(content) if content.strip() else {}
        except ValueError:
            return error(f"the stand-in reads JSON bodies; {method} {path} sent something else")
        if not isinstance(body, dict):
            body = {}
        shape = next((s for s in SHAPES if s.claims(path, body)), None)
        if shape is None:
            known = ", ".join(s.name for s in SHAPES)
            return error(
                f"the stand-in answers {known}; nothing there answers {method} {path}", 404
            )
        index = shape.answered(body)
        with self._lock:
            self.requests.append(Received(shape.name, method, url, body, index))
        turn = turn_at(self.script, index)
        return shape.answer(turn, index, body, path, query, estimate_tokens(content))

    def _response(self, request: Any) -> Any:
        module = sys.modules[type(request).__module__.partition(".")[0]]
        reply = self.answer(str(request.method), str(request.url), bytes(request.content))
        return module.Response(
            reply.status,
            headers=[("content-type", reply.content_type)],
            content=reply.body,
            request=request,
        )
