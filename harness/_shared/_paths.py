"""Every path rule: where recordings, cassettes and pins live, and which names become file names.

Where things live (one place, for the CLI, the plugin, capture and the unused-recordings rule):
- a scenario: `<fixtures>/<name>/` with `scenario.json` and its recording (`log.json`,
  `requests.json`, `answers.json`);
- its header pins: `<fixtures>/../snapshots/headers/<class>/` (`system-prompt.expected.md`,
  `tool-schemas.expected.json`), found from the scenario folder's real place;
- a captured test's cassette: `<fixtures>/cassettes/<test file path>/<test name>.json`;
- without a PATH, the CLI reads `./fixtures`.

A name must not escape the folder it is joined to (`../`, absolute paths, NUL, drive letters), must
not be a reserved Windows device name, and must stay short enough for every filesystem. Unsafe
names are rejected with a message rather than silently rewritten, except through
`file_name_for`, which maps any test id to a distinct safe name (a hash keeps collisions apart).

Names that differ only in case (`Foo`, `foo`) are one folder on macOS and Windows: a write next to
such a twin is refused (`refuse_case_twin`), on every platform, so a repository never holds two
scenarios that a case-insensitive checkout would merge.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath
from typing import Final

from harness._shared._errors import FixtureError, UnsafeName

FIXTURES: Final = "fixtures"  # the project's recordings, relative to its root
CASSETTES: Final = "cassettes"  # captured tests' cassettes, inside the fixtures folder
SCENARIO_FILE: Final = "scenario.json"
LOG_FILE: Final = "log.json"
REQUESTS_FILE: Final = "requests.json"
ANSWERS_FILE: Final = "answers.json"
RECORDING_FILES: Final = (LOG_FILE, REQUESTS_FILE, ANSWERS_FILE)
SCENARIO_FILES: Final = (SCENARIO_FILE, *RECORDING_FILES)
SYSTEM_PIN: Final = "system-prompt.expected.md"
TOOLS_PIN: Final = "tool-schemas.expected.json"


def cassettes_folder(fixtures: Path) -> Path:
    return fixtures / CASSETTES


def pins_root(fixture_folder: Path) -> Path:
    """Pins live beside the fixtures: `<project>/snapshots/headers/` for `<project>/fixtures/x/`."""
    return fixture_folder.resolve().parent.parent / "snapshots" / "headers"


def pin_folder(root: Path, name: str) -> Path:
    return root / safe_component(name)


def cassette_path_for(root: Path, nodeid: str) -> Path:
    """`root/<test file path without .py>/<test name>.json` for a pytest node id.

    Parts that are not safe file names (parametrize ids with brackets, say) become a safe slug
    with a short hash (`file_name_for`), so two tests never share a cassette.
    """
    file_part, _, test_part = nodeid.partition("::")
    folder = Path(root)
    pure = PurePosixPath(file_part.replace("\\", "/"))
    parts = [*pure.parent.parts, pure.stem] if pure.suffix == ".py" else list(pure.parts)
    for part in parts:
        if part in ("", ".", "/"):
            continue
        folder = folder / _cassette_part(part)
    name = test_part.replace("::", ".") or "module"
    return folder / f"{_cassette_part(name)}.json"


_HASHED = re.compile(r".+-[0-9a-f]{10}")


def _cassette_part(name: str) -> str:
    # A safe name that looks like a hashed one goes through the hash too, so a folder literally
    # named like another's hashed name cannot share its cassettes. A name holding a secret (a
    # parametrize id) does too: `file_name_for` keeps only a redacted slug and a short hash.
    from harness._shared._secrets import redact_text  # the scan loads with the first cassette named

    if _HASHED.fullmatch(name) or redact_text(name) != name:
        return file_name_for(name)
    try:
        return safe_component(name)
    except UnsafeName:
        return file_name_for(name)


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_WINDOWS_RESERVED = {
    "CON", "PRN", "AUX", "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}  # fmt: skip


def safe_component(name: str) -> str:
    """`name` itself when it is a safe single path component; UnsafeName otherwise."""
    if not _SAFE.fullmatch(name) or name.endswith(".") or ".." in name:
        raise UnsafeName(
            f"{name!r} cannot be used as a file name: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..'"
        )
    if name.split(".")[0].upper() in _WINDOWS_RESERVED:
        raise UnsafeName(f"{name!r} is a reserved device name on Windows; choose another name")
    return name


def file_name_for(text: str, max_length: int = 80) -> str:
    """A safe, distinct file name for any text (a pytest node id, say).

    A secret in the text (a key in a parametrize id) never reaches the name: the slug is made
    from the redacted text, and only a 10-digit hash of the whole text keeps names distinct.
    """
    from harness._shared._secrets import redact_text

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", redact_text(text)).strip("._-") or "unnamed"
    slug = slug.replace("..", "_")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    head = slug[: max_length - 11]
    if head.split(".")[0].upper() in _WINDOWS_RESERVED:
        head = "x" + head[: max_length - 12]
    return f"{head}-{digest}"


def case_twin(path: Path, levels: int = 2) -> tuple[Path, Path] | None:
    """The first of `path`'s last `levels` components with a sibling whose name differs from it
    only in case, as (component, sibling); None when there is none.

    Two levels cover what the harness names: a scenario or pin folder and the file in it.
    """
    current = Path(path)
    for _ in range(levels):
        parent, name = current.parent, current.name
        if not name or parent == current:
            break
        try:
            siblings = os.listdir(parent)
        except OSError:  # no such folder yet (nothing to collide with), or unreadable
            siblings = []
        folded = name.casefold()
        for sibling in siblings:
            if sibling != name and sibling.casefold() == folded:
                return current, parent / sibling
        current = parent
    return None


def refuse_case_twin(path: Path) -> None:
    """UnsafeName when writing `path` would put a name beside one that differs only in case."""
    twin = case_twin(path)
    if twin is not None:
        mine, theirs = twin
        raise UnsafeName(
            f"refusing to write {path}: {mine.name!r} differs from the existing {theirs} only in "
            "case, and the two are one folder on macOS and Windows; rename one of them"
        )


def refuse_linked_folder(folder: Path) -> None:
    """UnsafeName when `folder` is a link (or reached through one) to somewhere else.

    A recording writes beside its folder: its pin goes to `../../snapshots/headers/`, found from
    the folder's real place. A linked scenario folder would put that pin beside the link's
    target, outside the project; the harness refuses rather than follow it.
    """
    folder = Path(folder)
    real = folder.resolve()
    if folder.is_symlink() or real != folder.parent.resolve() / folder.name:
        raise UnsafeName(
            f"refusing to write into {folder}: it is a link to {real}, and its recording and pin"
            " would be written there, outside this folder; replace the link with the folder"
            " itself"
        )


def refuse_link_out(path: Path, project: Path) -> None:
    """UnsafeName when writing `path` would go through a link that leaves `project`.

    Each part of `path` below `project` that is a link (a `fixtures/cassettes` linked to a shared
    folder elsewhere, say) must resolve inside `project`: a recording written through it would
    land outside the repository, where no review sees it. A link that stays inside is followed.
    A `path` outside `project` is not checked (the fixtures folder was configured there).
    """
    project = Path(os.path.abspath(project))
    try:
        parts = Path(os.path.abspath(path)).relative_to(project).parts
    except ValueError:
        return
    real_project = project.resolve()
    current = project
    for part in parts:
        current = current / part
        if not current.is_symlink():
            continue
        target = current.resolve()
        if target != real_project and real_project not in target.parents:
            raise UnsafeName(
                f"refusing to write {path}: {current} is a link to {target}, outside the project"
                f" ({project}); replace the link with the folder itself"
            )


def project_fixtures() -> Path:
    """`fixtures/` in the working directory: a command given no PATH works on the project's own
    recordings, never on the scenarios shipped with the harness (only `harness demo` reads those:
    a gate that found nothing of the project's must not pass on the demo's)."""
    local = Path(FIXTURES)
    if not local.is_dir():
        raise FixtureError(
            local.absolute(),
            "does not exist: without a PATH the harness reads the project's fixtures/ here",
            "run it in the project's folder, or pass the recordings' folder; harness demo runs "
            "the shipped scenarios",
        )
    return local


# -- scenario folders (found without reading them: `harness check` on cassettes alone imports no
# runtime) -------------------------------------------------------------------------------------

# Folders under fixtures/ that hold other recordings, not scenarios.
_NOT_SCENARIOS = frozenset({CASSETTES})


def find_fixtures(paths: list[Path]) -> list[Path]:
    """Scenario folders under the given paths (a folder holding scenario.json, or its parent).

    Nothing is skipped silently: a folder of the parent that cannot be listed, or that holds a
    recording but no scenario.json (renamed or deleted), is a FixtureError naming it.
    """
    found: list[Path] = []
    for path in paths:
        try:
            if (path / SCENARIO_FILE).exists():
                found.append(path)
            elif path.is_dir():
                found.extend(_scenario_folders(path))
            elif path.name == SCENARIO_FILE:
                found.append(path.parent)
            else:
                raise FixtureError(path, "is not a scenario folder or a folder of them")
        except OSError as error:
            raise FixtureError(path, f"cannot be read: {error.strerror}") from None
    return found


def _scenario_folders(root: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError as error:
        raise FixtureError(root, f"cannot be listed: {error.strerror}") from None
    found = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name in _NOT_SCENARIOS or not entry.is_dir():
            continue
        folder = Path(root, entry.name)
        try:
            names = set(os.listdir(folder))
        except OSError as error:
            raise FixtureError(
                folder, f"cannot be listed: {error.strerror}", "fix its permissions"
            ) from None
        if SCENARIO_FILE in names:
            found.append(folder)
        elif names & set(RECORDING_FILES):
            held = ", ".join(sorted(names & set(RECORDING_FILES)))
            raise FixtureError(
                folder,
                f"holds {held} but no {SCENARIO_FILE}",
                "was it renamed or deleted? restore it from git, or remove the folder",
            )
    return found
