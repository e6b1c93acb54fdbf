"""Providers as registered parts: the built-in ones, a third party's, and bodies nobody knows."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import CacheView, RequestSplit
from harness.drift import compare
from harness.prove._builds import view_of_value
from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import prove_stable
from harness.providers import (
    ANTHROPIC,
    CacheUsage,
    Provider,
    cache_usage,
    detect_provider,
    provider_hosts,
    register_provider,
    registered_providers,
    split_request,
    unregister_provider,
)

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:generateContent"
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "us.anthropic.claude-sonnet-4-5-v1%3A0/converse"
)


def gemini_body(system: str, tools: list[str]) -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": system}]},
        "tools": [{"functionDeclarations": [{"name": name} for name in tools]}],
    }


def foreign_body(preamble: str, tools: list[str]) -> dict[str, Any]:
    """A request shape no provider claims (Cohere's old `chat`: message, preamble, tools)."""
    return {
        "message": "hi",
        "preamble": preamble,
        "tools": [{"name": name, "parameter_definitions": {}} for name in tools],
    }


def test_a_body_no_provider_knows_is_compared_whole_and_says_so() -> None:
    a = view_of_value(foreign_body("You are terse.", ["a", "b"]))
    b = view_of_value(foreign_body("You are verbose.", ["a", "b"]))
    report = compare(a, b)
    assert report.verdict != "model_changed", "a system text change is not a model change"
    assert report.pointer.startswith("/body/preamble")
    assert report.notes == ("no provider recognised this request; its bytes are compared whole",)
    assert "no provider recognised this request" in report.to_text()
    assert "no provider recognised this request" in report.to_markdown()


def test_prove_stable_on_an_unknown_body_fails_with_the_note() -> None:
    def build(order: list[str]) -> dict[str, Any]:
        return foreign_body("s", list(order))

    with pytest.raises(HeaderDrift) as caught:
        prove_stable(build, ["x", "y", "z"], permutations=3, seed=1)
    assert "its bytes are compared whole" in str(caught.value)


# -- Gemini ----------------------------------------------------------------------------------


def test_gemini_is_split_tools_system_instruction_contents_with_the_model_from_the_url() -> None:
    body = {
        **gemini_body("You are terse.", ["search", "fetch"]),
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.2, "thinkingConfig": {"thinkingBudget": 128}},
        "safetySettings": [],
    }
    split = split_request(body, url=GEMINI_URL)
    assert split is not None and split.provider == "gemini"
    assert list(split.view.blocks) == ["tools", "systemInstruction", "contents"]
    assert split.view.settings == {  # generationConfig member by member, sampling left out
        "generationConfig.thinkingConfig": {"thinkingBudget": 128},
        "model": "gemini-x",
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    }
    assert split.bookkeeping == {"generationConfig.temperature": 0.2, "safetySettings": []}
    assert split.prefix == split.view and split.rule == "exact-prefix"  # implicit caching
    stream = GEMINI_URL.replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
    assert detect_provider(body, stream) == "gemini"
    assert detect_provider(body, GEMINI_URL.replace("generateContent", "countTokens")) is None
    assert detect_provider(body) == "gemini"  # by shape, without a URL


def test_gemini_bodies_get_real_verdicts_not_the_whole_body_note() -> None:
    system = compare(
        view_of_value(gemini_body("You are terse.", ["a", "b"])),
        view_of_value(gemini_body("You are verbose.", ["a", "b"])),
    )
    assert (system.verdict, system.block) == ("system_changed", "systemInstruction")
    assert system.pointer == "/systemInstruction/parts/0/text" and system.notes == ()

    tools = compare(
        view_of_value(gemini_body("s", ["search", "fetch", "read"])),
        view_of_value(gemini_body("s", ["fetch", "search", "read"])),
    )
    assert (tools.verdict, tools.kind, tools.tool) == ("tools_changed", "reorder", "fetch")
    assert tools.tools_a == ("search", "fetch", "read")
    assert 'first out of place: "fetch" at /tools/0/functionDeclarations/0' in tools.summary


def test_gemini_cached_content_is_the_cache_key_and_usage_is_read() -> None:
    body = {**gemini_body("s", []), "cachedContent": "cachedContents/abc"}
    other = {**body, "cachedContent": "cachedContents/xyz"}
    report = compare(view_of_value(body), view_of_value(other))
    assert (report.verdict, report.block) == ("cached_content_changed", "settings")
    usage = {"usageMetadata": {"promptTokenCount": 2000, "cachedContentTokenCount": 1536}}
    assert cache_usage("gemini", usage) == CacheUsage(
        "gemini", read_tokens=1536, uncached_tokens=464
    )


# -- Bedrock Converse ------------------------------------------------------------------------


