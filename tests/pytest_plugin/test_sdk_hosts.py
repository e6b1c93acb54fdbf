"""The providers' own SDKs on the hosts the harness knows by default, through pytester.

Groq, Mistral, Cohere v2 and google-genai (sync) talk to their real hosts through httpx; a test
marked `@pytest.mark.header_capture` records them with no `hosts` setting, over one in-process
stand-in (`harness_upstream`), replays them under `CI=true`, and fails with the drift report when
a tool is reordered between turns (the prefix-chain gate). google-genai sends spaced JSON: the
gate parses it. With vcrpy / pytest-recording on the same test, the stand-in call stays out of
vcrpy's sight. Each SDK is skipped where it is not installed.

The inner runs are in process, each SDK imported in this process before them (`imported_first`):
once per test process rather than once per run (litellm and dspy take seconds each), and never
dropped by pytester's module reset between two runs (google-genai's pydantic types did not
survive it). No run here needs a fresh interpreter: no PYTHONHASHSEED, no xdist workers.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.inner import imported_first, inner_pytest

pytestmark = pytest.mark.slow

SDKS = {"groq": "groq", "mistral": "mistralai", "cohere": "cohere", "gemini": "google.genai"}


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


AVAILABLE = [name for name, module in SDKS.items() if installed(module)]
# What the projects' tests import, imported in this process before the in-process runs.
sdks_imported = imported_first(
    "groq", "mistralai", "mistralai.client", "cohere", "google.genai.types"
)
NO_DOWNLOAD = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm's price list, at its import
litellm_imported = imported_first("litellm", environ=NO_DOWNLOAD)
dspy_imported = imported_first("litellm", "dspy", environ=NO_DOWNLOAD)

CONFTEST = """
import httpx2
import pytest

OPENAI = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 50,
        "completion_tokens": 1,
        "total_tokens": 51,
        "prompt_tokens_details": {"cached_tokens": 32},
    },
}
COHERE = {
    "id": "c1",
    "finish_reason": "COMPLETE",
    "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    "usage": {
        "billed_units": {"input_tokens": 50, "output_tokens": 1},
        "tokens": {"input_tokens": 50, "output_tokens": 1},
    },
}
GEMINI = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    ],
    "usageMetadata": {
        "promptTokenCount": 50,
        "cachedContentTokenCount": 32,
        "candidatesTokenCount": 1,
        "totalTokenCount": 51,
    },
    "modelVersion": "gemini-2.5-flash",
}


def stand_in(request):
    path = request.url.path
    if path.endswith("/v2/chat"):
        return httpx2.Response(200, json=COHERE)
    if "generateContent" in path:
        return httpx2.Response(200, json=GEMINI)
    return httpx2.Response(200, json=OPENAI)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(stand_in)
"""

AGENTS = """
import os

import pytest

NAMES = ["search", "lookup", "finish"]
SYSTEM = "Be brief."


def turn_tools(turn):
    names = list(NAMES)
    if turn == 2 and os.environ.get("REORDER") == "1":
        names[0], names[1] = names[1], names[0]
    return names


def fn(name):
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}}
    function = {"name": name, "description": f"{name} things", "parameters": parameters}
    return {"type": "function", "function": function}


def two_turns(call):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "one"}]
    call(messages, [fn(n) for n in turn_tools(1)])
    messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "two"}]
    call(messages, [fn(n) for n in turn_tools(2)])


@pytest.mark.header_capture
def test_groq():
    from groq import Groq

    client = Groq(api_key="gsk_test_not_a_key")
    model = "llama-3.3-70b-versatile"
    two_turns(lambda m, t: client.chat.completions.create(model=model, messages=m, tools=t))


@pytest.mark.header_capture
def test_mistral():
    try:
        from mistralai.client import Mistral
    except ImportError:
        from mistralai import Mistral

    client = Mistral(api_key="test-not-a-key")
    model = "mistral-large-latest"
    two_turns(lambda m, t: client.chat.complete(model=model, messages=m, tools=t))


@pytest.mark.header_capture
def test_cohere():
    import cohere

    client = cohere.ClientV2(api_key="test-not-a-key")
    two_turns(lambda m, t: client.chat(model="command-a-03-2025", messages=m, tools=t))


