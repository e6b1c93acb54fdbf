"""Acceptance attacks on issue 23's hosts, written from the issue as a user's project meets it.

The openai SDK pointed at each OpenAI-compatible host the README lists (Groq, Mistral,
OpenRouter, xAI, Together, Fireworks, DeepSeek, an Azure deployment URL, a local vLLM on
`localhost:8000`, Ollama on `localhost:11434`) with no `hosts` setting, and a host of the
project's own added by `hosts`: each recorded, replayed under CI with the stand-in down, and a
tool reordered between turns fails the gate. The cohere SDK's v2 chat (an unrecognised body),
whose tools are reordered between turns, fails the gate and `harness check`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.cassettes import whole_document
from tests.support.inner import inner_pytest

CONFTEST = r"""
import json
import os

import httpx2
import pytest

CHAT = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
COHERE = {"id": "c1", "finish_reason": "COMPLETE",
          "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
          "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 1},
                    "tokens": {"input_tokens": 5, "output_tokens": 1}}}


def answer(request):
    if os.environ.get("STAND_IN_DOWN"):
        raise AssertionError(f"the stand-in was reached: {request.url}")
    if request.url.path.endswith("/v2/chat"):
        return httpx2.Response(200, json=COHERE)
    return httpx2.Response(200, json=CHAT)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)


@pytest.fixture
def harness_capture_config():
    return {"hosts": ["llm.internal:8080"]}
"""

TESTS = r"""
import os

import openai
import pytest

BASES = {
    "groq": "https://api.groq.com/openai/v1",
    "mistral": "https://api.mistral.ai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "xai": "https://api.x.ai/v1",
    "together": "https://api.together.xyz/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "deepseek": "https://api.deepseek.com",
    "vllm": "http://localhost:8000/v1",
    "ollama": "http://localhost:11434/v1",
    "own": "http://llm.internal:8080/v1",
}


def tools(turn):
    names = ["weather", "search", "calendar"]
    if turn == 2 and os.environ.get("REORDER"):
        names.reverse()
    return [{"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
            for n in names]


def converse(client, model="m"):
    messages = [{"role": "user", "content": "Hi"}]
    for turn in (1, 2):
        reply = client.chat.completions.create(model=model, tools=tools(turn), messages=messages)
        assert reply.choices[0].message.content == "Hello."
        messages = [*messages, {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "More"}]


@pytest.mark.header_capture
@pytest.mark.parametrize("name", sorted(BASES))
def test_openai_compatible(name):
    converse(openai.OpenAI(base_url=BASES[name], api_key="not-a-key"))


@pytest.mark.header_capture
def test_azure_deployment():
    client = openai.AzureOpenAI(azure_endpoint="https://acme.openai.azure.com",
                                api_key="not-a-key", api_version="2024-10-21")
    converse(client, model="gpt-4o-deployment")


@pytest.mark.header_capture
def test_cohere_v2():
    import cohere

    client = cohere.ClientV2(api_key="not-a-key")
    messages = [{"role": "user", "content": "Hi"}]
    for turn in (1, 2):
        reply = client.chat(model="command-a", tools=tools(turn), messages=messages)
        assert reply.message.content[0].text == "Hello."
        messages = [*messages, {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "More"}]
"""

COUNT = 12


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytest.importorskip("cohere")
    for name in ("CI", "REORDER", "STAND_IN_DOWN"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_hosts=TESTS)
    return pytester


@pytest.mark.slow
def test_every_listed_host_is_captured_without_a_setting_and_replayed_offline(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = inner_pytest(project, "-p", "no:randomly", "--harness-mode=record")
    recorded.assert_outcomes(passed=COUNT)
    cassettes = sorted(Path(project.path).rglob("*.json"))
    assert len(cassettes) == COUNT, cassettes
    written = "".join(path.read_text() for path in cassettes)
    for host in ("localhost:8000", "localhost:11434", "llm.internal:8080", "acme.openai.azure"):
        assert host in written, host
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    inner_pytest(project, "-p", "no:randomly").assert_outcomes(passed=COUNT)
    code = main(["check", str(project.path)])
    assert code == 0


@pytest.mark.slow
def test_a_reorder_between_turns_fails_every_host_and_is_never_called_the_same_order(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REORDER", "1")
    result = inner_pytest(project, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=COUNT)
    out = result.stdout.str()
    assert out.count("prefix-chain gate failed") >= COUNT, out
    assert "same tool names in the same order" not in out
    assert not list(Path(project.path).rglob("*.json"))


@pytest.mark.slow
def test_harness_check_fails_a_cohere_cassette_whose_tools_were_reordered(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record", "-k", "cohere")
    (cassette,) = Path(project.path).rglob("*.json")
    data = whole_document(cassette)
    assert main(["check", str(project.path)]) == 0  # the near miss: as recorded
    data["exchanges"][1]["request"]["json"]["tools"].reverse()  # a bad re-record, by hand
    cassette.write_text(json.dumps(data, indent=2))
    capsys.readouterr()
    code = main(["check", str(project.path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "same tool names in the same order" not in out
    assert "prefix" in out, out
