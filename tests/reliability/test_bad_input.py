"""Bad input: every file the harness reads is refused with one line naming the file and the place.

Each damaged file goes through the public surfaces: `harness check` (exit 2, one stderr line with
the path and the byte/line/column or the JSON path), and the pytest plugin's scenario collection
(`harness_collect = true`: a collection error, not a crash).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import harness._shared._files
from harness._shared._files import MAX_FILE_BYTES
from harness.scenarios._formats import RECORDING_MAX_BYTES
from tests.support.inner import inner_pytest
from tests.support.paths import copy_project

from .conftest import JSON_PATH, POSITION, Cli, one_line

Damage = Callable[[bytes], bytes]


def _truncate_half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _replace(old: bytes, new: bytes) -> Damage:
    def damage(data: bytes) -> bytes:
        assert old in data, old
        return data.replace(old, new, 1)

    return damage


# (damage, what the line must say). A `None` position check means the problem is not positional.
LOG = "fixtures/text-turn/log.json"
LOG_CASES: dict[str, tuple[Damage, str]] = {
    "truncated-half": (_truncate_half, "truncated at byte"),
    "truncated-in-a-string": (lambda d: d[: d.index(b'"events"') + 4], "truncated at byte"),
    "truncated-by-one-byte": (lambda d: d.rstrip()[:-1], "truncated at byte"),
    "empty": (lambda d: b"", "is empty"),
    "only-whitespace": (lambda d: b" \n\t\n", "is empty"),
    "trailing-garbage": (lambda d: d + b"}{", "trailing characters"),
    "nul-byte": (lambda d: d[:50] + b"\x00" + d[50:], "invalid character"),
    "utf8-bom": (lambda d: b"\xef\xbb\xbf" + d, "invalid character"),
    "invalid-utf8": (lambda d: d[:100] + b"\xff\xfe" + d[100:], "not valid UTF-8 at byte 100"),
    "overlong-utf8": (lambda d: d[:80] + b"\xc0\xaf" + d[80:], "not valid UTF-8 at byte 80"),
    "wrong-type-nested": (_replace(b'"turn": 1', b'"turn": "one"'), "at `$.events[0].turn`"),
    "wrong-type-top": (_replace(b'"scenario": "text-turn"', b'"scenario": 5'), "at `$.scenario`"),
    "wrong-event-tag": (_replace(b'"turn/start"', b'"turn/begin"'), "at `$.events[0].type`"),
    "unknown-version": (_replace(b'"format": 1', b'"format": 2'), "format version 2"),
    "version-as-text": (_replace(b'"format": 1', b'"format": "1"'), "format version '1'"),
    "another-kind": (_replace(b'"harness/log"', b'"harness/answers"'), "expected 'harness/log'"),
    "not-ours": (lambda d: b'{"name": "text-turn", "version": "1.0"}\n', "not a harness file"),
}
SYNTAX = {
    "truncated-half",
    "truncated-in-a-string",
    "truncated-by-one-byte",
    "trailing-garbage",
    "nul-byte",
    "utf8-bom",
}
TYPES = {"wrong-type-nested", "wrong-type-top", "wrong-event-tag"}


@pytest.mark.parametrize("case", list(LOG_CASES))
def test_a_damaged_log_is_one_line_with_file_and_position_and_exit_2(
    project: Path, cli: Cli, case: str
) -> None:
    damage, expected = LOG_CASES[case]
    log = project / LOG
    damaged = damage(log.read_bytes())
    log.write_bytes(damaged)

    code, out, err = cli("check", "fixtures/text-turn", "--shuffle", "0")

    assert code == 2
    line = one_line(err)
    assert line.startswith("harness check: ")
    assert LOG in line
    assert expected in line
    if case in SYNTAX:
        position = POSITION.search(line)
        assert position, line
        if case.startswith("truncated"):  # the position is where the data ran out
            assert int(position.group(1)) == len(damaged)
    if case in TYPES:
        assert JSON_PATH.search(line), line
    assert out == ""  # no table, no half a report


# Every kind of file, damaged three ways: the message names that file (not the scenario folder).
FILES = {
    "scenario": "fixtures/tool-turn/scenario.json",
    "log": "fixtures/tool-turn/log.json",
    "requests": "fixtures/tool-turn/requests.json",
    "answers": "fixtures/tool-turn/answers.json",
    "pin": "snapshots/headers/default/tool-schemas.expected.json",
}


@pytest.mark.parametrize("damage", ["truncated", "wrong-type", "unknown-version"])
@pytest.mark.parametrize("file", list(FILES))
def test_every_file_kind_is_read_strictly(project: Path, cli: Cli, file: str, damage: str) -> None:
    path = project / FILES[file]
    data = path.read_bytes()
    if damage == "truncated":
        data = data[: len(data) * 2 // 3]
    elif damage == "wrong-type":
        data = re.sub(rb'("(?:name|scenario)": )"[^"]*"', rb"\g<1>17", data, count=1)
    else:
        data = data.replace(b'"format": 1', b'"format": 99', 1)
    path.write_bytes(data)

    code, _, err = cli("check", "fixtures/tool-turn", "--shuffle", "0")

    assert code == 2
    line = one_line(err)
    assert FILES[file] in line
    if damage == "truncated":
        assert POSITION.search(line), line
    elif damage == "wrong-type":
        assert "format" in line and (JSON_PATH.search(line) or POSITION.search(line)), line
    else:
        assert "format version 99" in line


def test_a_300_mb_log_is_refused_by_its_size_before_it_is_read(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = project / LOG
    with log.open("r+b") as handle:  # sparse: no 300 MB is written or allocated
        handle.truncate(300 * 1024 * 1024)
    assert log.stat().st_size > RECORDING_MAX_BYTES > MAX_FILE_BYTES  # a log may be longer
    read_bytes = Path.read_bytes

    def guarded(self: Path) -> bytes:
        assert self.name != "log.json", "the oversized file was read instead of refused"
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", guarded)

    code, out, err = cli("check", "fixtures/text-turn", "--shuffle", "0")

    assert code == 2
    line = one_line(err)
    assert LOG in line
    assert "314,572,800 bytes" in line and f"{RECORDING_MAX_BYTES:,}-byte limit" in line
    assert out == ""


def test_a_missing_file_and_a_folder_in_its_place_are_one_line(project: Path, cli: Cli) -> None:
    (project / "fixtures/tool-turn/answers.json").unlink()
    code, _, err = cli("check", "fixtures/tool-turn", "--shuffle", "0")
    assert code == 2
    assert "fixtures/tool-turn/answers.json: does not exist" in one_line(err)

    (project / "fixtures/tool-turn/answers.json").mkdir()
    code, _, err = cli("check", "fixtures/tool-turn", "--shuffle", "0")
    assert code == 2
    assert "fixtures/tool-turn/answers.json: is a folder" in one_line(err)


def test_an_unreadable_file_is_one_line(project: Path, cli: Cli) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    (project / LOG).chmod(0)
    code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2
    assert f"{LOG}: cannot be read" in one_line(err)


# -- defects -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"kind":"harness/log","format":1,"scenario":"x","events":' + b"[" * 5000,
        b'{"x":' + b"[" * 5000 + b"]" * 5000 + b',"kind":"harness/log","format":1}',
    ],
    ids=["nested-events", "nested-unknown-member"],
)
def test_deeply_nested_json_is_a_fixture_error_not_a_crash(
    project: Path, cli: Cli, data: bytes
) -> None:
    (project / LOG).write_bytes(data)
    code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2
    assert LOG in one_line(err)


@pytest.mark.parametrize(
    "data",
    [b"[1, 2, 3]\n", b"42\n", b'{"kind": "harness/log", "format": 1' + b"0" * 5000 + b"}"],
    ids=["array", "number", "huge-version"],
)
def test_valid_json_that_is_not_a_harness_file_is_not_called_corrupt(
    project: Path, cli: Cli, data: bytes
) -> None:
    (project / LOG).write_bytes(data)
    code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2
    line = one_line(err)
    assert "not valid JSON" not in line and "truncated" not in line, line


@pytest.mark.parametrize(
    "damage",
    [
        _replace(b'"scenario":', b'"extra\\nnot an error line": 1, "scenario":'),
        _replace(b'"turn/start"', b'"turn/start\\n::error::injected"'),
    ],
    ids=["unknown-field-name", "tag-value"],
)
def test_control_characters_in_a_file_never_split_the_error_line(
    project: Path, cli: Cli, damage: Damage
) -> None:
    log = project / LOG
    log.write_bytes(damage(log.read_bytes()))
    code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2
    assert LOG in one_line(err)


# -- other readers: `harness diff` and the pin's system text ------------------------------------


def test_diff_refuses_damaged_harness_files_like_check(project: Path, cli: Cli) -> None:
    good = "fixtures/text-turn/requests.json"
    bad = project / "fixtures/tool-turn/requests.json"
    bad.write_bytes(bad.read_bytes().replace(b'"format": 1', b'"format": 3', 1))
    code, _, err = cli("diff", good, str(bad))
    assert code == 2
    line = one_line(err)
    assert "fixtures/tool-turn/requests.json" in line and "format version 3" in line


@pytest.mark.parametrize(
    "data", [b'{"tools": [{"name": "bash"', b'{"a": ' + b"[" * 5000], ids=["truncated", "deep"]
)
def test_diff_names_the_position_in_a_damaged_body(project: Path, cli: Cli, data: bytes) -> None:
    (project / "a.json").write_bytes(data)
    (project / "b.json").write_bytes(b'{"tools": []}')
    code, _, err = cli("diff", "a.json", "b.json")
    assert code == 2
    line = one_line(err)
    assert "a.json" in line
    if data.startswith(b'{"tools"'):  # a syntax error names where it is
        assert POSITION.search(line), line


@pytest.mark.parametrize("reader", ["diff", "system-pin"])
def test_every_reader_honours_the_size_limit(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    limit = 64 * 1024  # every shipped file is far smaller; the oversized one is 100 KiB
    monkeypatch.setattr(harness._shared._files, "MAX_FILE_BYTES", limit)
    big = b"x" * (100 * 1024)
    if reader == "diff":
        (project / "a.json").write_bytes(b'{"system": "' + big + b'"}')
        (project / "b.json").write_bytes(b'{"system": ""}')
        code, _, err = cli("diff", "a.json", "b.json")
        name = "a.json"
    else:
        name = "snapshots/headers/default/system-prompt.expected.md"
        (project / name).write_bytes(big)
        code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2
    line = one_line(err)
    assert name in line and "limit" in line


# -- the pytest plugin: damaged recordings are collection errors --------------------------------


def _sparse_300_mb(data: bytes) -> bytes:
    return b""  # replaced by a sparse file below: nothing is allocated


# Shipped scenarios (and copies of text-turn) damaged one way each; the two others stay intact.
DAMAGES: dict[str, Damage] = {
    "tool-turn/log.json": lambda d: d[:300],
    "resume/requests.json": _replace(b'"format": 1', b'"format": 7'),
    "multi-step/answers.json": lambda d: b'{"hello": "world"}\n',
    "text-turn/scenario.json": lambda d: d[:40] + b"\xff" + d[40:],
    "wrong-type/log.json": _replace(b'"turn": 1', b'"turn": "one"'),
    "huge/requests.json": _sparse_300_mb,
}


def test_a_damaged_recording_is_a_collection_error_naming_the_file(
    pytester: pytest.Pytester,
) -> None:
    copy_project(pytester.path)
    for copy in ("wrong-type", "huge"):
        shutil.copytree(pytester.path / "fixtures/text-turn", pytester.path / "fixtures" / copy)
    for name, damage in DAMAGES.items():
        path = pytester.path / "fixtures" / name
        path.write_bytes(damage(path.read_bytes()))
        if damage is _sparse_300_mb:
            os.truncate(path, 300 * 1024 * 1024)
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")

    result = inner_pytest(
        pytester, "-p", "no:randomly", "--continue-on-collection-errors", "--harness-shuffle=2"
    )

    result.assert_outcomes(passed=2, errors=len(DAMAGES))  # bad-tool-order and racy-listener
    out = result.stdout.str()
    for name in DAMAGES:
        folder = name.split("/")[0]
        assert f"ERROR collecting fixtures/{folder}/scenario.json" in out
        # the collection error is the codec's one line naming the damaged file, not a traceback
        assert re.search(rf"^harness: \S*fixtures/{re.escape(name)}: ", out, re.MULTILINE), name
    assert "at `$.events[0].turn`" in out and f"over the {RECORDING_MAX_BYTES:,}-byte limit" in out
    assert "Traceback" not in out
    assert "INTERNALERROR" not in out


@pytest.mark.slow
def test_a_deeply_nested_recording_is_a_one_line_collection_error(
    pytester: pytest.Pytester,
) -> None:
    copy_project(pytester.path)
    (pytester.path / "fixtures/resume/log.json").write_bytes(
        b'{"kind":"harness/log","format":1,"scenario":"resume","events":' + b"[" * 5000
    )
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")
    result = inner_pytest(pytester, "-p", "no:randomly", "--collect-only")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert re.search(r"^harness: \S*fixtures/resume/log\.json: ", out, re.MULTILINE), out
    assert "RecursionError" not in out


# -- the plugin's fixtures: a damaged file fails the test with the codec's one line -------------


def test_a_damaged_recording_used_by_agent_harness_fails_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    copy_project(pytester.path)
    log = pytester.path / "fixtures/text-turn/log.json"
    log.write_bytes(log.read_bytes()[:500])
    pytester.makepyfile(
        test_use="def test_use(agent_harness):\n    agent_harness.check('text-turn')\n"
    )
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert re.search(r"harness: \S*fixtures/text-turn/log\.json: is not valid JSON", out), out
    assert POSITION.search(out) and "Traceback" not in out and "def decode" not in out


def test_a_damaged_cassette_fails_the_test_with_one_line(pytester: pytest.Pytester) -> None:
    cassette = pytester.path / "fixtures/cassettes/test_use/test_use.json"
    cassette.parent.mkdir(parents=True)
    cassette.write_bytes(b'{"kind": "harness/capture", "format": 1, "exchanges": [')
    pytester.makepyfile(test_use="def test_use(header_capture):\n    pass\n")
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert re.search(r"harness: \S*test_use\.json: is not valid JSON", out), out
    assert "def decode" not in out and "Traceback" not in out
