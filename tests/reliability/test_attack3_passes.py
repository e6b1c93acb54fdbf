"""Issue 32's third round, silent passes: a green that is false.

- a cache budget of NaN, infinity or a negative (marker or ini) compared false with every cost,
  so it passed whatever the test sent: now the test errors, in one line naming the marker or the
  ini value and what to write;
- a budgeted test that sent nothing passed in record mode and under `no_requests="ignore"`
  (the README says it fails: nothing would enforce the budget): now it fails in every mode;
- `harness check` ignored unknown fields, so a cassette whose request bodies sat under a
  misspelt key judged nothing and passed: every file struct now refuses unknown fields, in one
  line naming the file and the field, and a cassette that holds no request body is exit 2.
  Every cassette shipped in fixtures/, tests/ and examples/ (formats 1 and 2) still loads, as it
  is, with its keys sorted, and rewritten as format 3.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.capture import load_cassette
from harness.capture._cassette import HttpRequest, all_exchanges
from harness.capture._found import request_of
from harness.capture._judged import has_body
from harness.capture._writing import encode_cassette
from harness.scenarios._formats import load_fixture
from tests.reliability.conftest import Cli, one_line
from tests.support.inner import inner_pytest
from tests.support.paths import EXAMPLES, ROOT, SHIPPED_FIXTURES

# -- 1. a budget that is not a finite number in its range ----------------------------------------

AGENT = """
import httpx2

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "rule " * 1000, "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "question"}],
}


def chat():
    with httpx2.Client() as client:
        reply = client.post("https://api.anthropic.com/v1/messages", json=BODY)
    return reply.json()["content"][0]["text"]
"""

CONFTEST = """
import httpx2
import pytest

MESSAGE = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2},
}


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=MESSAGE))
"""

BAD_MARKERS = {
    "nan_usd": 'max_usd=float("nan")',
    "nan_rate": 'min_hit_rate=float("nan")',
    "inf_usd": 'max_usd=float("inf")',
    "negative_usd": "max_usd=-0.01",
    "rate_over_one": "min_hit_rate=1.5",
    "boolean_usd": "max_usd=True",
}
GOOD_MARKERS = {  # the near misses: the edges of each range, and a limit lifted
    "zero_rate": "min_hit_rate=0.0",
    "generous_usd": "max_usd=10.0",
    "lifted": "max_usd=None, min_hit_rate=None",
}


def marked(name: str, budget: str, body: str = "assert agent.chat() == 'Sunny.'") -> str:
    return f"""

@pytest.mark.header_capture
@pytest.mark.cache_budget({budget})
def test_{name}():
    {body}
