"""Where a project's cassettes are, and what a recorded request looks like as a JSON value.

`find_cassettes` finds every cassette under some paths (the rules for a cassettes folder and for
a `.json` file elsewhere are in its doc); `request_of` reads a recorded request given as a value
(`{"method", "url", "json"}`). Both serve the audit (`harness check`) and the readers of
cassettes that judge no prefix chain (`harness lint`, `harness cost`): this module imports
neither the gate nor the drift report.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import msgspec

from harness._shared._errors import FixtureError
from harness._shared._files import read_checked
from harness._shared._paths import CASSETTES, FIXTURES
from harness.capture._cassette import HttpRequest

__all__ = ["find_cassettes", "request_of"]

_KIND: Final = b'"harness/capture"'
_SKIPPED_FOLDERS: Final = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".tox",
        ".pytest_cache",
        "site-packages",
    }
)


def find_cassettes(paths: Iterable[Path]) -> list[Path]:
    """Every cassette at or under `paths`, sorted (hidden and virtualenv folders skipped).

    Under a cassettes folder (`<fixtures>/cassettes`: a folder named `cassettes` that is one of
    `paths`, lies right under one, or lies in a folder named `fixtures`) every file but a hidden
    one (`.gitkeep`, an interrupted write's `.name.XXXX.tmp`) is a cassette: reading it either
    checks it or refuses it in one line, so nothing there is skipped silently (a folder that
    cannot be listed, or a link to a folder, is refused too). Elsewhere, a `.json` file is a
    cassette when its `kind` says so, wherever the key is (`jq -S` sorts it last); vcrpy's and
    pytest-recording's `tests/cassettes/` are left alone.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            if _is_cassette(path) or _in_cassettes_folder(path.parent, path.parent):
                found.add(path)
            continue
        for folder, folders, files in os.walk(path, onerror=_unlistable(path)):
            here = Path(folder)
            strict = _in_cassettes_folder(here, path)
            if strict:
                for name in folders:
                    if (here / name).is_symlink():
                        raise FixtureError(
                            here / name,
                            "is a link to a folder under the cassettes folder",
                            "the harness follows no link there: move the cassettes in",
                        )
            folders[:] = sorted(
                name
                for name in folders
                if name not in _SKIPPED_FOLDERS and not name.startswith(".")
            )
            for name in files:
                candidate = here / name
                hidden = name.startswith(".")
                # under a cassettes folder: checked, or refused in one line; elsewhere by kind
                if (strict and not hidden) or (name.endswith(".json") and _is_cassette(candidate)):
                    found.add(candidate)
    return sorted(found)


def _in_cassettes_folder(folder: Path, root: Path) -> bool:
    """Whether `folder` is (or lies in) the cassettes folder of a fixtures folder."""
    for place in (folder, *folder.parents):
        if place.name == CASSETTES and (
            place == root or place.parent == root or place.parent.name == FIXTURES
        ):
            return True
        if place == root:
            return False
    return False


def _unlistable(root: Path) -> Callable[[OSError], None]:
    def raised(error: OSError) -> None:
        where = Path(error.filename) if error.filename else root
        if _in_cassettes_folder(where, root):
            raise FixtureError(where, f"cannot be listed: {error.strerror}", "fix its permissions")

    return raised


class _Kind(msgspec.Struct):
    kind: Any = msgspec.UNSET


def _is_cassette(path: Path) -> bool:
    """Whether `path` says it is a cassette: its `kind`, wherever the key is; a file that is no
    JSON but names the kind (a cassette cut short) is one too, for the audit to refuse. Only
    regular files are opened (a FIFO would block, a link to a device never ends)."""
    if not path.is_file():
        return False
    try:
        data = read_checked(path)
    except FixtureError:
        return False
    if _KIND not in data:
        return False
    try:
        return bool(msgspec.json.decode(data, type=_Kind).kind == "harness/capture")
    except (msgspec.DecodeError, RecursionError):
        return True  # it names the kind and does not decode: a damaged cassette


_REQUEST_FIELDS: Final = tuple(f.encode_name for f in msgspec.structs.fields(HttpRequest))


def request_of(value: Any) -> HttpRequest | None:
    """A recorded request as a JSON value (`{"method", "url", "json"}`, or `"text"` for a spaced
    body), if `value` is one."""
    if (
        isinstance(value, dict)
        and {"method", "url"} <= set(value)
        and {"json", "text"} & set(value)
    ):
        fields = {key: value[key] for key in _REQUEST_FIELDS if key in value}  # a log's extras
        try:
            return msgspec.convert(fields, HttpRequest)
        except msgspec.ValidationError:
            return None
    return None