def bedrock_body(tools: list[str], *, points: bool = True, turns: int = 1) -> dict[str, Any]:
    point = {"cachePoint": {"type": "default"}}
    specs: list[Any] = [
        {"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}} for n in tools
    ]
    messages: list[Any] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": [{"text": f"question {turn}"}]})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": [{"text": f"answer {turn}"}]})
    if points:
        specs.append(point)
        messages[-1] = {**messages[-1], "content": [*messages[-1]["content"], point]}
    return {
        "messages": messages,
        "system": [{"text": "You are careful."}, *([point] if points else [])],
        "toolConfig": {"tools": specs, "toolChoice": {"auto": {}}},
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.1},
    }


def test_bedrock_converse_is_split_in_cache_order_up_to_the_last_cache_point() -> None:
    split = split_request(bedrock_body(["search", "fetch"]), url=BEDROCK_URL)
    assert split is not None and split.provider == "bedrock"
    assert list(split.view.blocks) == ["tools", "system", "messages"]
    # toolChoice {"auto": {}} is Bedrock's default: the same cache key as no toolChoice
    assert split.view.settings == {"modelId": "us.anthropic.claude-sonnet-4-5-v1:0"}
    assert split.breakpoints == (
        "/tools/2/cachePoint",
        "/system/1/cachePoint",
        "/messages/0/content/1/cachePoint",
    )
    assert split.rule == "breakpoint" and split.markers == ("cachePoint",)

    plain = split_request(bedrock_body(["search"], points=False), url=BEDROCK_URL)
    assert plain is not None and plain.rule == "automatic"
    assert list(plain.prefix.blocks) == ["tools", "system"]
    assert detect_provider(bedrock_body(["a"])) == "bedrock"  # by shape, before Anthropic's
    usage = {"usage": {"inputTokens": 30, "cacheReadInputTokens": 900, "cacheWriteInputTokens": 0}}
    assert cache_usage("bedrock", usage) == CacheUsage(
        "bedrock", read_tokens=900, uncached_tokens=30
    )


@pytest.mark.parametrize(
    ("body", "provider"),
    [
        ({"model": "claude-opus-4-6", "max_tokens": 64, "messages": []}, ANTHROPIC),
        ({"model": "m", "cache_control": {"type": "ephemeral"}, "messages": []}, ANTHROPIC),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "hi", "cache_control": {}}],
                    }
                ]
            },
            ANTHROPIC,
        ),
        ({"model": "claude-opus-4-6", "messages": []}, None),  # no max_tokens: Chat's shape too
        ({"model": "gpt-5.6", "max_tokens": 64, "messages": []}, None),
    ],
    ids=["claude-model", "automatic-marker", "marked-block", "no-max-tokens", "other-model"],
)
def test_a_minimal_messages_body_is_anthropics_by_its_model_or_its_markers(
    body: dict[str, Any], provider: str | None
) -> None:
    assert detect_provider(body) == provider  # without a URL, as harness lint reads a body


def test_bedrock_tool_moves_are_named_by_tool_spec() -> None:
    report = compare(
        view_of_value(bedrock_body(["search", "fetch"])),
        view_of_value(bedrock_body(["fetch", "search"])),
    )
    assert (report.verdict, report.kind, report.tool) == ("tools_changed", "reorder", "fetch")
    assert report.tools_a == ("search", "fetch")  # the cache point is not a tool


def test_the_harness_request_and_header_shapes_are_still_read_as_such() -> None:
    request = {"provider": "p", "model": "m", "tools": [{"name": "a"}], "system": "s"}
    view = view_of_value(request)
    assert view.provider == "harness" and list(view.blocks) == ["tools", "system"]
    header = {"config": {"provider": "p", "model": "m"}, "system": "s", "tools": []}
    assert view_of_value(header).settings == {"provider": "p", "model": "m"}


class Acme(Provider):
    """A third party's provider: its own host, system then tools, the whole body the prefix."""

    name = "acme"

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        return url is not None and "acme.test" in url

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        blocks = {key: body[key] for key in ("system", "tools", "messages") if key in body}
        view = CacheView({"model": body.get("model")}, blocks, provider=self.name)
        return RequestSplit.whole(view)

    def usage(self, response: Any) -> CacheUsage | None:
        return CacheUsage(self.name, read_tokens=int(response.get("cached", 0)))


@pytest.fixture
def acme() -> Iterator[Provider]:
    provider = register_provider(Acme)
    yield provider
    unregister_provider("acme")


def test_a_registered_provider_is_asked_first(acme: Provider) -> None:
    body = {"model": "m", "system": "s", "tools": [], "messages": []}
    assert isinstance(acme, Acme) and registered_providers()[0] is acme
    assert detect_provider(body, "https://acme.test/v1/messages") == "acme"
    split = split_request(body, url="https://acme.test/v1/messages")
    assert split is not None and list(split.view.blocks) == ["system", "tools", "messages"]
    assert cache_usage("acme", {"cached": 12}) == CacheUsage("acme", read_tokens=12)
    assert detect_provider(body, "https://api.anthropic.com/v1/messages") == ANTHROPIC


