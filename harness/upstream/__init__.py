"""Ready stand-ins for the providers' APIs, in process: record a project without an API key.

    # tests/conftest.py
    import pytest
    from harness.upstream import StandIn, text, tool_call

    @pytest.fixture
    def harness_upstream():
        return StandIn([tool_call("get_weather", {"city": "Paris"}), text("Sunny in Paris.")])

`StandIn` answers Anthropic Messages, OpenAI Chat Completions and Responses, Gemini
(`generateContent`, streamed or not) and Bedrock Converse (and ConverseStream's event stream),
each in the provider's own shape with usage counters, from one script of turns: a request gets
the turn at the number of assistant turns its conversation holds, so the same request always
gets the same answer. It is an httpx-style transport for `httpx` and `httpx2` alike; the capture
sends every client's forwarded requests to it (aiohttp, botocore, urllib included).

- `text(words)`: a turn that answers in text.
- `tool_call(name=None, arguments=None)`: a turn that calls a tool (no name: the first tool the
  request offers).
- `parallel(*turns)`: several tool calls in one turn.

Layout: `_script.py` (turns and which one a request gets), `_shape.py` (what every shape shares),
one module per shape (`_anthropic.py`, `_openai.py`, `_google.py`, `_bedrock.py`),
`_stand_in.py` (the transport). It imports nothing else from `harness`.
"""

from harness.upstream._script import Call, Turn, parallel, text, tool_call
from harness.upstream._stand_in import Received, StandIn

__all__ = ["Call", "Received", "StandIn", "Turn", "parallel", "text", "tool_call"]