@pytest.mark.header_capture
def test_gemini():
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="test-not-a-key")

    def config(turn):
        declarations = [
            types.FunctionDeclaration(name=n, description=f"{n} things") for n in turn_tools(turn)
        ]
        return types.GenerateContentConfig(
            system_instruction=SYSTEM, tools=[types.Tool(function_declarations=declarations)]
        )

    contents = [types.Content(role="user", parts=[types.Part(text="one")])]
    client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config(1))
    contents += [
        types.Content(role="model", parts=[types.Part(text="ok")]),
        types.Content(role="user", parts=[types.Part(text="two")]),
    ]
    client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config(2))
"""


LITELLM = """
import os

import pytest

from test_agents import SYSTEM, fn, turn_tools


@pytest.mark.header_capture
def test_litellm_gemini():
    import litellm

    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "one"}]
    tools = [fn(n) for n in turn_tools(1)]
    litellm.completion(model="gemini/gemini-2.5-flash", messages=messages, tools=tools)
    messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "two"}]
    tools = [fn(n) for n in turn_tools(2)]
    litellm.completion(model="gemini/gemini-2.5-flash", messages=messages, tools=tools)
"""


DSPY_CONFTEST = """
import json

import httpx2
import pytest

STEP = "[[ ## next_thought ## ]]\\n{0}\\n\\n[[ ## next_tool_name ## ]]\\n{1}\\n\\n"
STEP += "[[ ## next_tool_args ## ]]\\n{2}\\n\\n[[ ## completed ## ]]"
EXTRACT = "[[ ## reasoning ## ]]\\nok\\n\\n[[ ## answer ## ]]\\nParis\\n\\n[[ ## completed ## ]]"


def answer(content):
    message = {"role": "assistant", "content": content}
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


def stand_in(request):
    body = json.loads(request.content)
    text = body["messages"][-1]["content"]
    if "next_thought" not in json.dumps(body["messages"][0]):
        return httpx2.Response(200, json=answer(EXTRACT))
    if "observation_0" in text:
        return httpx2.Response(200, json=answer(STEP.format("Done.", "finish", "{}")))
    return httpx2.Response(200, json=answer(STEP.format("Search.", "search", '{"q": "x"}')))


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(stand_in)
"""

DSPY = """
import os

import pytest


def search(q: str) -> str:
    \"\"\"Search the web.\"\"\"
    return "Paris is the capital of France."


def lookup(term: str) -> str:
    \"\"\"Look a term up.\"\"\"
    return "nothing"


@pytest.mark.header_capture
def test_react():
    import dspy

    lm = dspy.LM("openai/gpt-4o-mini", api_key="sk-test-not-a-key", cache=False, engine="litellm")
    dspy.configure(lm=lm)
    for run in (1, 2):
        tools = [search, lookup]
        if run == 2 and os.environ.get("REORDER") == "1":
            tools.reverse()
        agent = dspy.ReAct("question -> answer", tools=tools, max_iters=3)
        assert agent(question="What is the capital of France?").answer == "Paris"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agents=AGENTS, test_litellm=LITELLM)
    return pytester


def only(names: list[str]) -> tuple[str, ...]:
    return ("-k", " or ".join(f"test_{name}" for name in names))