"""


def project(pytester: pytest.Pytester, tests: str, ini: str = "") -> None:
    pytester.makepyfile(
        agent=AGENT, conftest=CONFTEST, test_agent="import pytest\n\nimport agent\n" + tests
    )
    pytester.syspathinsert()
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return inner_pytest(pytester, "-p", "no:randomly", "-p", "no:cacheprovider", *args)


@pytest.mark.slow
def test_a_marker_budget_that_is_no_finite_number_in_range_errors_the_test(
    pytester: pytest.Pytester,
) -> None:
    tests = "".join(
        marked(name, budget) for name, budget in {**BAD_MARKERS, **GOOD_MARKERS}.items()
    )
    project(pytester, tests)
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(errors=len(BAD_MARKERS), passed=len(GOOD_MARKERS))
    out = result.stdout.str()
    for given in ("max_usd=nan", "min_hit_rate=nan", "max_usd=inf", "max_usd=-0.01"):
        assert (
            f"harness: @pytest.mark.cache_budget: {given} is not a finite number in its range;"
            in out
        )
    assert "min_hit_rate=1.5 is not a finite number in its range" in out
    assert "max_usd=True is not a finite number in its range" in out
    assert "it takes max_usd=<dollars per conversation, 0 or more>, min_hit_rate=<0 to 1>" in out
    # the errors come before the test body ran: the test is an error, not a failure
    assert "ERROR at setup of test_nan_usd" in out
    assert "During handling of the above exception" not in out  # one line, no chained report


@pytest.mark.slow
@pytest.mark.parametrize("value", ["max_usd=nan", "min_hit_rate=nan", "max_usd=inf", "max_usd=-1"])
def test_an_ini_budget_that_is_no_finite_number_in_range_errors_every_captured_test(
    pytester: pytest.Pytester, value: str
) -> None:
    plain = (
        "\n\n@pytest.mark.header_capture\ndef test_plain():\n    assert agent.chat() == 'Sunny.'\n"
    )
    project(
        pytester,
        plain + marked("overridden", "model='claude-sonnet-4-5'"),
        f"harness_cache_budget = {value}",
    )
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(errors=2)
    shown = value.replace("=", "='") + "'"
    assert f"harness: harness_cache_budget: {shown} is not a finite number in its range;" in (
        result.stdout.str()
    )


@pytest.mark.slow
def test_a_finite_ini_budget_still_passes_and_fails(pytester: pytest.Pytester) -> None:
    # the near miss of the test above: the same two tests under a budget each can meet or miss
    plain = (
        "\n\n@pytest.mark.header_capture\ndef test_plain():\n    assert agent.chat() == 'Sunny.'\n"
    )
    project(pytester, plain + marked("strict", "max_usd=0.0"), "harness_cache_budget = max_usd=1e3")
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(passed=1, failed=1)
    assert "over the budget of $0.0000" in result.stdout.str()


# -- 2. a budgeted test that sent nothing --------------------------------------------------------

NOTHING = "pass  # the agent was refactored and no longer calls the model"


@pytest.mark.slow
def test_a_budgeted_test_that_sent_nothing_fails_in_every_mode(pytester: pytest.Pytester) -> None:
    tests = (
        marked("sent_nothing", "max_usd=0.05", NOTHING)
        + marked("ignored_and_sent_nothing", "min_hit_rate=0.5", NOTHING).replace(
            "@pytest.mark.header_capture", '@pytest.mark.header_capture(no_requests="ignore")'
        )
        # the near misses: a budgeted test that sent a request, and one whose limits are lifted
        + marked("sent_one", "max_usd=0.05")
        + marked("lifted_and_sent_nothing", "max_usd=None", NOTHING).replace(
            "@pytest.mark.header_capture", '@pytest.mark.header_capture(no_requests="ignore")'
        )
    )
    project(pytester, tests, "harness_cache_budget = max_usd=0.05")
    recorded = run(pytester, "--harness-mode=record")
    recorded.assert_outcomes(passed=2, failed=2)
    out = recorded.stdout.str()
    assert "_ test_sent_nothing _" in out and "_ test_ignored_and_sent_nothing _" in out
    assert (
        "harness: the cache budget (max_usd=0.05) cannot be enforced: the test sent no request"
        " the cost model could price" in out
    )
    assert "harness: the cache budget (max_usd=0.05, min_hit_rate=0.5) cannot be enforced" in out
    # check mode: the recorded test replays and passes; the others fail as before
    checked = run(pytester)
    checked.assert_outcomes(passed=2, failed=2)
    assert "cannot be enforced" in checked.stdout.str()


# -- 3. unknown fields, and a cassette with no request body ---------------------------------------

FOLLOW_UP = EXAMPLES / "traces" / "cassettes" / "test_follow_up.json"


def cassette_project(tmp_path: Path, document: dict[str, Any]) -> Path:
    folder = tmp_path / "fixtures" / "cassettes"
    folder.mkdir(parents=True)
    path = folder / "test_follow_up.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def shipped() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(FOLLOW_UP.read_text(encoding="utf-8"))
    return document


def misspell(document: dict[str, Any], where: str) -> None:
    exchanges = document["exchanges"]
    if where == "request body":
        for exchange in exchanges:
            exchange["request"]["jsno"] = exchange["request"].pop("json")
    elif where == "response":
        exchanges[0]["response"]["line"] = exchanges[0]["response"].pop("lines")
    elif where == "exchange":
        exchanges[0]["timings"] = {"start_ms": 0, "end_ms": 1}
    elif where == "file":
        document["exchange"] = document.pop("exchanges")
    elif where == "proof":
        document["proofs"] = [{"units": [], "exchanges": exchanges[:1], "unit": "a"}]


@pytest.mark.parametrize("where", ["request body", "response", "exchange", "file", "proof"])
def test_harness_check_refuses_an_unknown_field_in_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    document = shipped()
    misspell(document, where)
    path = cassette_project(tmp_path, document)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "fixtures")
    assert code == 2, out + err
    line = one_line(err)
    assert line.startswith("harness check: fixtures/cassettes/test_follow_up.json: ")
    assert "unknown field" in line
    assert path.read_bytes() == json.dumps(document, indent=2).encode()  # nothing rewritten


def test_the_same_cassette_spelt_right_passes(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette_project(tmp_path, shipped())
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "fixtures")
    assert (code, err) == (0, ""), out + err
    assert "fixtures/cassettes/test_follow_up.json: ok (3 requests)" in out


def test_a_cassette_with_no_request_body_is_an_error(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = shipped()
    for exchange in document["exchanges"]:
        del exchange["request"]["json"]
    cassette_project(tmp_path, document)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "fixtures")
    assert code == 2, out + err
    assert "test_follow_up.json: holds no request body" in one_line(err)
    code, out, err = cli("lint", "fixtures/cassettes/test_follow_up.json")
    assert code == 2 and "holds no request body" in one_line(err)


def test_a_cassette_with_one_request_body_left_is_judged(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the near miss: a body-less request (a GET, a cancel) beside one with a body is judged
    document = shipped()
    for exchange in document["exchanges"][1:]:
        del exchange["request"]["json"]
    cassette_project(tmp_path, document)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "fixtures")
    assert "holds no request body" not in out + err
    assert code == 0, out + err


def test_a_cassette_of_requests_without_a_body_by_their_method_is_judged(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the other near miss: a test that only lists models sends GETs, which carry no body
    document = shipped()
    for exchange in document["exchanges"]:
        del exchange["request"]["json"]
        exchange["request"]["method"] = "GET"
    cassette_project(tmp_path, document)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "fixtures")
    assert "holds no request body" not in out + err
    assert code == 0, out + err


def shipped_cassettes() -> list[Path]:
    found = [
        path
        for root in (SHIPPED_FIXTURES, ROOT / "tests", EXAMPLES)
        for path in sorted(root.rglob("*.json"))
        if b'"harness/capture"' in path.read_bytes()
    ]
    return found


def test_every_shipped_cassette_still_loads_sorted_and_as_format_3(tmp_path: Path) -> None:
    cassettes = shipped_cassettes()
    formats = set()
    for number, path in enumerate(cassettes):
        capture = load_cassette(path)
        formats.add(capture.format)
        assert any(has_body(e.request) for e in all_exchanges(capture)), path
        document = json.loads(path.read_text(encoding="utf-8"))
        resorted = tmp_path / f"sorted-{number}.json"
        resorted.write_text(json.dumps(document, indent=1, sort_keys=True), encoding="utf-8")
        assert load_cassette(resorted) == capture, path
        rewritten = tmp_path / f"format3-{number}.json"
        rewritten.write_bytes(encode_cassette(capture, rewritten))
        again = load_cassette(rewritten)
        assert again.format == 3
        assert [e.request.body for e in all_exchanges(again)] == [
            e.request.body for e in all_exchanges(capture)
        ], path
        assert [e.response.body for e in all_exchanges(again)] == [
            e.response.body for e in all_exchanges(capture)
        ], path
    assert len(cassettes) >= 9 and formats == {1, 2}, (len(cassettes), formats)


def test_every_shipped_scenario_still_loads() -> None:
    folders = sorted(path.parent for path in SHIPPED_FIXTURES.glob("*/scenario.json"))
    assert len(folders) >= 6
    for folder in folders:
        fixture = load_fixture(folder)
        assert fixture.recorded, folder


def test_a_scenario_log_event_with_an_unknown_field_is_refused(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "fixtures" / "text-turn"
    shutil.copytree(SHIPPED_FIXTURES / "text-turn", folder)
    shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
    log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
    log["events"][0]["turnn"] = 1
    (folder / "log.json").write_text(json.dumps(log, indent=2), encoding="utf-8")
    code, out, err = cli("replay", str(folder))
    assert code == 2, out + err
    line = one_line(err)
    assert "log.json" in line and "unknown field `turnn`" in line


def test_a_price_conflict_with_an_unknown_field_is_refused(tmp_path: Path, cli: Cli) -> None:
    prices = {
        "kind": "harness/prices",
        "format": 1,
        "rows": [
            {
                "providers": ["anthropic"],
                "models": ["claude-sonnet-4-5*"],
                "effective_from": "2026-01-01",
                "input": 2.4,
                "output": 12,
                "cache_read": 0.24,
                "source": "our contract",
                "checked_on": "2026-11-30",
                "conflicts": [{"claim": "3.0", "source": "the list", "sourec": "x"}],
            }
        ],
    }
    path = tmp_path / "harness-prices.json"
    path.write_text(json.dumps(prices), encoding="utf-8")
    code, out, err = cli("cost", str(FOLLOW_UP), "--prices", str(path))
    assert code == 2, out + err
    assert "unknown field `sourec`" in one_line(err)
    del prices["rows"][0]["conflicts"][0]["sourec"]  # the near miss
    path.write_text(json.dumps(prices), encoding="utf-8")
    code, out, err = cli("cost", str(FOLLOW_UP), "--prices", str(path))
    assert (code, err) == (0, ""), out + err
    assert "our contract" in out


def test_a_session_line_keeps_its_own_fields_beside_a_recorded_request() -> None:
    # `request_of` reads a recorded request out of a log line: the line's own keys (its time)
    # are not the request's fields, and stay allowed; the request itself is strict
    line = {"method": "POST", "url": "https://api.openai.com/v1/chat/completions", "json": {}}
    assert request_of({**line, "time": 1.5}) == HttpRequest(method="POST", url=line["url"], json={})
    with pytest.raises(msgspec.ValidationError, match="unknown field `jsno`"):
        msgspec.convert({**line, "jsno": {}}, HttpRequest)
