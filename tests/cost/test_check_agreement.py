"""`harness check` prints the agreement per provider when recordings hold the providers' counters:
full on a cassette whose counters match the simulation, none on one whose provider read nothing;
nothing on a cassette of a stand-in's made-up usage; the cassettes shipped with the examples
(recorded before the cost model) still check and cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession
from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL
from tests.support.conversations import answer, conversation, entry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: dict[str, Any]) -> int:
    path = tmp_path / "one.jsonl"
    path.write_text(entry(body) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    found: int = json.loads(capsys.readouterr().out)["sessions"][0]["input_tokens"]
    return found


def cassette(path: Path, bodies: list[dict[str, Any]], answers: list[dict[str, Any]]) -> Path:
    replies = iter(answers)
    upstream = httpx2.MockTransport(lambda request: httpx2.Response(200, json=next(replies)))
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream)
    for body in bodies:
        session.httpx2_client().post(ANTHROPIC_URL, json=body)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(session.finish().files[0][1])
    return path


def check(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str]:
    code = main(["check", str(path), "--shuffle", "0"])
    return code, capsys.readouterr().out


def test_agreement_per_provider(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bodies = [conversation(1), conversation(2)]
    one, two = (tokens(tmp_path, capsys, body) for body in bodies)
    folder = tmp_path / "fixtures" / "cassettes" / "tests"
    agree = cassette(folder / "test_agree.json", bodies, [answer(0, one), answer(one, two - one)])
    code, out = check(capsys, agree)
    assert code == 0, out
    assert (
        "agreement with the providers' recorded cache reads: anthropic 100% (2 request(s))" in out
    )
    differ = cassette(folder / "test_differ.json", bodies, [answer(0, one), answer(0, two)])
    code, out = check(capsys, differ)
    assert "agreement with the providers' recorded cache reads: anthropic 0% (2 request(s))" in out
    assert "warning provider-disagrees: the provider read 0 tokens from its cache" in out


def test_a_stand_ins_made_up_usage_is_no_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(1), conversation(2)]
    made_up = {"type": "message", "usage": {"input_tokens": 10, "output_tokens": 2}}
    path = cassette(tmp_path / "fixtures" / "test_stand_in.json", bodies, [made_up, made_up])
    code, out = check(capsys, path)
    assert code == 0 and "agreement" not in out and "provider-disagrees" not in out


@pytest.mark.parametrize(
    "example", sorted(p.name for p in EXAMPLES.iterdir() if (p / "fixtures" / "cassettes").is_dir())
)
def test_cassettes_recorded_before_the_cost_model_still_check_and_cost(
    capsys: pytest.CaptureFixture[str], example: str
) -> None:
    folder = EXAMPLES / example / "fixtures" / "cassettes"
    assert main(["check", str(folder), "--shuffle", "0"]) == 0
    capsys.readouterr()
    assert main(["cost", str(folder), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["requests"] > 0
    assert all(session["usd"] is not None for session in report["sessions"])
