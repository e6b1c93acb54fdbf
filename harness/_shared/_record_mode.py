"""`RecordMode`: what a run may do with recordings, the one enum every part uses.

`check` replays and compares and never writes; `record` records anew; `update` rewrites what
changed; `update-new-only` records only what is missing. The writing modes are refused under CI
(`harness._shared._ci`). The capture session, the pytest plugin (`--harness-mode`, `harness_mode`)
and the
CLI all take a `RecordMode`; a string from a user goes through `RecordMode.parse`, whose error
lists the modes, as vcrpy's `RecordMode` does.

It is a `StrEnum` (a `str` and an `Enum`): a member equals its value and formats as it, so a
mode prints as the word a user typed.
"""

from __future__ import annotations

from enum import StrEnum

from harness._shared._errors import UsageError

__all__ = ["RecordMode"]


class RecordMode(StrEnum):
    CHECK = "check"
    RECORD = "record"
    UPDATE = "update"
    UPDATE_NEW_ONLY = "update-new-only"

    @property
    def writes(self) -> bool:
        """Whether a run in this mode may write recordings (never under CI)."""
        return self is not RecordMode.CHECK

    @classmethod
    def parse(cls, value: RecordMode | str, *, what: str = "mode") -> RecordMode:
        """The mode named `value`; a `UsageError` listing the valid ones otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise UsageError(f"unknown {what} {value!r}; expected one of {cls.listed()}") from None

    @classmethod
    def listed(cls) -> str:
        return ", ".join(mode.value for mode in cls)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(mode.value for mode in cls)
