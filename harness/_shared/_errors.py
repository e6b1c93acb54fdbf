"""Every error the harness raises on purpose, under one base: `HarnessError`.

A user meets two families, and `exit_code` tells them apart in one place (the CLI's `main`):
- bad input or usage (exit 2): a file that is missing, corrupt or foreign (`FixtureError`), a name
  that cannot be a file name (`UnsafeName`), a write refused under CI (`WriteRefused`), a secret
  about to be written (`SecretLeak`), a request the cassette cannot answer (`CaptureError`);
- drift (exit 1): header bytes that moved (`HeaderDrift`, `PrefixBroken`). These are also
  `AssertionError`s, so pytest reports them as test failures, not as errors.

Every message is one line that names the file and what to do (a drift's message is its report).
Control characters in a message are escaped: a newline read from a file must not split the line,
or forge a CI annotation. The reference runtime (`harness.agent`) has its own errors: it imports
nothing from the harness.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

__all__ = [
    "EXIT_DRIFT",
    "EXIT_USAGE",
    "CannotPerturb",
    "CaptureError",
    "CassetteMismatch",
    "CassetteMissing",
    "CassetteSecretLeak",
    "Drift",
    "FixtureError",
    "HarnessError",
    "HashSeedError",
    "InvalidScenario",
    "SecretLeak",
    "UnsafeName",
    "UsageError",
    "WriteFailed",
    "WriteRefused",
    "one_line",
]

EXIT_DRIFT = 1
EXIT_USAGE = 2

# C0 and C1 control characters (ESC, CR, BEL, the 8-bit CSI), the line and paragraph
# separators, and the bidirectional overrides and isolates (text that reads reordered).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class Described(Protocol):
    """What an error needs of a secret finding: its kind and place in words, never the secret
    (`harness._shared._secrets.SecretFinding` is one). The errors sit below the secrets and the
    drift report: they name what they need, not those types."""

    def describe(self) -> str: ...


class Printable(Protocol):
    """What an error needs of a drift report (`harness.drift.DriftReport` is one)."""

    def to_text(self) -> str: ...

    def to_markdown(self) -> str: ...


def one_line(text: str) -> str:
    """`text` with control characters escaped (`\\n` stays visible as the two characters; an
    ESC, a CR or a bidirectional override is never emitted raw)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class HarnessError(Exception):
    """The base of every error a user can cause. `exit_code` is what the CLI exits with."""

    exit_code: ClassVar[int] = EXIT_USAGE


class UsageError(HarnessError, ValueError):
    """An argument the harness cannot use: an unknown mode, a negative count."""


class FixtureError(HarnessError):
    """A file the harness reads is missing, corrupt, truncated, of another version, or not ours.

    `str(error)` is one line that names the file, what is wrong, and what to do.
    """

    def __init__(self, path: Path | str, problem: str, hint: str = "") -> None:
        self.path = Path(path)
        self.problem = problem
        self.hint = hint
        # msgspec quotes field names and values raw: a newline in a file must not split the
        # message (or forge a CI annotation line), so control characters are escaped.
        super().__init__(one_line(f"{path}: {problem}" + (f" ({hint})" if hint else "")))


class InvalidScenario(FixtureError):
    """A scenario that decodes but cannot run: a config key its app preset does not take, a
    value of the wrong type, a malformed tool order, two plugins with one name."""


class WriteRefused(HarnessError):
    """The harness was asked to write while it must not (CI, or check mode)."""


class WriteFailed(HarnessError):
    """A write the harness attempted failed (a read-only folder, a full disk); the old file is
    unchanged. `errno` is the operating system's."""

    def __init__(self, path: Path | str, error: OSError) -> None:
        self.path = Path(path)
        self.errno = error.errno
        hint = _WRITE_HINTS.get(error.errno or 0, "")
        reason = error.strerror or str(error)
        super().__init__(
            one_line(
                f"cannot write {path}: {reason}; nothing was changed (the old file is intact)"
                + (f"; {hint}" if hint else "")
            )
        )


_WRITE_HINTS = {
    errno.ENOSPC: "free some disk space and run it again",
    errno.EDQUOT: "free some of your disk quota and run it again",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "check the folder's permissions",
    errno.EPERM: "check the folder's permissions",
}


class UnsafeName(HarnessError, ValueError):
    """A name cannot be used as a file name inside the harness's folders."""


class SecretLeak(HarnessError):
    """Bytes about to be written hold something key-shaped. The message never quotes it."""

    def __init__(self, target: str, findings: Sequence[Described]) -> None:
        self.target = target
        self.findings = tuple(findings)
        shown = "; ".join(finding.describe() for finding in self.findings[:10])
        more = f"; and {len(self.findings) - 10} more" if len(self.findings) > 10 else ""
        super().__init__(
            f"refusing to write {target}: it would hold {len(self.findings)} secret-looking"
            f" {'string' if len(self.findings) == 1 else 'strings'} ({shown}{more}); nothing was"
            " written. Redact the header (CaptureSession(redaction=Redaction(headers=...))),"
            " keep the secret out of the prompt, or allow a known fake value"
            " (Redaction(allow=...))"
        )


class CaptureError(HarnessError):
    """A request could not be answered from the cassette, or a cassette could not be written."""


class NetworkBlocked(CaptureError):
    """A marked test reached a host through a client the capture does not see (issue 23)."""


class CassetteMissing(CaptureError):
    """A request has no recorded exchange (no cassette, or more requests than it holds)."""


class CassetteMismatch(CaptureError):
    """A request differs from the recorded one at its place; `report` says where, and `live` is
    the request that was sent (the capture's `Captured`, when known: the cost delta prices it)."""

    live: Any = None

    def __init__(self, message: str, report: Printable | None = None) -> None:
        self.report = report
        super().__init__(message if report is None else f"{message}\n\n{report.to_text()}")


class CassetteSecretLeak(CaptureError, SecretLeak):
    """A capture session refused to write a cassette holding something key-shaped."""


class CannotPerturb(HarnessError, RuntimeError):
    """A proof could not perturb a source of order the build uses (an event loop whose class
    cannot take the proof's scheduling): failing says so, where passing would prove nothing."""


class HashSeedError(HarnessError, RuntimeError):
    """A `PYTHONHASHSEED` child process failed; the message holds its stderr tail."""


class Drift(HarnessError, AssertionError):
    """Header bytes moved where they must not. The message is the drift report."""

    exit_code: ClassVar[int] = EXIT_DRIFT