@pytest.mark.skipif(not AVAILABLE, reason="none of groq, mistralai, cohere, google-genai installed")
@pytest.mark.usefixtures("sdks_imported")
def test_sdks_record_replay_in_ci_and_fail_on_a_reordered_tool(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    selected = only(AVAILABLE)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    recorded = inner_pytest(
        project, "-p", "no:randomly", "-p", "no:cacheprovider", "--harness-mode=record", *selected
    )
    recorded.assert_outcomes(passed=len(AVAILABLE))
    text = recorded.stdout.str()
    for name in AVAILABLE:
        assert f"{name} 2 (judged 1)" in text, text  # its own provider, on its default host
    cassettes = sorted((project.path / "fixtures" / "cassettes" / "test_agents").glob("*.json"))
    assert [path.stem for path in cassettes] == sorted(f"test_{name}" for name in AVAILABLE)

    monkeypatch.setenv("CI", "true")
    inner_pytest(project, "-p", "no:randomly", "-p", "no:cacheprovider", *selected).assert_outcomes(
        passed=len(AVAILABLE)
    )
    assert main(["check", str(project.path)]) == 0

    monkeypatch.delenv("CI")
    monkeypatch.setenv("REORDER", "1")
    broken = inner_pytest(
        project, "-p", "no:randomly", "-p", "no:cacheprovider", "--harness-mode=record", *selected
    )
    broken.assert_outcomes(failed=len(AVAILABLE))
    out = broken.stdout.str()
    assert out.count('tools_changed: tools reordered; first out of place: "lookup"') == len(
        AVAILABLE
    )
    assert "same tool names in the same order" not in out
    assert "values differ" not in out


@pytest.mark.skipif(not installed("google.genai"), reason="google-genai is not installed")
@pytest.mark.usefixtures("sdks_imported")
def test_gemini_spaced_json_and_its_cache_signal_are_read(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    inner_pytest(
        project, "-p", "no:randomly", "--harness-mode=record", "-k", "test_gemini"
    ).assert_outcomes(passed=1)
    cassette = project.path / "fixtures" / "cassettes" / "test_agents" / "test_gemini.json"
    exchanges = json.loads(cassette.read_text())["exchanges"]
    assert all("text" in exchange["request"] for exchange in exchanges)  # spaced, kept as text
    capsys.readouterr()
    assert main(["show", str(cassette)]) == 0
    shown = capsys.readouterr().out
    assert "cache read 32" in shown, shown


@pytest.mark.skipif(
    not (installed("vcr") and installed("pytest_recording") and installed("groq")),
    reason="vcrpy, pytest-recording and groq are needed",
)
@pytest.mark.usefixtures("sdks_imported")
def test_vcrpy_on_the_same_test_does_not_see_the_stand_in(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    agents = Path(project.path / "test_agents.py")
    agents.write_text(
        agents.read_text().replace(
            "@pytest.mark.header_capture", "@pytest.mark.vcr\n@pytest.mark.header_capture"
        )
    )
    # pytest-recording is not one of the plugins a run blocks (UNUSED_PLUGINS)
    result = inner_pytest(project, "-p", "no:randomly", "--harness-mode=record", "-k", "test_groq")
    result.assert_outcomes(passed=1)
    assert "CannotOverwriteExistingCassetteException" not in result.stdout.str()


@pytest.mark.skipif(not installed("litellm"), reason="litellm is not installed")
@pytest.mark.usefixtures("litellm_imported")
def test_litellm_sends_gemini_snake_case_and_a_reorder_is_found(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "test-not-a-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of its price list
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "test_litellm.py")
    recorded = inner_pytest(project, *args, "--harness-mode=record")
    recorded.assert_outcomes(passed=1)
    assert "gemini 2 (judged 1)" in recorded.stdout.str()
    cassette = project.path / "fixtures" / "cassettes" / "test_litellm" / "test_litellm_gemini.json"
    first = json.loads(cassette.read_text())["exchanges"][0]["request"]
    sent = first.get("text") or json.dumps(first["json"])
    assert '"function_declarations"' in sent  # litellm's snake_case
    monkeypatch.setenv("REORDER", "1")
    broken = inner_pytest(project, *args, "--harness-mode=record")
    broken.assert_outcomes(failed=1)
    out = broken.stdout.str()
    assert (
        'tools reordered; first out of place: "lookup" at /tools/0/function_declarations/0' in out
    )
    assert "<unnamed" not in out


@pytest.mark.skipif(
    not (installed("dspy") and installed("litellm")), reason="dspy is not installed"
)
@pytest.mark.usefixtures("dspy_imported")
def test_dspy_react_growing_messages_are_judged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DSPy's default engine speaks HTTP through the standard library (not captured here: issue 23
    # part A); its litellm engine goes through httpx
    pytester.makeconftest(DSPY_CONFTEST)
    pytester.makepyfile(test_react=DSPY)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "--harness-mode=record")
    recorded = inner_pytest(pytester, *args)
    recorded.assert_outcomes(passed=1)
    # two runs of ReAct (two steps and the extract step each): the steps are one conversation
    assert "openai-chat 6 (judged 4)" in recorded.stdout.str()
    monkeypatch.setenv("REORDER", "1")
    broken = inner_pytest(pytester, *args)
    broken.assert_outcomes(failed=1)
    assert "system_changed: system text differs at /system/0/content" in broken.stdout.str()
