"""Secrets an encoding hides from the key shapes: percent-encoding, base64, a URL's userinfo.

`find_all` is `find_secrets` (`harness._shared._secret_shapes`) and three more looks at the same
text (issue 32's third attack; decision 0031 says how far they go):
- **percent-encoded**: every `%XX` escape is decoded, once (`?q=%73k-ant-...`, a whole key
  escaped); a key the decoded text shows is a hit on the escaped span of the text;
- **base64**: every run of 20 to `MAX_BASE64` base64 characters (standard or URL-safe, padded
  or not) is decoded at each of its four alignments (so a run glued to a word still decodes),
  once; a key or known secret in the decoded bytes makes the whole run a hit. Longer runs (a
  picture) are not decoded; nor is base64 inside base64, or base64 inside percent-encoding;
- **a URL's userinfo**: the password of `scheme://user:password@host` (8 characters or more, not
  a placeholder such as `<password>` or `${TOKEN}`), and a user part alone of 20 or more token
  characters holding a digit (a token used as the user: `https://<token>@host`).

`may_hold_any` is `may_hold_secrets` for these views too, on bytes never decoded as a whole: the
escapes and runs are found in the bytes, every decoding is joined and cleared in one call.
"""

from __future__ import annotations

import binascii
import bisect
import re
from collections.abc import Iterator, Sequence
from typing import Final

from harness._shared._secret_shapes import Hit, SecretPattern, find_secrets, may_hold_secrets

__all__ = ["MAX_BASE64", "find_all", "may_hold_any", "token_user"]

MAX_BASE64: Final = 64 * 1024  # characters of a base64 run that is decoded (a key's is ~100)
_MIN_BASE64: Final = 20  # the base64 of 15 bytes: shorter than any key shape
_MIN_PASSWORD: Final = 8
_MIN_USER_TOKEN: Final = 20

_PERCENT: Final = re.compile(r"%([0-9A-Fa-f]{2})")
_PERCENT_BYTES: Final = re.compile(rb"%([0-9A-Fa-f]{2})")
_URL_SAFE: Final = str.maketrans("-_", "+/")
# `scheme://user:password@` (the slashes may be JSON-escaped); userinfo holds no `/?#@[]`,
# quotes, angle brackets or whitespace.
_USERINFO: Final = (
    r":(?:\\?/){2}(?P<user>[^\s/?#@\[\]\"'<>\\:]{0,128})"
    r"(?::(?P<password>[^\s/?#@\[\]\"'<>\\]{1,256}))?@"
)
_USERINFO_TEXT: Final = re.compile(_USERINFO)
_USERINFO_BYTES: Final = re.compile(_USERINFO.encode())
_TOKEN_USER: Final = re.compile(rf"(?=[^:]*[0-9])[A-Za-z0-9\-_+.~=]{{{_MIN_USER_TOKEN},}}")
_PLACEHOLDER: Final = re.compile(r"[<{$%]|(.)\1*$")  # <password>, {{x}}, ${TOKEN}, %s, ********

_PASSWORD_KIND: Final = "a password in a URL (scheme://user:password@host)"
_USER_KIND: Final = "a token as a URL's user (scheme://token@host)"


def find_all(
    text: str,
    patterns: Sequence[SecretPattern],
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
    ascii_bytes: bytes | None = None,
) -> list[Hit]:
    """`find_secrets`, and the secrets percent-encoding, base64 and a URL's userinfo hide (see
    the module doc), in text order."""
    hits = find_secrets(text, patterns, allow=allow, secrets=secrets, ascii_bytes=ascii_bytes)
    more = [
        *_userinfo(text, allow),
        *_percent_encoded(text, patterns, allow, secrets),
        *_base64_encoded(text, patterns, allow, secrets),
    ]
    if not more:
        return hits
    return sorted({*hits, *more})


def may_hold_any(
    data: bytes, patterns: Sequence[SecretPattern], secrets: Sequence[str] = ()
) -> bool:
    """False only when `find_all` would find nothing in `data` decoded (UTF-8, errors
    replaced); `data` is never decoded whole."""
    if may_hold_secrets(data, patterns, secrets):
        return True
    if b"@" in data and any(_userinfo_bytes(data)):
        return True
    if b"%" in data and _PERCENT_BYTES.search(data) is not None:
        decoded = _PERCENT_BYTES.sub(lambda m: bytes([int(m.group(1), 16)]), data)
        if may_hold_secrets(decoded, patterns, secrets):
            return True
    return _base64_may_hold([run for _, _, run in _runs(data)], patterns, secrets)


# -- a URL's userinfo ----------------------------------------------------------------------------


def _userinfo(text: str, allow: frozenset[str]) -> Iterator[Hit]:
    if "@" not in text:
        return
    for match in _USERINFO_TEXT.finditer(text):
        password, user = match.group("password"), match.group("user")
        if password is not None:
            if _secret_password(password) and password not in allow:
                span = match.span("password")
                yield Hit(*span, _PASSWORD_KIND, span)
        elif token_user(user) and user not in allow:
            span = match.span("user")
            yield Hit(*span, _USER_KIND, span)