def test_after_unregistering_the_built_in_answers_again(acme: Provider) -> None:
    unregister_provider("acme")
    assert detect_provider({"messages": []}, "https://acme.test/v1/messages") == ANTHROPIC


def test_something_that_is_not_a_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a provider"):
        register_provider(object())


class DuckAcme:
    """A provider written to the protocol before `Provider` was a base class: no subclass."""

    name = "duck-acme"
    hosts = "duck.acme.test"

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        return url is not None and "duck.acme.test" in url

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return RequestSplit.whole(CacheView({}, {"body": dict(body)}, provider=self.name))


def test_a_provider_that_is_not_a_subclass_is_adopted_with_the_defaults() -> None:
    adopted = register_provider(DuckAcme)
    try:
        assert isinstance(adopted, Provider) and isinstance(adopted.inner, DuckAcme)
        assert detect_provider({"x": 1}, "https://duck.acme.test/v1") == "duck-acme"
        assert cache_usage("duck-acme", {"cached": 1}) is None  # no usage: the default
        assert "duck.acme.test" in provider_hosts()  # one string, read as one host
    finally:
        unregister_provider("duck-acme")
    assert "duck.acme.test" not in provider_hosts()


def test_a_subclass_without_claims_or_split_cannot_be_made() -> None:
    class Half(Provider):
        name = "half"

        def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
            return False

    with pytest.raises(TypeError, match="abstract"):
        register_provider(Half)


def _installed(tmp_path: Path, target: str) -> Path:
    """A package `acme_provider` and its metadata, with a `harness.providers` entry point."""
    (tmp_path / "acme_provider.py").write_text(
        textwrap.dedent(
            """
            from harness.providers import CacheUsage
            from harness._shared._views import CacheView, RequestSplit

            class Acme:
                name = "acme"

                def claims(self, body, url):
                    return url is not None and "acme.test" in url

                def split(self, body, headers):
                    view = CacheView({}, {"body": dict(body)}, provider="acme")
                    return RequestSplit.whole(view)

                def usage(self, response):
                    return None
            """
        )
    )
    info = tmp_path / "acme_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[harness.providers]\nacme = {target}\n")
    return tmp_path


def _detect_in_child(path: Path) -> subprocess.CompletedProcess[str]:
    script = (
        "import warnings; warnings.simplefilter('always')\n"
        "from harness.providers import detect_provider\n"
        "print(detect_provider({'messages': []}, 'https://acme.test/v1/messages'))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.slow
def test_an_installed_entry_point_adds_a_provider(tmp_path: Path) -> None:
    child = _detect_in_child(_installed(tmp_path, "acme_provider:Acme"))
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "acme"


@pytest.mark.slow
def test_a_broken_entry_point_is_skipped_with_a_warning(tmp_path: Path) -> None:
    child = _detect_in_child(_installed(tmp_path, "acme_provider:Missing"))
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == ANTHROPIC
    assert "entry point 'acme'" in child.stderr and "skipped" in child.stderr


def test_each_provider_reads_its_own_cache_signal() -> None:
    anthropic = {
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 5,
        },
        "diagnostics": {"cache_miss_reason": {"type": "tools_changed"}},
    }
    assert cache_usage("anthropic", anthropic) == CacheUsage(
        "anthropic",
        read_tokens=900,
        written_tokens=5,
        uncached_tokens=10,
        miss_reason="tools_changed",
    )
    chat = {"usage": {"prompt_tokens": 2000, "prompt_tokens_details": {"cached_tokens": 1536}}}
    assert cache_usage("openai-chat", chat) == CacheUsage(
        "openai-chat", read_tokens=1536, uncached_tokens=464
    )
    responses = {"usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024}}}
    assert cache_usage("openai-responses", responses) == CacheUsage(
        "openai-responses", read_tokens=1024, uncached_tokens=176
    )
    deepseek = {"usage": {"prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 7}}
    assert cache_usage("deepseek", deepseek) == CacheUsage(
        "deepseek", read_tokens=64, uncached_tokens=7
    )
    assert cache_usage("anthropic", {"id": "no usage"}) is None
    assert cache_usage("nobody", anthropic) is None


def test_anthropic_lists_every_breakpoint_in_cache_order() -> None:
    mark = {"type": "ephemeral"}
    body = {
        "model": "m",
        "tools": [{"name": "a", "input_schema": {}, "cache_control": mark}],
        "system": [{"type": "text", "text": "s", "cache_control": mark}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": mark}]}
        ],
    }
    split = split_request(body, url="https://api.anthropic.com/v1/messages")
    assert split is not None
    assert split.breakpoints == (
        "/tools/0/cache_control",
        "/system/0/cache_control",
        "/messages/0/content/0/cache_control",
    )
    assert split.breakpoint == split.breakpoints[-1] and split.rule == "breakpoint"
