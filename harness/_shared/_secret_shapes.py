"""The shapes of secrets, and the one pass over a text that finds them.

One `SecretPattern` per kind of key: provider API keys (Anthropic, OpenAI and every `sk-` key,
Groq, xAI, Hugging Face, Google, Perplexity, Replicate, Fireworks), cloud and forge tokens (AWS,
GitHub, GitLab, npm, PyPI, DigitalOcean, Databricks, Slack, Stripe, SendGrid, Shopify, Twilio,
Mailgun, Linear, Notion, Postman, Atlassian, Telegram), bearer tokens, JSON web tokens, private
keys, and a long credential after a key-like name (`api_key=...`, `"password": "..."`).

The scan is one pass, whatever the number of patterns. Every key shape but one holds a run of at
least `MIN_RUN` token characters (`TOKEN_CHARS`: letters, digits and `-_+/.~=`) and reaches at
most `MARGIN` characters beyond that run on either side (each pattern's `run` says so, and is
bounded to make it true). So one translation of the text to character classes and one search for
such runs find every place a key can be; the patterns then run only in a window around each run,
and only those whose literal `needles` are in it. The result is exactly what running every
pattern over the whole text would give (`tests/reliability/test_secrets.py` holds the property).
A pattern without a `run` (a private key header, or a pattern a project adds) runs over the whole
text when its needles are in it, as every pattern used to.

`may_hold_secrets` asks the same question of a file's bytes before they are decoded: what the
harness reads and writes is almost always clean, and then one translation and one search of the
bytes are the whole cost (a 10,000-step recording: the text is never decoded for the scan).
A single regex alternation of every pattern was measured and rejected: Python's `re` tries each
branch at each position (50 s over a 10 MB log, 2 s for an alternation of the needles alone).
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = [
    "MARGIN",
    "MIN_RUN",
    "SECRET_PATTERNS",
    "TOKEN_CHARS",
    "Hit",
    "SecretPattern",
    "find_secrets",
    "may_hold_secrets",
]

TOKEN_CHARS: Final = string.ascii_letters + string.digits + "-_+/.~="
MIN_RUN: Final = 19
MARGIN: Final = 64


class SecretPattern(NamedTuple):
    """A kind of secret.

    `needles`: literals every match contains, one of which must be in the text (or the window)
    before the regex runs; `folded`: the needles are matched case-insensitively. `run`: every
    match holds a run of at least this many `TOKEN_CHARS` and reaches at most `MARGIN - 8`
    characters beyond it (0: no such promise, the pattern runs over the whole text). A group
    named `value`, when the regex has one, is what redaction replaces (the name before it stays).
    """

    kind: str
    regex: re.Pattern[str]
    needles: tuple[str, ...] = ()
    folded: bool = False
    run: int = 0

    def may_match(self, text: str, lowered: str | None) -> bool:
        if not self.needles:
            return True
        if not self.folded:
            return any(needle in text for needle in self.needles)
        if lowered is None:  # non-ASCII text: Unicode case folding ("ſ" is "s"), run the regex
            return True
        return any(needle in lowered for needle in self.needles)


def _key(kind: str, regex: str, *needles: str, run: int = MIN_RUN) -> SecretPattern:
    return SecretPattern(kind, re.compile(regex), needles, False, run)


_CREDENTIAL_NAMES = (
    r"api[_-]?key|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret|access[_-]?token"
    r"|auth[_-]?token|refresh[_-]?token|password|passwd|account[_-]?key"
)

# A key shape matches wherever the key starts and whatever follows it (issue 32: a leading `\b`
# let `_ghp_..._`, `bash_AKIA...`, `xsk-proj-...` and `1AIza...` through). Two guards keep that
# from false alarms, each where a glued match is likely to be no key:
# - a prefix that ends English words (`sk-` in task-, disk-, ask-; `sk_test_` in task_test_; `key-`
#   in monkey-) is a key after a letter or digit only when its body looks like one: a run of 20
#   or more letters and digits that holds a digit (`task-runner-abcdefghijklmnopqrstuv` is left
#   alone; `task-` and a 32-digit hex id is taken for a glued key: the trade-off, decision 0031);
# - `AIza` and 35 letters and digits occur in base64 (a picture's bytes) about once per 50 MB:
#   it is no key when the 64 characters before it are base64 too.
_KEYLIKE = r"(?=[A-Za-z0-9]{20})(?=[A-Za-z]*[0-9])"  # here starts such a run (letters, digits)
_KEYLIKE_AHEAD = rf"(?=[A-Za-z0-9_\-]*?(?<![A-Za-z0-9]){_KEYLIKE})"  # one starts ahead of here


SECRET_PATTERNS: Final = (
    _key("an Anthropic API key (sk-ant-...)", r"sk-ant-[A-Za-z0-9_\-]{16,}", "sk-ant-"),
    _key(
        "a secret key (sk-...)",
        rf"sk-(?:(?:proj|svcacct|admin)-|(?<![A-Za-z0-9]sk-)|{_KEYLIKE_AHEAD})"
        r"[A-Za-z0-9_\-]{16,}",
        "sk-",
    ),
    _key(
        "a bearer token (Bearer ...)",
        r"[Bb]earer[ \t]{1,8}[A-Za-z0-9\-._~+/]{19,}=*",
        "Bearer",
        "bearer",
    ),
    _key("an AWS access key id (AKIA...)", r"(?:AKIA|ASIA)[0-9A-Z]{16}", "AKIA", "ASIA"),
    _key(
        "a GitHub token (ghp_...)",
        r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _key(
        "a Google API key (AIza...)",
        r"AIza(?<![A-Za-z0-9+/]{68})[0-9A-Za-z_\-]{35}",
        "AIza",
    ),
    _key("a Google OAuth token (ya29....)", r"ya29\.[A-Za-z0-9_\-]{30,}", "ya29."),
    _key("a Slack token (xox...)", r"xox[abprs]-[A-Za-z0-9\-]{14,}", "xox"),
    _key(
        "a Slack webhook URL",
        r"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{20,}",
        "hooks.slack.com/",
    ),
    SecretPattern(
        "a private key",
        re.compile(
            # The dashes may be escaped (\u002d); the body runs to its END line, or, when that
            # was cut off (a diff's context, an excerpt), as far as base64 and newlines go.
            r"BEGIN [A-Z ]{0,40}PRIVATE KEY-*"
            r"(?:[A-Za-z0-9+/=:,\-\\ \t\r\n]{0,8192}?-----END [A-Z ]{0,40}PRIVATE KEY-----"
            r"|[A-Za-z0-9+/=:,\-\\ \t\r\n]{0,8192})"
        ),
        ("PRIVATE KEY",),
    ),
    _key(
        "a JSON web token",
        r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        "eyJ",
    ),
    _key("a Groq API key (gsk_...)", r"gsk_[A-Za-z0-9]{20,}", "gsk_"),
    _key("an xAI API key (xai-...)", r"xai-[A-Za-z0-9]{20,}", "xai-"),
    _key("a Hugging Face token (hf_...)", r"hf_[A-Za-z0-9]{30,}", "hf_"),
    _key(
        "a Stripe secret key (sk_live_...)",
        rf"(?<![A-Za-z0-9])[rs]k_(?:live|test)_[A-Za-z0-9]{{16,}}"
        rf"|[rs]k_(?:live|test)_{_KEYLIKE}[A-Za-z0-9]{{16,}}",
        "k_live_",
        "k_test_",
    ),
    _key("a Perplexity API key (pplx-...)", r"pplx-[A-Za-z0-9]{32,}", "pplx-"),
    _key("a Replicate API token (r8_...)", r"r8_[A-Za-z0-9]{30,}", "r8_"),
    _key("a Fireworks API key (fw_...)", r"fw_[A-Za-z0-9]{20,}", "fw_"),
    _key("a GitLab token (glpat-...)", r"glpat-[A-Za-z0-9_\-]{20,}", "glpat-"),
    _key("an npm token (npm_...)", r"npm_[A-Za-z0-9]{36}", "npm_"),
    _key("a PyPI token (pypi-...)", r"pypi-AgE[A-Za-z0-9_\-]{50,}", "pypi-AgE"),
    _key("a DigitalOcean token (dop_v1_...)", r"do[opr]_v1_[a-f0-9]{64}", "_v1_"),
    _key("a Databricks token (dapi...)", r"dapi[a-f0-9]{32}", "dapi"),
    _key("a SendGrid API key (SG....)", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", "SG."),
    _key("a Shopify token (shpat_...)", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shp"),
    _key("a Twilio API key (SK...)", r"SK[0-9a-f]{32}", "SK"),
    _key(
        "a Mailgun API key (key-...)",
        rf"key-(?:(?<![A-Za-z0-9]key-)|{_KEYLIKE})[0-9a-zA-Z]{{32}}",
        "key-",
    ),
    _key("a Linear API key (lin_api_...)", r"lin_api_[A-Za-z0-9]{32,}", "lin_api_"),
    _key(
        "a Notion token (ntn_...)",
        r"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}",
        "ntn_",
        "secret_",
    ),
    _key("a Postman API key (PMAK-...)", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "PMAK-"),
    _key("an Atlassian API token (ATATT...)", r"ATATT[A-Za-z0-9_\-=]{40,}", "ATATT"),
    _key("a Telegram bot token", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}", ":AA"),
    SecretPattern(
        "a long credential after a key-like name (api_key, secret, token, password)",
        re.compile(
            rf"(?i:{_CREDENTIAL_NAMES})[\"'\\]{{0,8}}[ \t]{{0,8}}[:=][ \t]{{0,8}}[\"'\\]{{0,8}}"
            r"(?P<value>[A-Za-z0-9+/_\-]{32,})"
        ),
        ("api", "secret", "access", "auth", "refresh", "passw", "account"),
        True,
        MIN_RUN,
    ),
)


class Hit(NamedTuple):
    """Where a secret is (`start`, `end`), what kind, and the span redaction replaces."""

    start: int
    end: int
    kind: str
    cut: tuple[int, int]


# Token characters become "a", everything else " ": a run of MIN_RUN "a"s is a place to look.
_CLASSES: Final = bytes(ord("a") if chr(i) in TOKEN_CHARS else ord(" ") for i in range(256))
_RUN: Final = re.compile(b"a" * MIN_RUN + b"+")
# The same for UTF-8 bytes, with every non-ASCII byte "n" (where bytes and characters part).
_BYTE_CLASSES: Final = bytes(
    ord("a") if chr(i) in TOKEN_CHARS else ord("n") if i >= 128 else ord(" ") for i in range(256)
)


def find_secrets(
    text: str,
    patterns: Sequence[SecretPattern],
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
    ascii_bytes: bytes | None = None,
) -> list[Hit]:
    """Every key-shaped string in `text` (and exact occurrence of `secrets`), in text order.

    A match overlapping one of an earlier pattern is not reported again; `allow` holds exact
    strings that are not secrets. `ascii_bytes` is `text` as bytes when the caller has them and
    `text` is ASCII (it saves one encoding).
    """
    hits: list[Hit] = []
    windowed = [p for p in patterns if p.run >= MIN_RUN and p.needles]
    windows = _windows(text, ascii_bytes, _gate(tuple(windowed))) if windowed else []
    lowered: str | None = None
    for pattern in patterns:
        if pattern in windowed:
            spans = [
                (start, end) for start, end, piece, low in windows if pattern.may_match(piece, low)
            ]
        else:
            if pattern.folded and pattern.needles and lowered is None:
                lowered = text.lower() if text.isascii() else ""
            if not pattern.may_match(text, lowered or None):
                continue
            spans = [(0, len(text))]
        for start, end in spans:
            for match in pattern.regex.finditer(text, start, end):
                found = match.group()
                if found in allow or any(
                    hit.start < match.end() and match.start() < hit.end for hit in hits
                ):
                    continue
                cut = match.span("value") if "value" in pattern.regex.groupindex else match.span()
                hits.append(Hit(match.start(), match.end(), pattern.kind, cut))
    finder = _finder(tuple(secrets), allow) if len(secrets) > _FEW else None
    if finder is not None:  # many known values (a proxy log's): one search, overlaps too
        value = finder.search(text)
        while value is not None:
            hits.append(Hit(value.start(), value.end(), _VALUE_KIND, value.span()))
            value = finder.search(text, value.start() + 1)
        return sorted(hits)
    for secret in secrets:
        if secret in allow or not secret:
            continue
        at = text.find(secret)
        while at >= 0:
            end = at + len(secret)
            hits.append(Hit(at, end, _VALUE_KIND, (at, end)))
            at = text.find(secret, end)
    return sorted(hits)


_VALUE_KIND: Final = "the value of a redacted header"
_FEW: Final = 16  # known values looked for one by one; more are one regex (`_finder`)


@functools.lru_cache(maxsize=8)
def _finder(secrets: tuple[str, ...], allow: frozenset[str]) -> re.Pattern[str] | None:
    """One regex for many known values, a trie preferring the longest (a CLI that read a proxy
    log of 3,000 keys searched each printed line 3,000 times); None if it cannot be built."""
    words = sorted({secret for secret in secrets if secret and secret not in allow})
    try:
        return re.compile(_longest_first(words)) if words else None
    except (re.error, RecursionError, OverflowError):
        return None


@functools.lru_cache(maxsize=8)
def _in_bytes(finder: re.Pattern[str]) -> re.Pattern[bytes]:
    return re.compile(finder.pattern.encode("utf-8", "surrogatepass"))


def _longest_first(words: list[str]) -> str:
    """An alternation of sorted, distinct `words` as a trie whose branches try a longer word
    before a shorter one it starts with (a shared prefix is written once)."""
    first, last = words[0], words[-1]  # sorted: their common start is everyone's
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), None)
    prefix = first[: min(len(first), len(last)) if size is None else size]
    rest = [word[len(prefix) :] for word in words]
    branches = [
        _longest_first(list(group))
        for _, group in itertools.groupby((word for word in rest if word), key=lambda w: w[0])
    ]
    if "" in rest:
        branches.append("")  # the shorter word, tried last
    inner = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return re.escape(prefix) + inner


def may_hold_secrets(
    data: bytes, patterns: Sequence[SecretPattern], secrets: Sequence[str] = ()
) -> bool:
    """False only when `find_secrets` would find nothing in `data` decoded (UTF-8, errors
    replaced): no run of token characters with a needle near it, no needle of a pattern that
    is not windowed, none of `secrets`. One translation of the bytes and one search for runs;
    a window holding a non-ASCII byte, where bytes and characters part, answers True."""
    windowed = tuple(p for p in patterns if p.run >= MIN_RUN and p.needles)
    lowered: bytes | None = None
    for pattern in patterns:
        if pattern in windowed:
            continue
        if not pattern.needles:
            return True
        if pattern.folded:
            lowered = data.lower() if lowered is None else lowered
            if not lowered.isascii() or any(n.lower().encode() in lowered for n in pattern.needles):
                return True
        elif any(needle.encode() in data for needle in pattern.needles):
            return True
    finder = _finder(tuple(secrets), frozenset()) if len(secrets) > _FEW else None
    if finder is not None:
        if _in_bytes(finder).search(data) is not None:
            return True
    else:
        for secret in secrets:
            if secret and secret.encode("utf-8", "surrogatepass") in data:
                return True
    if not windowed:
        return False
    gate = _gate(windowed)
    classes = data.translate(_BYTE_CLASSES)
    lowered = None
    for run in _RUN.finditer(classes):
        # A match reaches at most MARGIN - 8 characters before its run; when those bytes are
        # ASCII they are exactly those characters, and the text's own check applies to them.
        start, end = max(run.start() - MARGIN + 8, 0), run.end()
        if classes.find(b"n", start, end) >= 0:
            return True
        lowered = data.lower() if lowered is None else lowered
        if gate.search(lowered, start, end) is not None:
            return True
    return False


Window = tuple[int, int, str, str | None]


def _windows(text: str, ascii_bytes: bytes | None, gate: re.Pattern[bytes]) -> list[Window]:
    """The stretches of `text` where a windowed pattern can match: `MARGIN` characters around
    each run of `MIN_RUN` token characters, merged, and kept only when a needle is in them (any
    case; a window holding a non-ASCII character is kept, for Unicode case folding)."""
    ascii_text = ascii_bytes is not None and len(ascii_bytes) == len(text) and ascii_bytes.isascii()
    if not ascii_text:
        ascii_bytes = text.encode("ascii", "replace")  # one byte per character, as text indexes
    assert ascii_bytes is not None
    merged: list[list[int]] = []  # [window start, window end, runs' start, runs' end]
    for run in _RUN.finditer(ascii_bytes.translate(_CLASSES)):
        start, end = max(run.start() - MARGIN, 0), min(run.end() + MARGIN, len(text))
        if merged and start <= merged[-1][1]:
            merged[-1][1], merged[-1][3] = end, run.end()
        else:
            merged.append([start, end, run.start(), run.end()])
    lowered = ascii_bytes.lower()
    windows: list[Window] = []
    for start, end, first, last in merged:
        # A needle lies in its match, and a match reaches at most MARGIN - 8 before its run and
        # ends by the end of it (past the end: the private key, which is not windowed).
        if gate.search(lowered, max(first - MARGIN + 8, 0), last) is None and (
            ascii_text or text[start:end].isascii()
        ):
            continue
        piece = text[start:end]
        windows.append((start, end, piece, piece.lower() if piece.isascii() else None))
    return windows


@functools.lru_cache(maxsize=16)
def _gate(patterns: tuple[SecretPattern, ...]) -> re.Pattern[bytes]:
    """Any needle of `patterns`, lower-cased, for the lower-cased text: a window holding none
    is skipped (the per-pattern checks then look at the case). The alternation is a trie (`re`
    tries each branch of a flat one at every position: twice as slow)."""
    return re.compile(_trie({n.lower().encode() for p in patterns for n in p.needles}))


def _trie(words: set[bytes]) -> bytes:
    """A regex matching any of `words`, one branch per first byte (a word that ends where a
    longer one goes on is enough for the gate: the longer one holds it)."""
    if not words:
        return b"(?!)"  # matches nothing
    if b"" in words:
        return b""
    branches: dict[bytes, set[bytes]] = {}
    for word in words:
        branches.setdefault(word[:1], set()).add(word[1:])
    alternatives = [re.escape(first) + _trie(rest) for first, rest in sorted(branches.items())]
    return alternatives[0] if len(alternatives) == 1 else b"(?:" + b"|".join(alternatives) + b")"
