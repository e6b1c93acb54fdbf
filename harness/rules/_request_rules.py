"""The rules that judge one request alone: breakpoints, minimums, TTL order, volatile content.

- `too-many-breakpoints`: more markers than the provider takes (Anthropic and Bedrock refuse the
  request: an error; OpenAI writes only the latest ones: a warning).
- `below-minimum`: the request asks for caching and its largest prefix is under the model's
  minimum, so nothing is written (for OpenAI's and Gemini's automatic caching, which the request
  did not ask for, an `info`).
- `no-breakpoint`: an Anthropic or Bedrock prefix over the minimum with no marker and no
  automatic caching; OpenAI's explicit mode with no breakpoint.
- `ttl-order`: a longer time to live after a shorter one.
- `volatile-in-prefix`: a timestamp, date (written out too: "Thursday, 3 December 2026"), UUID,
  hex id or temporary path in the part every request repeats: the tools, and every place a
  provider takes a system prompt (Anthropic's and Bedrock's `system`, Gemini's
  `systemInstruction`, Chat Completions' and Responses' leading system and developer messages,
  Responses' `instructions`). A user's question in the messages is not the prefix.
- `vertex-key-order`: Claude on Vertex with `messages` serialised before `system` or `tools`.

Each reads the request's `Analysis` and the rows in force; a rule that needs the model's minimum
abstains when the model is unknown (`unknown-model` says so once).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from harness._shared._printer import redact
from harness._shared._views import encode_json
from harness.cache._analysis import Analysis
from harness.drift._hints import volatile_matches
from harness.providers._anthropic import key_order
from harness.rules._engine import Finding, Rule, Session

__all__ = [
    "BelowMinimum",
    "NoBreakpoint",
    "TooManyBreakpoints",
    "TtlOrder",
    "VertexKeyOrder",
    "VolatileInPrefix",
]


class TooManyBreakpoints(Rule):
    name = "too-many-breakpoints"
    severity = "error"
    providers = "Anthropic, Bedrock (refused); OpenAI (only the latest written)"
    meaning = (
        "more cache markers than the API takes: Anthropic and Bedrock refuse the request (at most"
        " 4, the top-level automatic cache_control counting as one); OpenAI writes only the latest"
        " 3 (implicit mode) or 4 (explicit mode)"
    )
    fix = "keep at most 4 markers: the end of the tools and system, and the conversation's latest"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            limit = analysis.limit
            if limit is None or analysis.counted <= limit.limit:
                continue
            refused = limit.over_limit == "refused"
            what = (
                "the API refuses the request"
                if refused
                else f"only the latest {limit.limit} are written, the earlier ones are not"
            )
            yield session.finding(
                self,
                analysis.request.index,
                f"{analysis.counted} breakpoints, at most {limit.limit} ({limit.counts}): {what}",
                severity="error" if refused else "warning",
            )


class BelowMinimum(Rule):
    name = "below-minimum"
    severity = "warning"
    providers = "Anthropic, Bedrock, OpenAI, Gemini"
    meaning = (
        "the prefix the request asks to cache is under the model's minimum cacheable tokens:"
        " nothing is written, silently (minimums per model family in `harness rules`)"
    )
    fix = "cache a longer stable prefix (tools and system first), or drop the marker"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            if analysis.minimum is None or analysis.provider_cached or analysis.refused:
                continue
            writes = analysis.writes
            if not writes or any(write.written for write in writes):
                continue
            asked = _asked(analysis)
            yield session.finding(
                self,
                analysis.request.index,
                analysis.below(),
                severity="warning" if asked else "info",
                pointer=max(writes, key=lambda write: write.after).pointer,
            )


def _asked(analysis: Analysis) -> bool:
    """Whether the request asks for caching (a marker, automatic caching, OpenAI's options)."""
    if analysis.marks:
        return True
    return any(key.startswith("prompt_cache_") for key in analysis.split.view.settings)


class NoBreakpoint(Rule):
    name = "no-breakpoint"
    severity = "warning"
    providers = "Anthropic, Bedrock, OpenAI (explicit mode)"
    meaning = (
        "a prefix over the model's minimum sent with no cache marker and no automatic caching"
        " (Anthropic, Bedrock), or OpenAI's explicit mode with no breakpoint: nothing is cached"
    )
    fix = (
        "mark the end of the stable prefix (cache_control on the last system block, a cachePoint),"
        " add Anthropic's top-level cache_control, or prompt_cache_breakpoint in explicit mode"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            caching = analysis.caching
            if caching is None or analysis.marks:
                continue
            if analysis.mode == "explicit":
                yield session.finding(
                    self,
                    analysis.request.index,
                    "prompt_cache_options.mode is explicit and no content block has a"
                    " prompt_cache_breakpoint: nothing is cached",
                )
                continue
            if caching.mode != "breakpoints" or analysis.minimum is None:
                continue
            whole = analysis.tokens(len(analysis.layout.units))
            if whole.tokens < analysis.minimum.tokens or analysis.provider_cached:
                continue
            automatic = (
                f" and no top-level automatic {caching.automatic_marker}"
                if caching.automatic_marker
                else ""
            )
            yield session.finding(
                self,
                analysis.request.index,
                f"{whole} sent with no {caching.marker} marker{automatic}: nothing is cached"
                f" (minimum {analysis.minimum.tokens:,} for {analysis.model})",
            )


class TtlOrder(Rule):
    name = "ttl-order"
    severity = "error"
    providers = "Anthropic, Bedrock"
    meaning = (
        "a breakpoint with a longer time to live after one with a shorter one: entries with a"
        " longer TTL must come first (Anthropic refuses the request)"
    )
    fix = "put the 1h breakpoints (tools, system) before the 5m ones (the conversation)"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            found, row = analysis.ttl_out_of_order, analysis.ttl
            if found is None or row is None:
                continue
            mark, shorter, where = found
            refused = row.out_of_order == "refused"
            yield session.finding(
                self,
                analysis.request.index,
                f"a {mark.ttl or row.default} breakpoint at {mark.pointer} comes after a"
                f" {shorter} one at {where}: longer TTLs must come first"
                + ("; the API refuses the request" if refused else ""),
                severity="error" if refused else "warning",
                pointer=mark.pointer,
            )


_VOLATILE: Final = frozenset({"a timestamp", "a UUID", "a date", "a hex id"})
# Beside the hints' patterns: a time of day to the second, and seconds or milliseconds since the
# epoch from 2017 to 2033 (a bare "09:00" or a ten-digit number is as often a schedule or an id).
_CLOCK: Final = re.compile(r"(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?![\d:])")
_EPOCH: Final = re.compile(r"(?<![\d.])1[5-9]\d{8}(?:\d{3})?(?!\d)(?!\.\d)")
_CLOCK_NEEDS: Final = re.compile(r"\d:\d")
_NIL_UUID: Final = "00000000-0000-0000-0000-000000000000"
# Words just before a value that make it an example of a format, the same every run ("a date,
# e.g. 2025-01-31"; a schema's "examples" or "default").
_EXAMPLE_CUES: Final = (
    "e.g",
    "example",
    "such as",
    "format",
    "like ",
    "i.e",
    '"default":',
    '"const":',
    '"enum":',
    "version",  # "API version 2023-06-01", "v2.3.2026": the same every run
)
_TEMP_PATH: Final = re.compile(
    r"(?:/tmp/|/var/tmp/|/var/folders/|/private/var/folders/|/private/tmp/)[^\s\"'`<>|,;()\[\]{}\\]*"
    r"|[A-Za-z]:(?:\\\\|\\|/)(?:Users|Documents and Settings)(?:\\\\|\\|/)[^\s\"'`<>|,;]*?"
    r"(?:\\\\|\\|/)(?:AppData(?:\\\\|\\|/)Local(?:\\\\|\\|/))?Temp(?:\\\\|\\|/)[^\s\"'`<>|,;]*"
)

# What every match of `_TEMP_PATH` holds (`/var/tmp/`, `/private/tmp/` hold `/tmp/`).
_TEMP_PATH_NEEDS: Final = ("/tmp/", "/var/folders/", ":\\", ":/")


class VolatileInPrefix(Rule):
    name = "volatile-in-prefix"
    severity = "warning"
    providers = "any"
    meaning = (
        "a timestamp, date, UUID, hex id or temporary path in the tools or system, the part every"
        " request repeats: it changes from run to run, and the cache with it"
    )
    fix = "move it into the latest message, or derive it deterministically"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            places = [(unit.pointer, unit.text) for unit in analysis.layout.stable()]
            places += system_messages(analysis.split.view.blocks)
            for pointer, data in places:
                found = _quotable(data, _volatile_in(data))
                for noun, value in found[:3]:
                    yield session.finding(
                        self,
                        analysis.request.index,
                        f'looks like {noun}: "{value[:80]}" at {pointer}, inside the cached'
                        " prefix every request repeats: it changes from run to run and the"
                        " cache with it; move it into the latest message or pin it",
                        pointer=pointer,
                    )
                if found:
                    break  # one unit's findings per request: the first place is the one to fix


# Every request of a conversation, and every cassette of a project, repeats the same tools and
# system: each unit's bytes are scanned once, their findings looked up after that (the scan was
# 48% of `harness lint` on a 100-request cassette, the same header scanned 100 times).
@functools.lru_cache(maxsize=512)
def _volatile_in(data: bytes) -> tuple[tuple[str, str], ...]:
    """`(noun, value)` of each volatile value in one unit's JSON (`volatile-in-prefix`'s)."""
    text = data.decode("utf-8", "replace")
    found = [
        (noun, value)
        for noun, value in volatile_matches(text, _VOLATILE)
        if value != _NIL_UUID  # a placeholder, the same every run
    ]
    if not found:
        if _CLOCK_NEEDS.search(text):  # a time to the second holds a digit, a colon, a digit
            found += [("a timestamp", m.group()) for m in _CLOCK.finditer(text)]
        found += [("a Unix time", m.group()) for m in _EPOCH.finditer(text)]
    found = [(noun, value) for noun, value in found if not _example(text, value)]
    if any(piece in text for piece in _TEMP_PATH_NEEDS):  # one of them is in every match
        found += [
            ("a temporary path", m.group().rstrip(".,:;"))
            for m in _TEMP_PATH.finditer(text)
            if _generated(m.group())
        ]
    return tuple(found)


def _quotable(data: bytes, found: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """What of `found` may be quoted: a part of a secret (a key's hex tail) is the printer's,
    never quoted (asked at each finding: the printer may have learned a secret since)."""
    if not found:
        return []
    shown = redact(data.decode("utf-8", "replace"))
    return [(noun, value) for noun, value in found if value in shown]


_SYSTEM_ROLES: Final = frozenset({"system", "developer"})
_CONVERSATIONS: Final = ("input", "messages", "contents")


def system_messages(blocks: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    """`(pointer, JSON)` of the system and developer messages that open a conversation block (a
    Responses `input`, as pydantic-ai sends its system prompt): a system prompt every request
    repeats, though the provider counts it with the conversation."""
    found = []
    for name in _CONVERSATIONS:
        items = blocks.get(name)
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict) or item.get("role") not in _SYSTEM_ROLES:
                break
            found.append((f"/{name}/{index}", encode_json(item)))
    return found


def _example(text: str, value: str) -> bool:
    """Whether every place `value` stands in `text` is an example of a format (`e.g.`,
    `for example`, a schema's `examples` or `default`...)."""
    start = text.find(value)
    while start >= 0:
        before = text[max(start - 24, 0) : start].lower()
        if not any(cue in before for cue in _EXAMPLE_CUES):
            return False
        start = text.find(value, start + 1)
    return True


def _generated(path: str) -> bool:
    """Whether a temporary path holds a generated name (`/tmp/tmpab12cd34`, `pytest-12`, a
    macOS `/var/folders/...` one): a bare `/tmp/` or `/tmp/out.txt` is the same every run."""
    if "/var/folders/" in path:
        return True
    parts = re.split(r"[\\/]+", path)
    return any(
        any(c.isdigit() for c in part) and (any(c.isalpha() for c in part) or part.isdigit())
        for part in parts[2:]
        if part and not part.endswith(":")
    )


class VertexKeyOrder(Rule):
    name = "vertex-key-order"
    severity = "warning"
    providers = "Anthropic on Vertex AI"
    meaning = (
        "the body serialises messages before system or tools: Claude on Vertex reads the raw key"
        " order and misses the cache (bifrost #6406)"
    )
    fix = "serialise tools and system before messages (a dict built in that order)"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            if analysis.surface != "vertex":
                continue
            order = key_order(analysis.request.body, analysis.surface)
            if order is not None:
                yield session.finding(
                    self,
                    analysis.request.index,
                    f"the body serialises {order}: Claude on Vertex AI misses the cache when the"
                    " growing conversation comes before the stable prefix",
                )
