"""`harness report --html`: the page parsed (html.parser), its numbers those of `harness cost`,
nothing it could fetch, secrets redacted; the Markdown summary; and the page in a real headless
Chromium: a screenshot that is not blank and no console message.

Chromium: Debian's `chromium` package (`apt-get install -y chromium`; `.ci/run` installs it when
it is missing). Locally the browser test skips with that reason when there is none; under CI
(`CI=true`) it fails instead, so CI cannot pass without running it. Console messages are read
from Chromium's own log (`--enable-logging=stderr --v=0` prints every console call as a
`:CONSOLE` line): the page has no script, so any such line is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import PRICES_CHECKED, REGISTRY, answer, conversation, entry
from tests.support.png import drawn_fraction

# Read when the module is collected: the root conftest takes the CI variables out of the
# environment for the session before any test runs, so a test reading `CI` itself never sees it.
UNDER_CI = os.environ.get("CI", "").lower() == "true"

SECRET = "sk-proj-" + "a1B2c3D4" * 4


class Page(HTMLParser):
    """What a test reads from the page: figures, rows, tables, findings, every tag and link."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.figures: list[dict[str, str]] = []
        self.requests: list[str] = []
        self.moved = 0
        self.rules: list[str] = []
        self.marks: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._in_mark = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        self.tags.append(tag)
        self.links += [values[key] for key in ("src", "href") if key in values]
        if "data-figure" in values:
            self.figures.append(values)
        if tag == "tr" and "data-request" in values:
            self.requests.append(values["data-request"])
        if tag == "tr" and values.get("class") == "moved":
            self.moved += 1
        if "data-rule" in values:
            self.rules.append(values["data-rule"])
        self._in_mark = tag == "mark"

    def handle_endtag(self, tag: str) -> None:
        self._in_mark = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_mark:
            self.marks.append(data)


def session(tmp_path: Path) -> Path:
    """Three turns: the first with the provider's counters, the third after a 400 s gap with its
    tools moved (the first now describes itself with a secret key, where the excerpt shows it)."""
    path = tmp_path / "session.jsonl"
    moved = conversation(3, tools=("beta", "alpha", "gamma"))
    moved["tools"][0]["description"] = SECRET + moved["tools"][0]["description"][len(SECRET) :]
    lines = [
        entry(conversation(1), 0, response=answer(0, 3000)),
        entry(conversation(2), 30),
        entry(moved, 400),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Page, Path, str]:
    path = session(tmp_path)
    html, md = tmp_path / "report.html", tmp_path / "report.md"
    assert main(["report", str(path), "--html", str(html), "--markdown", str(md)]) == 0
    capsys.readouterr()
    page = Page()
    page.feed(html.read_text(encoding="utf-8"))
    return page, html, md.read_text(encoding="utf-8")


def test_the_page_holds_the_numbers_of_harness_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, _, _ = report(tmp_path, capsys)
    assert main(["cost", str(tmp_path / "session.jsonl"), "--format", "json"]) == 0
    cost: dict[str, Any] = json.loads(capsys.readouterr().out)["sessions"][0]
    figures = {f["data-figure"]: f["data-value"] for f in page.figures}
    for key in ("usd", "usd_without_cache", "hit_rate", "cache_read_tokens", "agreement"):
        assert float(figures[key]) == pytest.approx(cost[key]), key
    assert float(figures["total_usd"]) == pytest.approx(cost["usd"])
    assert page.requests == ["0", "1", "2"]
    assert page.moved == 2  # alpha and beta swapped places; gamma stayed
    assert page.rules == ["prefix-broken"]
    assert figures["predicted_reads"] == "0" and figures["recorded_reads"] == "0"


def test_the_page_fetches_nothing_and_shows_no_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, html, md = report(tmp_path, capsys)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert page.links == []
    assert "svg" in page.tags and "style" in page.tags
    text = html.read_text(encoding="utf-8")
    for shown in (text, md):
        assert SECRET not in shown and SECRET[8:24] not in shown  # nor a part of it
    assert "[redacted" in "".join(page.text)
    assert page.marks and page.marks[0].startswith("tools_changed")  # the divergence, marked


def test_the_markdown_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, md = report(tmp_path, capsys)
    assert md.startswith("## Prompt-cache cost\n")
    assert "| conversation | model | requests | cost | without cache | hit rate | agreement |" in md
    # values from the input are inert Markdown: a model in a code span, a summary escaped
    assert "| `claude-sonnet-4-5` | 3 | $0.0" in md and "| 100% |" in md
    assert "First divergence at request 2: tools\\_changed: tools reordered" in md
    assert f"List prices checked {PRICES_CHECKED} ({REGISTRY}); tokens are estimates." in md


def test_a_report_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = session(tmp_path)
    assert main(["report", str(path), "--html", str(tmp_path / "no" / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "r.html" in err


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "no chromium: apt-get install -y chromium (Debian's package)"
        if UNDER_CI:
            pytest.fail(f"{reason}; CI must run the browser test (.ci/run installs it)")
        pytest.skip(reason)
    return found


def render(page: Path, shot: Path) -> str:
    """Chromium's log of rendering `page` to the screenshot `shot`."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1200",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file(), done.stderr[-2000:]
    return done.stderr


def console(log: str) -> list[str]:
    return [text for text in log.splitlines() if ":CONSOLE" in text]


@pytest.mark.slow
def test_the_page_in_headless_chromium(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, html, _ = report(tmp_path, capsys)
    shot = tmp_path / "report.png"
    log = render(html, shot)
    assert console(log) == []
    assert drawn_fraction(shot.read_bytes()) > 0.05


@pytest.mark.slow
def test_the_browser_checks_catch_a_blank_page_and_a_console_error(tmp_path: Path) -> None:
    """The near misses: the same checks on a page that draws nothing and logs an error."""
    page = tmp_path / "blank.html"
    page.write_text('<!DOCTYPE html><body><script>console.error("boom")</script></body>')
    shot = tmp_path / "blank.png"
    log = render(page, shot)
    assert len(console(log)) == 1 and '"boom"' in console(log)[0]
    assert drawn_fraction(shot.read_bytes()) < 0.001