def _userinfo_bytes(data: bytes) -> Iterator[bool]:
    for match in _USERINFO_BYTES.finditer(data):
        password, user = match.group("password"), match.group("user")
        if password is not None:
            yield _secret_password(password.decode("latin-1"))
        else:
            yield token_user(user.decode("latin-1"))


def token_user(user: str) -> bool:
    """Whether a URL's user part (without a password) is a token: 20 or more token characters,
    one a digit (`https://<token>@host`), not a name (`git`, `bob.smith`)."""
    return _TOKEN_USER.fullmatch(user) is not None


def _secret_password(password: str) -> bool:
    return len(password) >= _MIN_PASSWORD and _PLACEHOLDER.match(password) is None


# -- percent-encoding ------------------------------------------------------------------------------


def _percent_encoded(
    text: str, patterns: Sequence[SecretPattern], allow: frozenset[str], secrets: Sequence[str]
) -> list[Hit]:
    """Hits in `text` with its `%XX` escapes decoded (each to one character), on the text's
    spans; those the text shows plainly too are the direct scan's."""
    if "%" not in text:
        return []
    escapes = [match.start() for match in _PERCENT.finditer(text)]
    if not escapes:
        return []
    decoded = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text)
    # The decoded position of each escape: an escape before it took 3 characters, now 1.
    at = [start - 2 * number for number, start in enumerate(escapes)]

    def original(position: int) -> int:
        return position + 2 * bisect.bisect_left(at, position)

    found = []
    for hit in find_secrets(decoded, patterns, allow=allow, secrets=secrets):
        start, end = original(hit.start), original(hit.end)
        if "%" in text[start:end]:
            cut = (original(hit.cut[0]), original(hit.cut[1]))
            found.append(Hit(start, end, f"{hit.kind}, percent-encoded", cut))
    return found


# -- base64 ---------------------------------------------------------------------------------------

# Base64 characters (standard and URL-safe, and padding) become "a", others " ": a run of
# _MIN_BASE64 "a"s is then found by `bytes.find` (three times faster than a regex on prose).
_BASE64_CLASSES: Final = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/-_=") else ord(" ")
    for i in range(256)
)
_RUN: Final = b"a" * _MIN_BASE64


def _runs(data: bytes) -> list[tuple[int, int, str]]:
    """Each base64 run of `data` (ASCII or not: a run is ASCII) up to MAX_BASE64 long: its
    span and its characters, URL-safe ones read as standard ones and padding left out."""
    classes = data.translate(_BASE64_CLASSES)
    found = []
    start = classes.find(_RUN)
    while start >= 0:
        end = classes.find(b" ", start + _MIN_BASE64)
        end = len(classes) if end < 0 else end
        if end - start <= MAX_BASE64:
            text = data[start:end].decode("ascii").translate(_URL_SAFE).replace("=", "")
            found.append((start, end, text))
        start = classes.find(_RUN, end)
    return found


def _decoded(runs: Sequence[str], offset: int) -> bytes:
    """The runs read from their character `offset` on, decoded in one call: each run's last
    group short of four padded with "A" (its bytes exact, then NULs), the runs apart by NULs."""
    pieces = []
    for run in runs:
        piece = run[offset:]
        if len(piece) % 4 == 1:
            piece = piece[:-1]  # one character is no byte
        pieces.append(piece + "A" * (-len(piece) % 4))
    return binascii.a2b_base64("AAAA".join(pieces))


def _base64_may_hold(
    runs: Sequence[str], patterns: Sequence[SecretPattern], secrets: Sequence[str]
) -> bool:
    """Whether a decoding of any of the runs (at any of its four alignments) may hold a secret:
    one decoding and one clearance of them all."""
    if not runs:
        return False
    joined = b"\x00".join(_decoded(runs, offset) for offset in range(4))
    return may_hold_secrets(joined, patterns, secrets)


def _base64_encoded(
    text: str, patterns: Sequence[SecretPattern], allow: frozenset[str], secrets: Sequence[str]
) -> list[Hit]:
    """A hit for each base64 run whose decoding holds a key or a known secret (the whole run:
    where a decoded key lies in the run is not a character boundary)."""
    runs = _runs(text.encode("ascii", "replace"))  # one byte a character, as text indexes
    if not _base64_may_hold([run for _, _, run in runs], patterns, secrets):
        return []
    found = []
    for start, end, run in runs:
        for offset in range(4):
            decoded = _decoded([run], offset).decode("latin-1")
            inner = find_secrets(decoded, patterns, allow=allow, secrets=secrets)
            if inner:
                found.append(Hit(start, end, f"{inner[0].kind}, base64-encoded", (start, end)))
                break
    return found
