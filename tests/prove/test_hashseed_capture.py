"""Hash-seed children capture exactly as the parent (issue 34, item 1).

`prove_stable(build, hash_seeds=...)` under `@pytest.mark.header_capture` runs the build again in
one child process per `PYTHONHASHSEED`. Each child must capture as the parent does: the same
interception, the same recorded answers, the same network guard, for every client family the
capture knows. A project per family, as a user writes it: the build makes its own SDK client (no
client handed in), recorded against `harness.upstream.StandIn`, then replayed under CI with the
stand-in down. Without the children's interception, their requests go to the network (none
here): the children fail in record and in check mode alike.
"""

from __future__ import annotations

import pytest

from tests.support.inner import imported_first, inner_pytest

pytestmark = pytest.mark.slow  # every proof starts child interpreters

CONFTEST = r"""
import os

import pytest

from harness.upstream import StandIn

os.environ.update(
    AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE",
    AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    AWS_DEFAULT_REGION="us-east-1",
    ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
    OPENAI_API_KEY="sk-test-not-a-key",
    GEMINI_API_KEY="test-not-a-key",
)


class Down(StandIn):
    def answer(self, method, url, content):
        if os.environ.get("STAND_IN_DOWN"):
            raise AssertionError(f"the stand-in was reached: {url}")
        return super().answer(method, url, content)


@pytest.fixture
def harness_upstream():
    return Down(["Sunny."])
"""

# Each build sends one request whose tools come from a set: sorted (stable) unless SET_ORDER is
# set, when the set's own order, which PYTHONHASHSEED moves, reaches the request.
AGENTS = r"""
import asyncio
import json
import os
import urllib.request

NAMES = {"weather", "search", "calendar", "mail", "notes", "files", "maps"}


def names():
    return list(NAMES) if os.environ.get("SET_ORDER") else sorted(NAMES)


def anthropic_httpx2():
    import anthropic

    tools = [{"name": n, "input_schema": {"type": "object"}} for n in names()]
    anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-5", max_tokens=64, tools=tools,
        messages=[{"role": "user", "content": "Weather in Paris?"}])


def openai_httpx():
    import httpx
    import openai

    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
             for n in names()]
    openai.OpenAI(http_client=httpx.Client()).chat.completions.create(
        model="gpt-5", tools=tools, messages=[{"role": "user", "content": "Weather in Paris?"}])


def bedrock_urllib3():
    import boto3

    tools = [{"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}}
             for n in names()]
    boto3.client("bedrock-runtime").converse(
        modelId="anthropic.claude-sonnet-4-5", toolConfig={"tools": tools},
        messages=[{"role": "user", "content": [{"text": "Weather in Paris?"}]}])


def gemini_stdlib():
    body = {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
            "tools": [{"functionDeclarations": [{"name": n} for n in names()]}]}
    request = urllib.request.Request(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        data=json.dumps(body).encode(), headers={"content-type": "application/json",
                                                 "x-goog-api-key": "test-not-a-key"})
    with urllib.request.urlopen(request) as answer:
        json.loads(answer.read())


def gemini_aiohttp():
    from google import genai
    from google.genai import types

    declared = [types.FunctionDeclaration(name=n) for n in names()]
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=declared)])

    async def ask():
        client = genai.Client()
        await client.aio.models.generate_content(
            model="gemini-2.5-flash", contents="Weather in Paris?", config=config)

    asyncio.run(ask())
"""

TESTS = r"""
import os

import pytest

import agents_under_test as agents

# one child is what "answered from the recording" needs (the children are compared with each
# other, so the near miss below, which must see drift, runs two); each child imports its SDK
HASH_SEEDS = (0, 1) if os.environ.get("SET_ORDER") else (1,)


@pytest.mark.header_capture
@pytest.mark.parametrize("build", [
    agents.anthropic_httpx2, agents.openai_httpx, agents.bedrock_urllib3, agents.gemini_stdlib,
    agents.gemini_aiohttp,
], ids=lambda build: build.__name__)
def test_stable_across_hash_seeds(prove_stable, build):
    result = prove_stable(build, permutations=1, hash_seeds=HASH_SEEDS)
    assert result.hash_seeds == HASH_SEEDS
"""

FAMILIES = [
    "anthropic_httpx2",
    "openai_httpx",
    "bedrock_urllib3",
    "gemini_stdlib",
    "gemini_aiohttp",
]


# The clients the builds import in the in-process parent runs (the children import their own):
# once for the module, not once per run.
clients_imported = imported_first("anthropic", "openai", "httpx", "boto3", "google.genai.types")


@pytest.fixture
def project(
    clients_imported: None, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    for library in ("boto3", "google.genai", "httpx", "anthropic", "openai"):
        pytest.importorskip(library)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(agents_under_test=AGENTS, test_hash_seeds=TESTS)
    pytester.syspathinsert()
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("SET_ORDER", raising=False)
    return pytester


def test_hash_seed_children_are_answered_from_the_recording_in_record_and_check_mode(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = inner_pytest(project, "-p", "no:randomly", "-v", "--harness-mode=record")
    for family in FAMILIES:  # one test per client family
        recorded.stdout.fnmatch_lines([f"*test_stable_across_hash_seeds?{family}? PASSED*"])
    recorded.assert_outcomes(passed=len(FAMILIES))
    monkeypatch.setenv("CI", "true")  # check mode, every host but loopback blocked
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    replayed = inner_pytest(project, "-p", "no:randomly", "-v")
    for family in FAMILIES:
        replayed.stdout.fnmatch_lines([f"*test_stable_across_hash_seeds?{family}? PASSED*"])
    replayed.assert_outcomes(passed=len(FAMILIES))


def test_a_set_ordered_tool_list_fails_across_hash_seeds_through_the_capture(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the near miss of the test above: the children's requests are judged, not only answered
    monkeypatch.setenv("SET_ORDER", "1")
    selected = ("-k", "bedrock_urllib3")
    result = inner_pytest(project, "-p", "no:randomly", *selected, "--harness-mode=record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*header drift under PYTHONHASHSEED*", "*tools*"])
    assert "HashSeedError" not in result.stdout.str()
