"""The benchmark's code paths at toy sizes, so `bench/` cannot rot: structure, never timings."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vcr")
pytest.importorskip("yaml")

from bench.__main__ import Plan, run
from bench.figures import goals
from bench.report import END, START, render, write_readme

TOY = Plan(
    check_sizes=(3, 4),
    big=5,
    peer_sizes=(3,),
    order_sizes=(10, 100),
    permutations=3,
    shuffle_steps=3,
    tools=10,
    plugins=5,
    system_bytes=2_000,
    repeats=1,
)


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return run(TOY, tmp_path_factory.mktemp("bench"), "python -m bench --toy")


def test_every_section_of_the_table_is_measured(figures) -> None:  # type: ignore[no-untyped-def]
    assert [c.steps for c in figures.checks] == [3, 4]
    assert figures.big is not None and figures.big.steps == 5 and figures.big.peak_mib > 0
    (peer,) = figures.peers
    assert peer.steps == 3 and peer.cassette_bytes > 0
    (fmt,) = figures.formats
    assert fmt.fixture_bytes > 0 and fmt.cassette_bytes > 0
    assert set(figures.body_bytes) == {4, 5}
    assert [o.tools for o in figures.orders] == [10, 100]
    assert [(s.how, s.permutations, s.plugins) for s in figures.shuffles] == [
        ("shuffle_scenario", 3, 5),
        ("prove_stable", 3, 5),
    ]


def test_the_table_has_a_row_per_measure_and_judges_every_goal(figures) -> None:  # type: ignore[no-untyped-def]
    text = render(figures)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    sections = [row.split(" | ")[0].removeprefix("| ") for row in rows[1:]]
    assert {"1", "1, 2", "3", "4", "5", "6"} <= set(sections)
    assert "python -m bench --toy" in text
    judged = goals(figures)
    assert len(judged) == 5
    assert all(f"{'met' if g.met else '**missed**'}: {g.text}" in text for g in judged)


def test_writing_the_readme_replaces_only_what_is_between_the_markers(
    tmp_path: Path,
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Figures\n\n{START}\nold\n{END}\n\n## After\n", encoding="utf-8")
    write_readme(readme, "| a |\n|---|")
    assert readme.read_text(encoding="utf-8") == (
        f"# x\n\n## Figures\n\n{START}\n| a |\n|---|\n{END}\n\n## After\n"
    )
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="exactly one"):
        write_readme(readme, "x")
