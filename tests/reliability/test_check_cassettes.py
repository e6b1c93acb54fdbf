"""`harness check` checks every file under the cassettes folder, or refuses it (issue 24, 6).

Before, a cassette the gate did not recognise in its first 512 bytes was skipped: one reformatted
with sorted keys (`jq -S`, pre-commit's `pretty-format-json`), a 0-byte one, or one cut inside
`"kind"` gave "no finding" and exit 0, a false green in the CI gate itself. Now every file under
a cassettes folder is read as a cassette (key order inside it does not matter) or refused in one
line with exit 2; a file elsewhere that says it is a cassette is checked too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import anthropic
import httpx2
import pytest

from harness.capture import CaptureSession
from tests.support.stand_ins import anthropic_message

from .conftest import Cli, one_line


def record(path: Path, *, tools: Sequence[str] = ("get_weather", "geocode")) -> Path:
    """A two-turn conversation, written as the plugin writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = httpx2.MockTransport(lambda _: httpx2.Response(200, json=anthropic_message()))
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=answer)
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
    messages: list[dict[str, str]] = [{"role": "user", "content": "Paris?"}]
    for turn in range(2):
        names = list(tools) if turn == 0 else list(tools)[::-1]
        client.messages.create(
            model="claude-test",
            max_tokens=64,
            system="You plan trips.",
            tools=[{"name": n, "input_schema": {"type": "object"}} for n in names],  # type: ignore[misc]
            messages=messages,  # type: ignore[arg-type]
        )
        messages = [*messages, {"role": "assistant", "content": "Sunny."}]
        messages.append({"role": "user", "content": "Then?"})
    path.write_bytes(session.finish().files[0][1])
    return path


@pytest.fixture
def cassettes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "fixtures" / "cassettes" / "tests" / "test_agent"
    record(folder / "test_clean.json", tools=["get_weather"])
    return folder


def sorted_keys(path: Path) -> None:
    """What `jq -S .` or pre-commit's `pretty-format-json --autofix` does to a file."""
    path.write_text(json.dumps(json.loads(path.read_bytes()), indent=2, sort_keys=True) + "\n")


def test_a_cassette_reformatted_with_sorted_keys_is_still_checked(
    cassettes: Path, cli: Cli
) -> None:
    broken = record(cassettes / "test_reordered.json")  # its tools swap order between turns
    sorted_keys(broken)
    code, out, err = cli("check")
    assert code == 1, out + err
    assert "test_reordered.json: 1 finding(s) in 2 requests" in out
    assert "tools_changed: request 2" in out
    assert "2 cassettes" in out


def test_a_clean_cassette_reformatted_with_sorted_keys_passes(cassettes: Path, cli: Cli) -> None:
    """The near miss: the reformatted file reads as the same cassette, and passes."""
    sorted_keys(cassettes / "test_clean.json")
    code, out, err = cli("check")
    assert code == 0, out + err
    assert "test_clean.json: ok (2 requests)" in out


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda data: b"", "is empty"),
        (lambda data: data[: data.index(b'"kind"') + 4], "is not valid JSON"),
        (lambda data: data[: data.index(b"harness/capture") + 7], "is not valid JSON"),
        (lambda data: b'{"format": 1}\n', 'is not a harness file (no "format" and "kind"'),
        (lambda data: b"[1, 2, 3]\n", "is not a harness file"),
        (lambda data: b"recorded by hand\n", "is not valid JSON"),
    ],
    ids=["empty", "cut-inside-kind", "cut-inside-its-value", "no-kind", "a-list", "not-json"],
)
def test_a_damaged_file_under_the_cassettes_folder_is_refused_in_one_line(
    cassettes: Path, cli: Cli, damage: Callable[[bytes], bytes], says: str
) -> None:
    target = cassettes / "test_damaged.json"
    target.write_bytes(damage((cassettes / "test_clean.json").read_bytes()))
    code, out, err = cli("check")
    assert code == 2, out + err
    assert "test_damaged.json" in one_line(err) and says in err


def test_a_file_of_another_name_under_the_cassettes_folder_is_refused(
    cassettes: Path, cli: Cli
) -> None:
    (cassettes / "notes.txt").write_text("checked by hand\n")
    code, _, err = cli("check")
    assert code == 2 and "notes.txt" in one_line(err)


def test_hidden_files_and_leftover_temp_files_are_not_read(cassettes: Path, cli: Cli) -> None:
    """The near miss: `.gitkeep` and an interrupted write's `.name.XXXX.tmp` are not cassettes."""
    (cassettes / ".gitkeep").write_text("")
    (cassettes / ".test_clean.json.a1b2.tmp").write_bytes(b'{"kind": "harness/cap')
    code, out, err = cli("check")
    assert code == 0, out + err


def test_other_tools_cassettes_elsewhere_in_the_project_are_left_alone(
    cassettes: Path, cli: Cli
) -> None:
    """vcrpy's and pytest-recording's `tests/cassettes/*.yaml` are no harness cassettes."""
    vcr = Path("tests") / "cassettes" / "test_weather"
    vcr.mkdir(parents=True)
    (vcr / "test_sunny.yaml").write_text("interactions: []\nversion: 1\n")
    (vcr / "test_sunny.json").write_text('{"interactions": []}\n')
    code, out, err = cli("check", ".")
    assert code == 0, out + err
    assert "1 cassettes, no finding" in out


def test_a_cassette_outside_a_cassettes_folder_is_found_whatever_its_key_order(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = record(tmp_path / "recordings" / "turns.json")
    sorted_keys(path)
    code, out, err = cli("check", "recordings")
    assert code == 1, out + err
    assert "turns.json: 1 finding(s)" in out
