"""The support agent's header tests, as a user writes them."""

from __future__ import annotations

import openai
from harness.capture import current_session

from support_agent import LOCAL_TOOLS, SERVERS, SupportAgent

QUESTION = "Where is the deploy runbook?"
OWNERS = {
    tool["function"]["name"]: f"mcp:{server.name}"
    for server in SERVERS.values()
    for tool in server.list_tools()
}


def ask_with(tools):
    """Module level, so the PYTHONHASHSEED subprocesses can import it too."""
    client = openai.OpenAI(api_key="sk-test", http_client=current_session().httpx2_client())
    SupportAgent(client, tools).ask(QUESTION)


def test_agent_turn(header_capture):
    """One question with a tool call, replayed from the cassette (no network)."""
    client = openai.OpenAI(api_key="sk-test", http_client=header_capture.httpx2_client())

    assert "runbooks/deploy.md" in SupportAgent(client).ask(QUESTION)
    header_capture.assert_prefix_extends()  # the second request extends the first one's prefix


def test_tool_order_is_stable(prove_stable):
    """No registration order, and no process's hash seed, may change the request bytes."""
    prove_stable(ask_with, LOCAL_TOOLS, hash_seeds=(0, 1, 2, 3), owners=OWNERS)
