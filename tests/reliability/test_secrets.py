"""Secrets: a recording holding a key-shaped string fails and writes nothing; loading one warns.

Failing messages name the file, the kind of secret and its line and column, never the secret.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness._shared._files import SecretWarning
from harness._shared._secrets import scan_secrets
from harness.capture import CaptureSession, SecretLeak, load_cassette
from harness.scenarios._formats import load_fixture
from tests.support.inner import inner_pytest
from tests.support.paths import compiled_from_beside, copy_project
from tests.support.properties import examples
from tests.support.stand_ins import anthropic_message

from .conftest import (
    ANTHROPIC_KEY,
    AWS_KEY_ID,
    GITHUB_TOKEN,
    SCENARIO_IMPORTS,
    Cli,
    one_line,
    scenario_source,
    tree,
)

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def assert_secret_absent(secret: str, *texts: str) -> None:
    """Neither the secret nor a recognisable part of it is shown."""
    for text in texts:
        assert secret not in text
        assert secret[-16:] not in text and secret[4:20] not in text


def files_holding(root: Path, secret: str) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and not compiled_from_beside(p) and secret.encode() in p.read_bytes()
    ]


def edit_scenario(path: Path, edit: Any) -> None:
    data = json.loads(path.read_bytes())
    edit(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def set_tool_result(tool: str, text: str) -> Any:
    def edit(data: dict[str, Any]) -> None:
        found = [t for p in data["plugins"] for t in p.get("tools", []) if t["name"] == tool]
        assert found
        found[0]["result"] = text

    return edit


def set_user_turn(text: str) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["loops"][0][0] = text

    return edit


def set_reply(text: str) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["script"][-1]["text"] = text

    return edit


CASES = {
    "tool-result": ("tool-turn", set_tool_result, ANTHROPIC_KEY, "an Anthropic API key"),
    "user-turn": ("text-turn", set_user_turn, ANTHROPIC_KEY, "an Anthropic API key"),
    "aws-in-user-turn": ("text-turn", set_user_turn, AWS_KEY_ID, "an AWS access key id"),
    "token-in-reply": ("text-turn", set_reply, GITHUB_TOKEN, "a GitHub token"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_harness_record_refuses_a_recording_holding_a_secret_and_writes_nothing(
    project: Path, cli: Cli, case: str
) -> None:
    scenario, where, secret, kind = CASES[case]
    if where is set_tool_result:
        edit = where("list_dir", f"README.md\n.env: ANTHROPIC_API_KEY={secret}\n")
    else:
        edit = where(f"here is my key {secret}, use it")
    edit_scenario(project / "fixtures" / scenario / "scenario.json", edit)
    before = tree(project)

    with pytest.warns(SecretWarning):  # reading the input already warns
        code, out, err = cli("record", f"fixtures/{scenario}")

    assert code == 2
    line = one_line(err)
    assert line.startswith(f"harness record: refusing to write fixtures/{scenario}/")
    assert kind in line and "nothing was written" in line
    assert "line " in line and "column " in line
    assert_secret_absent(secret, out, err)
    assert tree(project) == before  # same files, same bytes: no log, no pin, no temp file
    assert files_holding(project, secret) == [project / "fixtures" / scenario / "scenario.json"]


# -- capture sessions ---------------------------------------------------------------------------


def provider(echo: bool = False) -> httpx2.MockTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        text = request.content.decode() if echo else "Sunny."
        return httpx2.Response(200, json=anthropic_message(text))

    return httpx2.MockTransport(answer)


def body(user: str = "Weather?") -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 16,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": user}],
    }


PLAIN_KEY = "plain-looking-credential-0042"  # not key-shaped: caught as a redacted header's value
LEAKS: dict[str, tuple[dict[str, Any], bool, str]] = {
    "request-body": ({"json": body(f"my key is {ANTHROPIC_KEY}")}, False, ANTHROPIC_KEY),
    "echoed-in-response": ({"json": body(f"repeat {ANTHROPIC_KEY}")}, True, ANTHROPIC_KEY),
    "unredacted-header": (
        {"json": body(), "headers": {"x-debug-note": ANTHROPIC_KEY}},
        False,
        ANTHROPIC_KEY,
    ),
    "query-parameter": ({"json": body(), "params": {"note": ANTHROPIC_KEY}}, False, ANTHROPIC_KEY),
    "api-key-header-echoed": (
        {"json": body(f"say {PLAIN_KEY}"), "headers": {"x-api-key": PLAIN_KEY}},
        False,
        PLAIN_KEY,
    ),
}


@pytest.mark.parametrize("case", list(LEAKS))
def test_a_capture_holding_a_secret_raises_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.chdir(tmp_path)
    options, echo, secret = LEAKS[case]
    cassette = tmp_path / "fixtures" / "cassettes" / "test_leak.json"
    session = CaptureSession.for_test(
        cassette, "record", writes_allowed=True, upstream=provider(echo)
    )
    session.httpx2_client().post(ANTHROPIC_URL, **options).raise_for_status()

    with pytest.raises(SecretLeak) as caught:
        session.finish()

    message = str(caught.value)
    assert "fixtures/cassettes/test_leak.json" in message
    assert "nothing was written" in message and "line " in message
    assert_secret_absent(secret, message)
    assert not cassette.exists()
    assert files_holding(tmp_path, secret) == []


def test_a_redacted_key_is_recorded_without_the_key(tmp_path: Path) -> None:
    cassette = tmp_path / "ok.json"
    session = CaptureSession.for_test(cassette, "record", writes_allowed=True, upstream=provider())
    session.httpx2_client().post(
        ANTHROPIC_URL,
        json=body(),
        headers={"x-api-key": ANTHROPIC_KEY, "authorization": f"Bearer {ANTHROPIC_KEY}"},
    )
    files, _ = session.finish()
    assert [path for path, _ in files] == [cassette]
    assert ANTHROPIC_KEY.encode() not in files[0][1]
    assert b"[redacted]" in files[0][1]


PLUGIN_CONFTEST = """
import httpx2
import pytest


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True}))
"""

PLUGIN_TEST = """
KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"


