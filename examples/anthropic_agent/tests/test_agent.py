"""The trip agent's header tests, as a user writes them."""

from __future__ import annotations

import anthropic
import httpx2

from weather_agent import PLUGINS, TripAgent

QUESTION = "Is it a good day for a walk in Paris?"


def client_for(http_client: httpx2.Client) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", http_client=http_client)


def test_agent_turn(header_capture):
    """One turn with a tool call, replayed from the cassette (no network)."""
    agent = TripAgent.with_plugins(client_for(header_capture.httpx2_client()), PLUGINS)

    assert "walk" in agent.run(QUESTION)
    header_capture.assert_prefix_extends()  # the second request extends the first one's prefix


def test_plugin_load_order_does_not_move_the_header(prove_stable, header_capture):
    """The plugins load concurrently: no load order may change the request bytes."""

    def build(plugins):
        TripAgent.with_plugins(client_for(header_capture.httpx2_client()), plugins).run(QUESTION)

    prove_stable(build, PLUGINS)
