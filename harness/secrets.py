"""Secrets never reach a file: a deny-list redaction, then a scan of the bytes about to be written.

Header and query values named in the deny-list (or whose names hold "auth", "key", "secret",
"token", "password", "cookie" or "credential") become `[redacted]`. Then every byte to be written
is scanned for key-shaped strings (sk-..., Bearer ..., AKIA..., ghp_..., JWTs, private keys) and
for the values that were redacted; any hit raises `SecretLeak` and nothing is written. A finding
says what kind of secret and where, never the secret itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from harness.errors import SecretLeak as SecretLeak  # re-exported: it used to live here

REDACTED: Final = "[redacted]"


# -- redaction ----------------------------------------------------------------------------------

DEFAULT_SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-admin-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "x-auth-token",
        "x-access-token",
        "x-csrf-token",
        "x-session-token",
    }
)
# Any header whose name holds one of these words is redacted too (x-portkey-api-key, ...).
_SECRET_HEADER_WORDS: Final = ("auth", "key", "secret", "token", "password", "cookie", "credential")
_SAFE_HEADER_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-")
DEFAULT_SECRET_QUERY: Final = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "token",
        "secret",
        "client_secret",
        "password",
        "sig",
        "signature",
    }
)


class SecretPattern(NamedTuple):
    """A kind of secret. `needles`: literals every match contains, one of which must be in the
    text before the regex runs (a cheap prefilter, the scan is on every fixture load);
    `folded`: the needles are matched case-insensitively."""

    kind: str
    regex: re.Pattern[str]
    needles: tuple[str, ...] = ()
    folded: bool = False

    def may_match(self, text: str, lowered: str | None) -> bool:
        if not self.needles:
            return True
        if not self.folded:
            return any(needle in text for needle in self.needles)
        if lowered is None:  # non-ASCII text: Unicode case folding ("ſ" is "s"), run the regex
            return True
        return any(needle in lowered for needle in self.needles)


SECRET_PATTERNS: Final = (
    SecretPattern(
        "an Anthropic API key (sk-ant-...)", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"), ("sk-ant-",)
    ),
    SecretPattern("a secret key (sk-...)", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), ("sk-",)),
    SecretPattern(
        "a bearer token (Bearer ...)",
        re.compile(r"\bBearer\s+[A-Za-z0-9\-._~+/]{16,}=*"),
        ("Bearer",),
    ),
    SecretPattern(
        "an AWS access key id (AKIA...)",
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("AKIA", "ASIA"),
    ),
    SecretPattern(
        "a GitHub token (ghp_...)",
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{22,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern("a Google API key (AIza...)", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    SecretPattern(
        "a Slack token (xox...)", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), ("xox",)
    ),
    SecretPattern(
        "a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), ("-----BEGIN ",)
    ),
    SecretPattern(
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
        ("eyJ",),
    ),
    SecretPattern(
        "a long credential after a key-like name (api_key, secret, token, password)",
        re.compile(
            r"(?i)(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token"
            r"|auth[_-]?token|refresh[_-]?token|password|passwd)[\"'\\]*\s*[:=]\s*[\"'\\]*"
            r"[A-Za-z0-9+/_\-]{32,}"
        ),
        ("api", "secret", "access", "auth", "refresh", "passw"),
        True,
    ),
)


@dataclass(frozen=True)
class SecretFinding:
    """Where something key-shaped is; never the thing itself."""

    kind: str
    line: int
    column: int

    def describe(self) -> str:
        return f"{self.kind} at line {self.line}, column {self.column}"


def _header_is_secret(name: str, deny: frozenset[str]) -> bool:
    lower = name.lower()
    if lower in deny:
        return True
    if lower.startswith(_SAFE_HEADER_PREFIXES):
        return False
    return any(word in lower for word in _SECRET_HEADER_WORDS)


@dataclass(frozen=True)
class Redaction:
    """What is redacted before a cassette is written, and what the scan allows.

    `headers`: header names (lower case) whose values become `[redacted]`; names holding
    "auth", "key", "secret", "token", "password", "cookie" or "credential" are redacted too.
    `query`: URL query parameters redacted the same way. `patterns`: the key-shaped strings
    that fail a recording. `allow`: exact strings the scan accepts (known fake test keys).
    """

    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    query: frozenset[str] = DEFAULT_SECRET_QUERY
    patterns: tuple[SecretPattern, ...] = SECRET_PATTERNS
    allow: frozenset[str] = frozenset()

    def header_pairs(self, pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        return tuple(
            (name, REDACTED if _header_is_secret(name, self.headers) else value)
            for name, value in pairs
        )

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if not parts.query:
            return url
        params = []
        for item in parts.query.split("&"):
            name, sep, value = item.partition("=")
            if sep and name.lower() in self.query and value:
                value = REDACTED
            params.append(f"{name}{sep}{value}")
        return parts._replace(query="&".join(params)).geturl()

    def secret_values(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """The values of redacted headers (without a `Bearer ` prefix), to look for elsewhere."""
        values = []
        for name, value in pairs:
            if _header_is_secret(name, self.headers) and value != REDACTED:
                bare = value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
                if len(bare) >= 8:
                    values.append(bare)
        return values

    def scan(self, data: bytes, secrets: Sequence[str] = ()) -> list[SecretFinding]:
        return scan_secrets(data, self.patterns, allow=self.allow, secrets=secrets)


def scan_secrets(
    data: bytes,
    patterns: Sequence[SecretPattern] = SECRET_PATTERNS,
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
) -> list[SecretFinding]:
    """Key-shaped strings in `data`, and exact occurrences of `secrets`, by line and column."""
    text = data.decode("utf-8", "replace")
    lowered = text.lower() if text.isascii() else None
    spans: list[tuple[int, int, str]] = []
    for pattern in patterns:
        if not pattern.may_match(text, lowered):
            continue
        for match in pattern.regex.finditer(text):
            if match.group() in allow:
                continue
            if any(start < match.end() and match.start() < end for start, end, _ in spans):
                continue
            spans.append((match.start(), match.end(), pattern.kind))
    for secret in secrets:
        if secret in allow:
            continue
        for match in re.finditer(re.escape(secret), text):
            spans.append((match.start(), match.end(), "the value of a redacted header"))
    findings = []
    for start, _, kind in sorted(spans):
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(SecretFinding(kind, line, column))
    return findings


def refuse_secrets(files: Sequence[tuple[object, bytes]]) -> None:
    """Raise SecretLeak for the first file whose bytes hold something key-shaped."""
    for path, data in files:
        findings = scan_secrets(data)
        if findings:
            raise SecretLeak(str(path), findings)
