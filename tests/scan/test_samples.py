"""Every sample in examples/traces/ (one per format, made from each tool's documented export
shape) read by its own reader, detected without `--from`, and judged: the break each one plants,
with the evidence its format allows and the deploy its key names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scan.traces import run
from tests.support.paths import EXAMPLES

TRACES = EXAMPLES / "traces"

# sample, extra arguments, format, requests, the findings (session, request, verdict, evidence,
# severity), the deploy of the break
CASES = [
    (
        "otel.json",
        (),
        "otel",
        8,
        [
            ("walk-2002", 3, "tools_changed", "structural", "error"),
            ("walk-3003", 2, "unexplained_miss", "counters", "warning"),
        ],
        "v1.5.0",
    ),
    (
        "openinference.jsonl",
        (),
        "openinference",
        6,
        [("walk-2002", 3, "system_changed", "exact", "error")],
        "v1.5.0",
    ),
    (
        "langfuse.json",
        (),
        "langfuse",
        6,
        [("walk-2002", 3, "tools_changed", "structural", "error")],
        "v1.5.0",
    ),
    (
        "litellm.json",
        ("--deploy-key", "metadata.spend_logs_metadata.deploy"),
        "litellm",
        6,
        [("walk-2002", 3, "system_changed", "digest", "error")],
        "v1.5.0",
    ),
    (
        "helicone.jsonl",
        ("--deploy-key", "properties.deploy"),
        "helicone",
        6,
        [("walk-2002", 3, "reasoning_effort_changed", "exact", "error")],
        "v1.5.0",
    ),
    (
        "bedrock.jsonl.gz",
        ("--deploy-key", "requestMetadata.deploy"),
        "bedrock",
        6,
        [("walk-2002", 3, "tools_changed", "exact", "error")],
        "v1.5.0",
    ),
    (
        "proxy.jsonl.zst",
        ("--deploy-key", "headers.x-deploy"),
        "jsonl",
        6,
        [("walk-2002", 3, "messages_changed", "exact", "error")],
        "v1.5.0",
    ),
    (
        "vcr_cassette.yaml",
        (),
        "vcr",
        3,
        [(str(TRACES / "vcr_cassette.yaml"), 3, "tools_changed", "exact", "error")],
        None,
    ),
    (
        "pydantic_ai_cassette.yaml",
        (),
        "pydantic-ai",
        3,
        [(str(TRACES / "pydantic_ai_cassette.yaml"), 3, "system_changed", "structural", "error")],
        None,
    ),
    (
        "cassettes",
        (),
        "cassette",
        6,
        [
            (
                str(TRACES / "cassettes" / "test_follow_up_reordered.json"),
                3,
                "tools_changed",
                "exact",
                "error",
            )
        ],
        None,
    ),
]


@pytest.mark.parametrize(
    ("sample", "extra", "fmt", "requests", "expected", "deploy"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_each_sample_is_read_and_its_break_found(
    capsys: pytest.CaptureFixture[str],
    sample: str,
    extra: tuple[str, ...],
    fmt: str,
    requests: int,
    expected: list[tuple[str, int, str, str, str]],
    deploy: str | None,
) -> None:
    code, out, err = run(capsys, str(TRACES / sample), *extra, "--format", "json")
    assert err == ""
    report = json.loads(out)
    assert report["totals"]["formats"] == {fmt: requests}
    assert report["totals"]["malformed"] == 0
    found = [
        (f["session"], f["request"], f["verdict"], f["evidence"], f["severity"])
        for f in report["findings"]
    ]
    assert found == expected
    assert code == 1
    broken = report["findings"][0]
    assert broken["deploy"] == deploy
    if deploy is not None:
        assert report["introduced_by"][broken["verdict"]] == deploy
    if broken["evidence"] != "digest":
        assert broken["pointer"].startswith("/") and broken["byte"] >= 0


def test_from_names_the_format_and_a_wrong_one_finds_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, _ = run(capsys, str(TRACES / "langfuse.json"), "--from", "langfuse")
    assert code == 1
    code, _, err = run(capsys, str(TRACES / "langfuse.json"), "--from", "bedrock")
    assert code == 2 and "no requests found" in err and "malformed" in err
    code, _, err = run(capsys, str(TRACES / "langfuse.json"), "--from", "splunk")
    assert code == 2 and "invalid choice" in err


def test_a_bedrock_body_moved_to_s3_is_read_when_a_copy_is_beside_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def record(number: int, given: dict[str, object]) -> dict[str, object]:
        return {
            "schemaType": "ModelInvocationLog",
            "timestamp": f"2026-01-01T00:00:0{number}Z",
            "requestId": f"r{number}",
            "operation": "Converse",
            "modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "input": {**given, "inputTokenCount": 10},
            "requestMetadata": {"session_id": "s"},
        }

    first = {"system": [{"text": "Plan the day."}], "messages": [{"role": "user", "content": []}]}
    second = {**first, "system": [{"text": "Plan the week."}]}
    log = tmp_path / "log.jsonl"
    rows = [
        record(1, {"inputBodyS3Path": "s3://bucket/AWSLogs/body-1.json"}),
        record(2, {"inputBodyJson": second}),
    ]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, out, _ = run(capsys, str(log), "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []  # no bytes to compare the first with
    (tmp_path / "body-1.json").write_text(json.dumps(first))
    code, out, _ = run(capsys, str(log), "--format", "json")
    [finding] = json.loads(out)["findings"]
    assert code == 1
    assert (finding["verdict"], finding["evidence"]) == ("system_changed", "exact")


def test_openinference_spans_with_nested_attributes_are_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def span(turn: int, system: str) -> dict[str, object]:
        messages = [{"message": {"role": "system", "content": system}}]
        messages += [{"message": {"role": "user", "content": f"q{n}"}} for n in range(turn)]
        return {
            "name": "llm",
            "context": {"trace_id": f"t{turn}", "span_id": f"s{turn}"},
            "start_time": f"2026-01-01T00:00:0{turn}Z",
            "attributes": {
                "openinference": {"span": {"kind": "LLM"}},
                "llm": {"model_name": "gpt-5", "provider": "openai", "input_messages": messages},
                "session": {"id": "nested"},
            },
        }

    rows = [span(1, "Plan."), span(2, "Plan."), span(3, "Plan the week.")]
    path = tmp_path / "phoenix.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, out, _ = run(capsys, str(path), "--format", "json")
    report = json.loads(out)
    assert code == 1
    assert [
        (f["session"], f["request"], f["verdict"], f["evidence"]) for f in report["findings"]
    ] == [("nested", 3, "system_changed", "structural")]


def test_a_converted_body_without_markers_does_not_claim_nothing_was_lost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # OTel GenAI parts carry no cache markers: the cache model sees nothing cached, the
    # provider's counters say 900 tokens were. The loss is not judged, never a false 0.
    _, out, _ = run(capsys, str(TRACES / "otel.json"), "--format", "json")
    (finding,) = [f for f in json.loads(out)["findings"] if f["verdict"] == "tools_changed"]
    assert finding["evidence"] == "structural"
    assert finding["tokens_lost"] is None and finding["usd_lost"] is None
    assert "counters say request 2 had 900 tokens cached" in finding["summary"]
