"""The corpus of cases (`tests/rules/cases/`): every case agrees with the source that decides it.

Each case runs through the CLI as a user runs it (`harness diff`, `harness lint`, `harness cost`,
`--format json`, in-process); a case that disagrees fails with what was expected, what the CLI
said, and the source's quote. No case is marked xfail: the expected verdict is the provider's, and
the code follows it. The other tests hold the corpus itself to account: every case has a known
source, every near miss names a case that exists, the bodies are the sizes the cases say, the
judge fails a wrong expectation and a request the CLI cannot judge, and docs/rules.md prints the
figure the corpus gives today.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from tests.rules.cases import FOLDER, case_files, cases, outcome_of, sources
from tests.rules.cases._build import block_tokens, build_requests
from tests.rules.cases._figure import DOCS, section, section_in
from tests.rules.cases._model import Case, CaseFile, DiffExpect, Fires, LintExpect
from tests.rules.cases._run import run_case

CASE_IDS = [case.id for _, case in cases()]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_case_agrees_with_its_source(case_id: str) -> None:
    outcome = outcome_of(case_id)
    if not outcome.agrees:
        pytest.fail(outcome.explain(), pytrace=False)


def test_every_case_is_sourced_and_every_near_miss_exists() -> None:
    known = sources()
    ids = Counter(CASE_IDS)
    assert [i for i, n in ids.items() if n > 1] == [], "case ids are unique"
    used: set[str] = set()
    for _, case in cases():
        for key in case.source_ids:
            assert key in known, f"{case.id}: no source {key!r} in sources.json"
            used.add(key)
        assert case.near_miss_of is None or case.near_miss_of in ids, case.id
        assert case.title and case.id.count("/") >= 2, case.id
    assert sorted(set(known) - used) == [], "every source decides a case"
    for key, source in known.items():
        assert source.url.startswith("https://"), key
        assert len(source.quote) > 40, f"{key}: the quote is the sentence that decides it"
        assert source.checked_on, key


def test_the_corpus_holds_pairs_and_sessions_for_every_provider() -> None:
    requests = sum(len(case.requests) for _, case in cases())
    assert requests >= 150
    providers = {file.provider for file in case_files()}
    assert providers == {"anthropic", "bedrock", "openai", "gemini", "deepseek"}
    for provider in providers:
        mine = [case for file, case in cases() if file.provider == provider]
        assert any(case.diff for case in mine), f"{provider}: a pair"
        assert any(len(case.requests) > 1 and not case.diff for case in mine), (
            f"{provider}: a session"
        )
    # Every kind of check has near misses that must stay silent.
    assert sum(case.near_miss_of is not None for _, case in cases()) >= 50


@pytest.mark.parametrize(
    "template",
    [
        {
            "system": [
                {"type": "text", "text": {"$pad": 511}, "cache_control": {"type": "ephemeral"}}
            ]
        },
        {"system": [{"text": {"$pad": 2049}}, {"cachePoint": {"type": "default"}}]},
        {"messages": [{"role": "system", "content": {"$pad": 1023}}]},
    ],
)
def test_a_pad_makes_its_block_exactly_that_many_tokens(template: dict[str, object]) -> None:
    ((body, url),) = build_requests([template], {})
    (block,) = [b for b in next(iter(body.values())) if "cachePoint" not in b]  # type: ignore[attr-defined]
    wanted = json.dumps(template)
    assert url is None
    assert block_tokens(block) == int(wanted.split('"$pad": ')[1].split("}")[0])


def test_a_pad_at_the_top_is_the_string_alone_and_repeats_are_numbered() -> None:
    template = {
        "instructions": {"$pad": 300},
        "input": [{"$repeat": 3, "item": {"type": "input_text", "text": "note {i}"}, "start": 4}],
    }
    ((body, _),) = build_requests([template], {})
    assert len(json.dumps(body["instructions"])) == 1200
    assert [item["text"] for item in body["input"]] == ["note 4", "note 5", "note 6"]
    assert not any(c.isdigit() for c in body["instructions"])


def test_patches_build_a_request_from_another_and_from_a_template() -> None:
    bodies = {"base": {"model": "m", "messages": [{"role": "user", "content": "a"}]}}
    built = build_requests(
        [
            {"$use": "base", "patch": [{"op": "add", "path": "/$url", "value": "https://x/y"}]},
            {"$from": 0, "patch": [{"op": "add", "path": "/messages/-", "value": {"r": 1}}]},
            {"$from": 1, "patch": [{"op": "remove", "path": "/messages/0"}]},
        ],
        bodies,
    )
    assert [url for _, url in built] == ["https://x/y"] * 3
    assert [len(body["messages"]) for body, _ in built] == [1, 2, 1]
    with pytest.raises(ValueError, match="smaller than the block"):
        build_requests([{"system": [{"type": "text", "text": {"$pad": 2}}]}], {})


def _file_of(case_id: str) -> tuple[CaseFile, Case]:
    return next((file, case) for file, case in cases() if case.id == case_id)


def test_the_judge_fails_a_wrong_expectation() -> None:
    file, case = _file_of("anthropic/identical/same-bytes")
    source = [sources()[key] for key in case.source_ids]
    assert run_case(case, file, source).agrees
    wrong = msgspec.structs.replace(case, diff=DiffExpect(verdict="tools_changed"))
    outcome = run_case(wrong, file, source)
    assert not outcome.agrees
    assert "`identical` must be false for a break" in outcome.explain()
    assert source[0].quote in outcome.explain()
    # A finding the CLI does not print, on one plain request: a disagreement, never a pass.
    lint = LintExpect(fires=[Fires(rule="lookback-exceeded")], silent=["volatile-in-prefix"])
    single = msgspec.structs.replace(case, requests=case.requests[:1], diff=None, lint=lint)
    outcome = run_case(single, file, source)
    assert not outcome.agrees
    assert outcome.problems == ["no lookback-exceeded as expected (None, request None)"]


def test_the_judge_never_passes_a_request_the_cli_did_not_judge(tmp_path: Path) -> None:
    file, case = _file_of("anthropic/volatile/weekday-only")
    source = [sources()[key] for key in case.source_ids]
    foreign = msgspec.structs.replace(case, requests=[case.requests[0], {"prompt": "hi"}])
    outcome = run_case(foreign, file, source)
    assert not outcome.agrees and "not judged" in outcome.explain()
    nothing = msgspec.structs.replace(
        case, requests=[{"prompt": "hi"}], url="https://example.com/x"
    )
    outcome = run_case(nothing, file, source)
    assert not outcome.agrees and "no JSON" in outcome.got


def test_the_docs_print_the_figure_the_corpus_gives() -> None:
    printed = section_in(DOCS.read_text(encoding="utf-8"))
    assert printed is not None, "docs/rules.md: run `python -m tests.rules.cases --write-docs`"
    expected = section([outcome_of(case_id) for case_id in CASE_IDS])
    assert printed == expected, (
        "docs/rules.md's corpus figure is not what the corpus gives today: run"
        " `python -m tests.rules.cases --write-docs` (never edit it by hand)"
    )


def test_every_case_file_decodes_strictly() -> None:
    names = sorted(path.name for path in FOLDER.glob("*.json"))
    assert "sources.json" in names and len(names) == len(case_files()) + 1
    broken = json.loads((FOLDER / "deepseek.json").read_text())
    broken["cases"][0]["expect"] = {"verdict": "extends"}  # a typo'd key is refused, not ignored
    with pytest.raises(msgspec.ValidationError, match="expect"):
        msgspec.json.decode(json.dumps(broken), type=CaseFile)


def test_a_tokenizer_cached_on_the_machine_does_not_move_the_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.cache import _counters

    def halves(text: str, provider: str, model: str | None) -> int:
        return len(text) // 8  # a tokenizer that counts half the estimate's tokens

    monkeypatch.setattr(_counters, "_builtin", [_counters._Counter("fake", halves, "")])
    file, case = _file_of("openai/minimum/gpt-5.6-implicit-1025")
    outcome = run_case(case, file, [sources()[key] for key in case.source_ids])
    assert outcome.agrees, outcome.explain()
    assert _counters._builtin[0] is not None  # set aside for the run only
