"""`harness check` skips nothing, attacked again (issue 24's defect 6 and issue 23's opaque bodies):
a cassette of an API no provider recognises (under `hosts`), whose tools are reversed in its
second request, fails whatever the file looks like: sorted compact keys, CRLF line ends, another
file name (`UPPER.JSON`, `old.json.bak`, `notes.txt`) or a folder deeper; and "same tool names in
the same order" is never said of it. A byte-order mark, a README and an empty file are refused in
one line (exit 2); the clean cassette passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main


def request(names: list[str], turns: int) -> dict[str, Any]:
    history: list[dict[str, str]] = [{"who": "user", "text": "Paris?"}]
    for _ in range(turns - 1):
        history += [{"who": "bot", "text": "ok"}, {"who": "user", "text": "more"}]
    body = {"functions": [{"id": n, "about": n} for n in names], "history": history}
    return {
        "method": "POST",
        "url": "http://llm.internal:8080/api/generate",
        "headers": [["content-type", "application/json"]],
        "text": json.dumps(body),
    }


def cassette(second: list[str]) -> dict[str, Any]:
    answer = {"status": 200, "headers": [["content-type", "application/json"]], "text": "{}"}
    names = ["weather", "search", "calendar"]
    return {
        "kind": "harness/capture",
        "format": 1,
        "exchanges": [
            {"request": request(names, 1), "response": answer},
            {"request": request(second, 2), "response": answer},
        ],
    }


BROKEN = cassette(["calendar", "search", "weather"])


def sorted_compact(path: Path) -> None:
    path.write_text(json.dumps(BROKEN, sort_keys=True, separators=(",", ":")))


def crlf(path: Path) -> None:
    path.write_bytes(json.dumps(BROKEN, indent=2).replace("\n", "\r\n").encode())


def renamed(name: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        (path.parent / name).write_text(json.dumps(BROKEN, indent=4))

    return write


def deeper(path: Path) -> None:
    (path.parent / "a" / "b").mkdir(parents=True)
    (path.parent / "a" / "b" / "x.json").write_text(json.dumps(BROKEN, sort_keys=True))


BREAKS = {
    "sorted-compact": sorted_compact,
    "crlf": crlf,
    "upper": renamed("UPPER.JSON"),
    "bak": renamed("old.json.bak"),
    "txt": renamed("notes.txt"),
    "deeper": deeper,
}


def run(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", str(root)])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    folder = tmp_path / "fixtures" / "cassettes" / "test_api"
    folder.mkdir(parents=True)
    path = folder / "test_made_up_api.json"
    path.write_text(json.dumps(cassette(["weather", "search", "calendar"]), indent=2))
    return path


def test_the_clean_cassette_passes(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(clean.parents[3], capsys)
    assert code == 0, out


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_reordered_unknown_api_fails_however_its_file_looks(
    clean: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    BREAKS[how](clean)
    code, out = run(clean.parents[3], capsys)
    assert code == 1, out
    assert "opaque" in out
    assert "same tool names in the same order" not in out


@pytest.mark.parametrize(
    "content",
    [b"\xef\xbb\xbf" + json.dumps(BROKEN).encode(), b"# notes\n", b""],
    ids=["bom", "readme", "empty"],
)
def test_a_file_that_is_no_cassette_is_refused_in_one_line(
    clean: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    (clean.parent / "other.json").write_bytes(content)
    code, out = run(clean.parents[3], capsys)
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1 and "other.json" in out


def test_harness_diff_of_a_cassette_and_its_reformatted_copy_says_identical_in_words(
    clean: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = clean.parent / "copy.json"
    copy.write_text(json.dumps(json.loads(clean.read_text()), sort_keys=True))
    capsys.readouterr()
    assert main(["diff", str(clean), str(copy)]) == 0
    out = capsys.readouterr().out
    assert "hold the same 2 request(s) to the provider's cache" in out, out
    sorted_compact(copy)  # the near miss: the tools reversed in request 2
    assert main(["diff", str(clean), str(copy)]) == 1
