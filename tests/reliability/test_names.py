"""Names that become file names (scenarios, pin classes, test ids) never escape or collide.

`safe_component` rejects anything that is not one short, plain path component; `file_name_for`
maps any text to a bounded, distinct, safe name; `cassette_path_for` keeps every node id inside
the cassette root. A scenario with an unsafe name fails cleanly and writes nothing anywhere.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness._shared._errors import FixtureError, UnsafeName
from harness._shared._files import write_atomic
from harness._shared._paths import case_twin, file_name_for, safe_component
from harness.capture import cassette_path_for
from harness.scenarios._formats import load_fixture
from tests.support.inner import inner_pytest
from tests.support.properties import examples

from .conftest import SCENARIO_IMPORTS, Cli, one_line, scenario_source, tree

RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10))}
RESERVED |= {f"LPT{i}" for i in range(1, 10)}
PLAIN = re.compile(r"[A-Za-z0-9._-]+")

UNSAFE = [
    "../x",
    "..",
    ".",
    "a/../../b",
    "/abs",
    "/etc/passwd",
    "a/b",
    "a\\b",
    "..\\x",
    "C:",
    "C:evil",
    "a\x00b",
    "\x00",
    "CON",
    "con",
    "Con",
    "con.txt",
    "CON.tar.gz",
    "AUX",
    "nul.json",
    "PRN",
    "LPT1",
    "lpt9.log",
    "COM1",
    "x" * 101,
    "y" * 300,
    ".hidden",
    ".git",
    "trailing.",
    "trailing..",
    "",
    " ",
    "a b",
    "tab\tname",
    "new\nline",
    "-starts-with-dash",
    "_starts-with-underscore",
    "é",
    "emoji-😀",
    "star*",
    "question?",
    "pipe|",
    "colon:name",
    "quote'",
    "~home",
]


@pytest.mark.parametrize("name", UNSAFE, ids=range(len(UNSAFE)))
def test_safe_component_rejects_every_unsafe_name(name: str) -> None:
    with pytest.raises(UnsafeName) as caught:
        safe_component(name)
    assert "\x00" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "name", ["text-turn", "a", "v1.2_final", "x" * 100, "CONSOLE", "nul-1", "aux_", "LPT10"]
)
def test_safe_component_keeps_plain_names(name: str) -> None:
    assert safe_component(name) == name


def _inside(root: Path, name: str) -> bool:
    joined = Path(os.path.normpath(root / name))
    return joined.parent == root and joined.name == name


NASTY_TEXT = st.text(
    st.one_of(
        st.characters(),
        st.sampled_from("./\\:\x00 ~-_"),
        st.integers(0xD800, 0xDFFF).map(chr),  # lone surrogates (file names from bytes)
    ),
    max_size=150,
)


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(NASTY_TEXT)
def test_any_name_safe_component_accepts_is_one_plain_component(name: str) -> None:
    try:
        accepted = safe_component(name)
    except UnsafeName:
        return
    root = Path("/fixtures")
    assert _inside(root, accepted)
    assert PLAIN.fullmatch(accepted) and ".." not in accepted
    assert not accepted.startswith((".", "-")) and not accepted.endswith(".")
    assert len(accepted) <= 100
    assert accepted.split(".")[0].upper() not in RESERVED


@settings(max_examples=examples(200), deadline=None)
@given(NASTY_TEXT)
def test_file_name_for_maps_any_text_to_a_bounded_plain_name(text: str) -> None:
    name = file_name_for(text)
    assert name == file_name_for(text)  # deterministic
    assert _inside(Path("/fixtures/cassettes"), name)
    assert PLAIN.fullmatch(name) and ".." not in name
    assert not name.startswith((".", "-")) and not name.endswith(".")
    assert len(name) <= 80
    assert name.split(".")[0].upper() not in RESERVED


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(NASTY_TEXT, unique=True, max_size=30))
def test_file_name_for_is_distinct_for_distinct_texts(texts: list[str]) -> None:
    names = [file_name_for(text) for text in texts]
    assert len(set(names)) == len(texts)
    assert len({name.casefold() for name in names}) == len(texts)  # case-insensitive disks too


@pytest.mark.slow
def test_file_name_for_keeps_a_large_sample_of_look_alikes_apart() -> None:
    rng = random.Random(7)
    alphabet = "aA _-./\\:[]\x00é"  # most of these slug to "_" or vanish
    texts = {"".join(rng.choices(alphabet, k=rng.randint(0, 10))) for _ in range(20_000)}
    names = {file_name_for(text) for text in texts}
    assert len(names) == len(texts)
    assert len({name.casefold() for name in names}) == len(texts)


@pytest.mark.parametrize(
    "pair",
    [
        ("a b", "a_b"),
        ("a/b", "a\\b"),
        ("a..b", "a_b"),
        ("test[1]", "test_1"),
        ("test[a b]", "test[a_b]"),
        ("x" * 200 + "1", "x" * 200 + "2"),  # same first 69 characters
        ("CON", "con"),
        ("", "..."),
        ("\x00", "\x01"),
        ("\ud800", "\udc00"),
    ],
)
def test_file_name_for_keeps_adversarial_pairs_apart(pair: tuple[str, str]) -> None:
    a, b = map(file_name_for, pair)
    assert a != b and a.casefold() != b.casefold()


@pytest.mark.parametrize("text", ["CON.txt", "lpt1.py", "nul.x.y"])
def test_file_name_for_gives_names_safe_component_accepts(text: str) -> None:
    name = file_name_for(text)
    assert safe_component(name) == name


# -- cassette paths -----------------------------------------------------------------------------

_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
IDENTIFIER = st.builds(
    str.__add__, st.sampled_from(_WORD), st.text(_WORD + "0123456789", max_size=20)
)
# A path segment of a node id pytest makes: never empty or ".", and never holding a separator
# ("/", or "\\", which the harness reads as one): pytest joins a file's parts with "/" relative to
# its rootdir, so "a//b.py", "./a.py", "/a.py" and "a\\b.py" never reach it (they would name the
# same file as "a/b.py" and "a.py", and share its cassette by design).
SEGMENT = st.one_of(
    NASTY_TEXT.map(lambda s: s.replace("/", "").replace("\\", "").replace("::", "")).filter(
        lambda s: s not in ("", ".")
    ),
    IDENTIFIER,
)


@st.composite
def node_ids(draw: st.DrawFn) -> str:
    folders = draw(st.lists(SEGMENT, max_size=3))
    module = draw(SEGMENT)
    classes = draw(st.lists(IDENTIFIER, max_size=2))
    function = draw(IDENTIFIER)
    params = draw(st.none() | NASTY_TEXT)
    test = "::".join([*classes, function]) + (f"[{params}]" if params is not None else "")
    return f"{'/'.join([*folders, module])}.py::{test}"


def _assert_inside(root: Path, path: Path) -> None:
    relative = path.relative_to(root)  # raises if it is not under root
    assert Path(os.path.normpath(path)) == path
    for part in relative.parts:
        stem = part.removesuffix(".json") if part == relative.parts[-1] else part
        assert part not in (".", "..") and PLAIN.fullmatch(part), part
        assert not part.startswith(".") and len(stem) <= 100
        assert part.split(".")[0].upper() not in RESERVED


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(node_ids())
def test_cassette_paths_stay_inside_the_root(nodeid: str) -> None:
    root = Path("/project/fixtures/cassettes")
    path = cassette_path_for(root, nodeid)
    _assert_inside(root, path)
    assert path.suffix == ".json"


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(st.lists(node_ids(), unique=True, max_size=12))
def test_distinct_node_ids_get_distinct_cassettes(nodeids: list[str]) -> None:
    root = Path("/cassettes")
    paths = {cassette_path_for(root, nodeid) for nodeid in nodeids}
    assert len(paths) == len(nodeids)


@pytest.mark.parametrize(
    "nodeid",
    [
        "../../etc/passwd.py::test_x",
        "/etc/cron.d/evil.py::test_x",
        "C:\\Windows\\System32\\evil.py::test_x",
        "tests/..\\..\\evil.py::test_x",
        "tests/test_a.py::test_x[../../../../tmp/evil]",
        "tests/test_a.py::test_x[\x00]",
        "tests/test_a.py::test_x[CON]",
        "tests/CON.py::test_x",
        "tests/test_a.py::" + "x" * 500,
        "tests/test_a.py::",
        "::",
        "",
    ],
)
def test_nasty_node_ids_stay_inside_the_root(nodeid: str, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    path = cassette_path_for(root, nodeid)
    _assert_inside(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)  # and the file system agrees
    path.write_bytes(b"{}")
    assert path.resolve().is_relative_to(root.resolve())


def test_a_plain_name_never_collides_with_a_hashed_one() -> None:
    hashed = file_name_for("my tests")
    one = cassette_path_for(Path("/c"), "my tests/test_a.py::test_x")
    other = cassette_path_for(Path("/c"), f"{hashed}/test_a.py::test_x")
    assert PurePosixPath(one.as_posix()).parts[2] == hashed  # the look-alike is real
    assert one != other


# -- scenario names through the public surfaces -------------------------------------------------

NASTY_SCENARIO_NAMES = [
    "../evil",
    "../../evil",
    "{abs}",
    "a/b",
    "a\\b",
    "nul\x00byte",
    "CON",
    "con.txt",
    "LPT1",
    "x" * 101,
    ".hidden",
    "trailing.",
    "",
]


def test_an_unsafe_scenario_name_fails_cleanly_and_writes_nothing(
    pytester: pytest.Pytester,
) -> None:
    outside = pytester.path.parent / f"{pytester.path.name}-evil-abs"
    names = [n.replace("{abs}", str(outside)) for n in NASTY_SCENARIO_NAMES]
    source = scenario_source("NAME").replace("'NAME'", "name")
    pytester.makepyfile(
        test_names=SCENARIO_IMPORTS
        + "import pytest\n\n"
        + f"NAMES = {names!r}\n"
        + "\n\n@pytest.mark.parametrize('name', NAMES, ids=range(len(NAMES)))\n"
        + f"def test_name(agent_harness, name):\n    agent_harness.check({source})\n"
    )
    pytester.makeini("[pytest]\nharness_fixtures = project/fixtures\n")
    before = tree(pytester.path)  # "../../evil" would land in pytester.path itself

    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")

    result.assert_outcomes(failed=len(names))
    out = result.stdout.str()
    assert out.count("cannot be used as a file name") + out.count("reserved device name") >= len(
        names
    )
    assert "Traceback" not in out and "UnsafeName" not in out  # pytest.fail, one line each
    assert tree(pytester.path) == before  # nothing written, inside or outside
    assert not outside.exists() and not (pytester.path.parent / "evil").exists()
    assert not (pytester.path / "project").exists()


PIN_TEST = (
    SCENARIO_IMPORTS
    + "\n\ndef test_pin(agent_harness):\n    agent_harness.check("
    + scenario_source("fine", pin="../evil-pin")
    + ")\n"
)


def test_an_unsafe_pin_name_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pin=PIN_TEST)
    pytester.makeini("[pytest]\nharness_fixtures = project/fixtures\n")
    before = tree(pytester.path)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    assert tree(pytester.path) == before  # pins would go to project/snapshots/headers/../evil-pin
    assert not (pytester.path / "project").exists()


def test_an_unsafe_pin_name_fails_cleanly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pin=PIN_TEST)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "harness: '../evil-pin' cannot be used as a file name" in out
    assert "Traceback" not in out and "raise UnsafeName" not in out


@pytest.mark.parametrize("field", ["name", "pin"])
@pytest.mark.parametrize("bad", ["../evil", "CON", "a/b", "x" * 101])
def test_a_scenario_file_with_an_unsafe_name_is_a_fixture_error(
    project: Path, cli: Cli, field: str, bad: str
) -> None:
    path = project / "fixtures/text-turn/scenario.json"
    data = json.loads(path.read_bytes())
    if field == "name":
        data["name"] = bad
    else:
        data["pin"]["name"] = bad
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    with pytest.raises(FixtureError) as caught:
        load_fixture(path.parent)
    assert str(path) in str(caught.value)

    before = tree(project)
    code, out, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2 and out == ""
    line = one_line(err)
    assert "fixtures/text-turn/scenario.json" in line and "name" in line
    code, _, err = cli("record", "fixtures/text-turn")
    assert code == 2 and "fixtures/text-turn/scenario.json" in one_line(err)
    assert tree(project) == before


# -- names that differ only in case -------------------------------------------------------------


def test_a_write_beside_a_case_twin_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "greeting").mkdir(parents=True)
    (tmp_path / "fixtures" / "greeting" / "log.json").write_bytes(b"old")
    before = tree(tmp_path)
    for target in ("fixtures/Greeting/log.json", "fixtures/greeting/LOG.json"):
        with pytest.raises(UnsafeName, match="only in case") as caught:
            write_atomic(tmp_path / target, b"new")
        assert str(tmp_path / target) in str(caught.value)
    assert tree(tmp_path) == before
    assert not (tmp_path / "fixtures" / "Greeting").exists()
    assert write_atomic(tmp_path / "fixtures" / "greeting" / "log.json", b"new")  # itself: fine


def test_case_twin_finds_the_sibling_and_ignores_exact_names(tmp_path: Path) -> None:
    (tmp_path / "pins" / "Default").mkdir(parents=True)
    assert case_twin(tmp_path / "pins" / "default" / "x.md") == (
        tmp_path / "pins" / "default",
        tmp_path / "pins" / "Default",
    )
    assert case_twin(tmp_path / "pins" / "Default" / "x.md") is None
    assert case_twin(tmp_path / "missing" / "folder" / "x.md") is None


def test_the_cli_refuses_to_record_a_case_twin_scenario(project: Path, cli: Cli) -> None:
    twin = project / "fixtures" / "Text-Turn"
    twin.mkdir()
    data = json.loads((project / "fixtures/text-turn/scenario.json").read_bytes())
    data["name"] = "Text-Turn"
    (twin / "scenario.json").write_text(json.dumps(data, indent=2) + "\n")
    before = tree(project)
    code, _, err = cli("record", "fixtures/Text-Turn")
    assert code == 2
    line = one_line(err)
    assert "only in case" in line and "fixtures/text-turn" in line
    assert tree(project) == before


def test_the_plugin_fails_a_test_recording_a_case_twin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_twin=SCENARIO_IMPORTS
        + "\n\ndef test_twin(agent_harness):\n    agent_harness.check("
        + scenario_source("Greeting")
        + ")\n"
    )
    (pytester.path / "fixtures" / "greeting").mkdir(parents=True)
    before = tree(pytester.path)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "'Greeting' differs from the existing" in out and "only in case" in out
    assert "Traceback" not in out
    assert tree(pytester.path) == before
