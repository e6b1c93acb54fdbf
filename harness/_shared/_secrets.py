"""Secrets never reach a file or a printed line: a deny-list redaction, then a scan.

Header and query values named in the deny-list (or whose names hold "auth", "key", "secret",
"token", "password", "cookie", "signature" or "credential") become `[redacted]`, and so does the
password of a URL (or its user part, when that is a token). Then every byte to be written is
scanned for key-shaped strings (`harness._shared._secret_shapes`: sk-..., Bearer ..., AKIA...,
ghp_..., gsk_..., JWTs, private keys and thirty more shapes, in one pass), for the same shapes
percent-encoded or base64-encoded and for a URL's password (`harness._shared._secret_views`),
and for the values that were redacted (a cookie's values one by one); any hit raises
`SecretLeak` and nothing is written. A finding says what kind of secret and where, never the
secret itself. What is printed (reports, summaries, annotations, error messages) goes through
`redact_text`, which replaces every key-shaped string by `[redacted]`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from harness._shared._errors import SecretLeak
from harness._shared._secret_shapes import SECRET_PATTERNS, SecretPattern
from harness._shared._secret_views import find_all, may_hold_any, token_user

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
# Any header or query parameter whose name holds one of these words is redacted too
# (x-portkey-api-key, refresh_token, X-Amz-Signature, X-Goog-Credential, ...).
_SECRET_NAME_WORDS: Final = (
    "auth",
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "cookie",
    "credential",
    "signature",
)
_SECRET_HEADER_WORDS: Final = _SECRET_NAME_WORDS
_SAFE_HEADER_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-")
DEFAULT_SECRET_QUERY: Final = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "auth",
        "secret",
        "client_secret",
        "password",
        "pass",
        "pwd",
        "sig",
        "signature",
        "code",
        "jwt",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
    }
)


@dataclass(frozen=True)
class SecretFinding:
    """Where something key-shaped is; never the thing itself."""

    kind: str
    line: int
    column: int
    where: str = ""  # when not the file's own bytes: "the gzip-decoded body of request 1"

    def describe(self) -> str:
        where = f" of {self.where}" if self.where else ""
        return f"{self.kind} at line {self.line}, column {self.column}{where}"


# A redacted value shorter than this is not looked for elsewhere (too many false hits).
MIN_SECRET_VALUE: Final = 8
# `<scheme> <credentials>` (RFC 9110's auth-scheme is a token); the credential is what is echoed.
_SCHEMED: Final = re.compile(r"([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,39})[ \t]+(\S.*)", re.DOTALL)


def credentials(value: str) -> list[str]:
    """What of a secret header's value may be echoed elsewhere: the value itself when it has no
    scheme, else the credential after the scheme word; for `Basic`, the decoded `user:password`
    and the password too (defect 11 of issue 24: only `Bearer` was understood)."""
    value = value.strip()
    match = _SCHEMED.fullmatch(value)
    if match is None:
        return [value]
    scheme, credential = match.group(1).lower(), match.group(2).strip()
    found = [credential]
    if scheme == "basic":
        try:
            decoded = base64.b64decode(credential, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return found
        found.append(decoded)
        _, sep, password = decoded.partition(":")
        if sep and password:
            found.append(password)
    return found


def cookie_values(name: str, value: str) -> list[str]:
    """The values of a `Cookie` header's pairs, or of the cookie a `Set-Cookie` sets (its
    attributes, `Path=/` or `Expires=...`, are no secret); [] for another header."""
    lower = name.lower()
    if "cookie" not in lower:
        return []
    pairs = value.split(";")
    if lower.startswith("set-cookie"):
        pairs = pairs[:1]
    found = []
    for pair in pairs:
        _, sep, item = pair.partition("=")
        item = item.strip().strip('"')
        if sep and item:
            found.append(item)
    return found


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
        """`url` with the values of secret query parameters, and its password, redacted; a
        user part alone that is a token (`https://<token>@host`) too."""
        parts = urlsplit(url)
        userinfo, at, host = parts.netloc.rpartition("@")
        if parts.password:
            user = parts.username or ""
            parts = parts._replace(netloc=f"{user}:{REDACTED}@{host}")
        elif at and token_user(userinfo):
            parts = parts._replace(netloc=f"{REDACTED}@{host}")
        if not parts.query:
            return parts.geturl()
        params = []
        for item in parts.query.split("&"):
            name, sep, value = item.partition("=")
            if sep and value and self.query_is_secret(name):
                value = REDACTED
            params.append(f"{name}{sep}{value}")
        return parts._replace(query="&".join(params)).geturl()

    def query_is_secret(self, name: str) -> bool:
        lower = _unquote_name(name).lower()
        return lower in self.query or any(word in lower for word in _SECRET_NAME_WORDS)

    def secret_values(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """The values of redacted headers, to look for elsewhere: the credential whatever its
        scheme (`Bearer`, `Token`, `Key`, `Basic`...: what follows the scheme word), and for
        `Basic` also the decoded `user:password` and the password; a cookie's values one by
        one (`Cookie: sid=...; csrf=...`, and the cookie a `Set-Cookie` sets: issue 32, the
        scan looked for `sid=<value>`, not the value)."""
        values = []
        for name, value in pairs:
            if _header_is_secret(name, self.headers) and value != REDACTED:
                found = [*credentials(value), *cookie_values(name, value)]
                values += [v for v in found if len(v) >= MIN_SECRET_VALUE]
        return list(dict.fromkeys(values))

    def url_values(self, url: str) -> list[str]:
        """What `url` (redacted) hides, to look for elsewhere: its password and the values of
        its secret query parameters, as given and percent-decoded."""
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        values = [parts.password or "", userinfo if token_user(userinfo) else ""]
        for item in parts.query.split("&"):
            name, sep, value = item.partition("=")
            if sep and self.query_is_secret(name):
                values += [value, _unquote_name(value)]
        return [v for v in dict.fromkeys(values) if len(v) >= MIN_SECRET_VALUE and v != REDACTED]

    def scan(self, data: bytes, secrets: Sequence[str] = ()) -> list[SecretFinding]:
        return scan_secrets(data, self.patterns, allow=self.allow, secrets=secrets)


def scan_secrets(
    data: bytes,
    patterns: Sequence[SecretPattern] = SECRET_PATTERNS,
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
    where: str = "",
) -> list[SecretFinding]:
    """Key-shaped strings in `data`, and exact occurrences of `secrets`, by line and column."""
    if not may_hold_any(data, patterns, secrets):
        return []  # clean bytes, the usual case: never decoded
    text = data.decode("utf-8", "replace")
    raw = data if len(data) == len(text) else None  # ASCII: the bytes index like the text
    return findings_in(text, patterns, allow=allow, secrets=secrets, where=where, raw=raw)


def findings_in(
    text: str,
    patterns: Sequence[SecretPattern] = SECRET_PATTERNS,
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
    where: str = "",
    raw: bytes | None = None,
) -> list[SecretFinding]:
    """`scan_secrets` for a text already decoded."""
    findings = []
    for hit in find_all(text, patterns, allow=allow, secrets=secrets, ascii_bytes=raw):
        line = text.count("\n", 0, hit.start) + 1
        column = hit.start - (text.rfind("\n", 0, hit.start) + 1) + 1
        findings.append(SecretFinding(hit.kind, line, column, where))
    return findings


def redact_text(
    text: str,
    patterns: Sequence[SecretPattern] = SECRET_PATTERNS,
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
) -> str:
    """`text` with every key-shaped string (and each of `secrets`) replaced by `[redacted]`.

    For a credential after a name (`password: ...`) only the value is replaced. Redact a text
    before cutting it: a cut key may no longer look like one.
    """
    if not text:
        return text
    hits = find_all(text, patterns, allow=allow, secrets=secrets)
    if not hits:
        return text
    pieces = []
    position = 0
    for hit in hits:
        start, end = hit.cut
        if start < position:  # inside a span already replaced
            start = position
        if end <= start:
            continue
        pieces += [text[position:start], REDACTED]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def refuse_secrets(files: Sequence[tuple[object, bytes]]) -> None:
    """Raise SecretLeak for the first file whose bytes hold something key-shaped."""
    for path, data in files:
        findings = scan_secrets(data)
        if findings:
            raise SecretLeak(str(path), findings)


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def _unquote_name(name: str) -> str:
    return _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), name.replace("+", " "))