def test_leaks(header_capture):
    client = header_capture.httpx2_client()
    client.post(
        "https://api.anthropic.com/v1/messages",
        json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": KEY}]},
    )
"""


def test_the_plugin_fails_a_leaking_capture_and_writes_no_cassette(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(PLUGIN_CONFTEST)
    pytester.makepyfile(test_leak=PLUGIN_TEST)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1, errors=1)  # the teardown refuses the cassette
    out = result.stdout.str()
    assert "SecretLeak" in out and "an Anthropic API key" in out
    assert_secret_absent(ANTHROPIC_KEY, out)
    assert not (pytester.path / "fixtures").exists()
    assert files_holding(pytester.path, ANTHROPIC_KEY) == []


def test_the_plugin_refuses_a_scenario_recording_holding_a_secret(
    pytester: pytest.Pytester,
) -> None:
    source = scenario_source("leaky", tool_result="KEY").replace("'KEY'", "KEY")
    pytester.makepyfile(
        test_leak=SCENARIO_IMPORTS
        + 'KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"\n'
        + f"\n\ndef test_leak(agent_harness):\n    agent_harness.check({source})\n"
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "refusing to write" in out and "an Anthropic API key" in out
    assert_secret_absent(ANTHROPIC_KEY, out)
    assert not (pytester.path / "fixtures").exists()
    assert not (pytester.path / "snapshots").exists()


def test_the_plugin_never_writes_a_secret_into_scenario_json(pytester: pytest.Pytester) -> None:
    source = scenario_source("leaky", description="KEY").replace("'KEY'", "KEY")
    pytester.makepyfile(
        test_leak=SCENARIO_IMPORTS
        + 'KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"\n'
        + f"\n\ndef test_leak(agent_harness):\n    agent_harness.check({source})\n"
    )
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    assert files_holding(pytester.path, ANTHROPIC_KEY) == []


# -- loading warns ------------------------------------------------------------------------------


def test_loading_a_fixture_that_holds_a_secret_warns(tmp_path: Path) -> None:
    copy_project(tmp_path)
    path = tmp_path / "fixtures/text-turn/scenario.json"
    edit_scenario(path, lambda d: d.update(description=f"recorded with {ANTHROPIC_KEY}"))

    with pytest.warns(SecretWarning) as caught:
        fixture = load_fixture(path.parent)

    assert fixture.scenario.name == "text-turn"  # it still loads: a warning, not an error
    [warning] = [w for w in caught if issubclass(w.category, SecretWarning)]
    message = str(warning.message)
    assert str(path) in message and "an Anthropic API key" in message and "line " in message
    assert_secret_absent(ANTHROPIC_KEY, message)


def test_loading_a_cassette_that_holds_a_secret_warns(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    cassette.write_text(
        json.dumps(
            {
                "kind": "harness/capture",
                "format": 1,
                "exchanges": [
                    {
                        "request": {"method": "POST", "url": ANTHROPIC_URL, "text": GITHUB_TOKEN},
                        "response": {"status": 200, "text": "ok"},
                    }
                ],
            },
            indent=2,
        )
    )
    with pytest.warns(SecretWarning, match="a GitHub token") as caught:
        load_cassette(cassette)
    assert_secret_absent(GITHUB_TOKEN, *(str(w.message) for w in caught))


def test_loading_a_pin_whose_system_text_holds_a_secret_warns(tmp_path: Path) -> None:
    from harness.scenarios._pins import load_pin

    copy_project(tmp_path)
    system = tmp_path / "snapshots/headers/default/system-prompt.expected.md"
    system.write_text(system.read_text() + f"\nAPI key: {ANTHROPIC_KEY}\n")
    with pytest.warns(SecretWarning):
        load_pin(tmp_path / "snapshots" / "headers", "default")


_PIECES = (
    "sk-ant-", "sk-", "Bearer ", "AKIA", "ASIA", "ghp_", "github_pat_", "AIza", "xoxb-", "eyJ",
    "-----BEGIN RSA PRIVATE KEY-----", "api_key=", "PASSWORD: ", "pa\u017f\u017fword=",
    "Secret_Key=", "refresh-token:", "AUTH_TOKEN=",
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_PIECES),
            st.text(
                alphabet=string.ascii_letters + string.digits + "_-:=\"' \n/+.\u017f", max_size=50
            ),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_needle_prefilter_never_changes_what_the_scan_finds(
    parts: list[tuple[str, str]],
) -> None:
    from harness._shared._secret_shapes import SECRET_PATTERNS, SecretPattern

    unfiltered = tuple(SecretPattern(p.kind, p.regex) for p in SECRET_PATTERNS)
    data = "".join(a + b for a, b in parts).encode()
    assert scan_secrets(data) == scan_secrets(data, unfiltered)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES).map(str.encode),
            st.text(
                alphabet=string.ascii_letters + string.digits + "_-:=\"' \n/+.\u017f\u00e9\u4e2d",
                max_size=40,
            ).map(str.encode),
            st.binary(max_size=6),  # invalid UTF-8 too: decoded with replacement characters
        ),
        min_size=1,
        max_size=10,
    )
)
def test_the_byte_clearance_never_changes_what_the_scan_finds(parts: list[bytes]) -> None:
    """`scan_secrets` skips decoding bytes `may_hold_secrets` clears; the findings are those of
    the decoded text, scanned whole."""
    from harness._shared._secrets import findings_in

    data = b"".join(parts)
    assert scan_secrets(data) == findings_in(data.decode("utf-8", "replace"))


def test_the_byte_clearance_clears_clean_bytes_and_keeps_keys() -> None:
    from harness._shared._secret_shapes import SECRET_PATTERNS, may_hold_secrets

    digest = b'"sha256": "' + b"9d189c90dbf8da4cae167d4beb0c5c1c" * 2 + b'"'
    assert not may_hold_secrets(digest * 100 + "caf\u00e9 ".encode() * 10, SECRET_PATTERNS)
    key = b"sk-ant-" + b"a1" * 20
    folded = "pa\u017f\u017fword=".encode() + b"a" * 40  # (?i) reads "\u017f" as "s"
    for wrapped in (
        folded,
        key,
        b"x" * 300 + key,
        "\u00e9\u00e9 ".encode() + key,
        b"Bearer " + b"t" * 30,
    ):
        assert may_hold_secrets(wrapped, SECRET_PATTERNS), wrapped
    assert may_hold_secrets(b"no key here", SECRET_PATTERNS, secrets=["key here"])
