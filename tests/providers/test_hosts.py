"""The hosts each provider answers on are data, and requests to them are claimed by the right one.

`harness/providers/hosts.json` rows carry their source and the day they were checked; the
OpenAI-compatible hosts and Cohere v2 get providers of their own, Azure deployments stay OpenAI's,
and a capture session intercepts the local servers on `local_hosts` (replaceable).
"""

from __future__ import annotations

import datetime

import pytest

from harness._shared._errors import UsageError
from harness.cache._analysis import LintRequest, analyse
from harness.capture import CaptureConfig
from harness.providers import detect_provider, provider_hosts, recognised_host, split_request
from harness.providers._hosts import host_rows, local_hosts

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_every_host_row_names_its_source_and_the_day_it_was_checked() -> None:
    for row in host_rows():
        assert row.source.startswith("https://") and row.hosts, row
        assert row.checked_on <= datetime.date(2026, 12, 31)


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.groq.com/openai/v1/chat/completions", "groq"),
        ("https://api.mistral.ai/v1/chat/completions", "mistral"),
        ("https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("https://api.x.ai/v1/chat/completions", "xai"),
        ("https://api.together.xyz/v1/chat/completions", "together"),
        ("https://api.fireworks.ai/inference/v1/chat/completions", "fireworks"),
        ("https://api.deepseek.com/chat/completions", "deepseek"),
        ("https://api.cohere.com/v2/chat", "cohere"),
        ("https://acme.openai.azure.com/openai/deployments/gpt/chat/completions", "openai-chat"),
        ("https://acme.cognitiveservices.azure.com/openai/v1/chat/completions", "openai-chat"),
        ("https://api.x.ai/v1/responses", "openai-responses"),
        ("http://localhost:11434/v1/chat/completions", "openai-chat"),
        ("http://localhost:8000/v1/chat/completions", "openai-chat"),
    ],
)
def test_each_host_is_claimed_by_its_provider(url: str, provider: str) -> None:
    body = {**CHAT, "input": "hi"} if url.endswith("/responses") else CHAT
    assert detect_provider(body, url) == provider


@pytest.mark.parametrize(
    "host",
    [
        "api.groq.com",
        "api.mistral.ai",
        "api.cohere.com",
        "openrouter.ai",
        "api.x.ai",
        "api.together.xyz",
        "api.fireworks.ai",
        "api.deepseek.com",
        "acme.openai.azure.com",
        "acme.cognitiveservices.azure.com",
        "us-east5-aiplatform.googleapis.com",
        "aiplatform.googleapis.com",
        "bedrock-runtime.eu-west-1.amazonaws.com",
    ],
)
def test_every_provider_host_is_captured_by_default(host: str) -> None:
    assert recognised_host(host) and CaptureConfig().captures(host)


def test_local_servers_are_captured_on_a_list_the_project_can_replace() -> None:
    assert "localhost:11434" in local_hosts() and "localhost:8000" in local_hosts()
    default = CaptureConfig()
    assert default.captures("localhost:11434") and default.captures("127.0.0.1:8000")
    assert not default.captures("localhost:5000") and not recognised_host("localhost:11434")
    mine = CaptureConfig.of({"local_hosts": ["gpu-box:9000"]})
    assert mine.captures("gpu-box:9000") and not mine.captures("localhost:11434")
    assert not CaptureConfig.of({"local_hosts": []}).captures("localhost:11434")
    with pytest.raises(UsageError, match="local_hosts takes a list"):
        CaptureConfig.of({"local_hosts": "localhost:11434"})


def test_hosts_are_not_constants_in_code() -> None:
    # every built-in host comes from the data file (a provider's own `hosts` are added to it)
    rows = {host for row in host_rows() for host in row.hosts}
    assert set(provider_hosts()) == rows


def test_a_cohere_body_splits_tools_system_documents_messages() -> None:
    body = {
        "model": "command-a",
        "stream": True,
        "temperature": 0.3,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x"}],
        "documents": [{"id": "d1", "data": {"text": "doc"}}],
        "tools": [{"type": "function", "function": {"name": "search"}}],
    }
    split = split_request(body, url="https://api.cohere.com/v2/chat")
    assert split is not None and split.provider == "cohere"
    assert list(split.view.blocks) == ["tools", "system", "documents", "messages"]
    assert split.view.settings == {"model": "command-a"}
    assert set(split.bookkeeping) == {"stream", "temperature"}


def test_the_rules_say_cohere_caches_nothing_and_groq_caches_implicitly() -> None:
    cohere = analyse(LintRequest(0, CHAT, url="https://api.cohere.com/v2/chat"))
    assert cohere is not None and cohere.writes == []
    assert cohere.describe().startswith("no provider caching: cohere documents none")
    groq = analyse(LintRequest(0, CHAT, url="https://api.groq.com/openai/v1/chat/completions"))
    assert groq is not None and groq.caching is not None and groq.caching.mode == "implicit"
