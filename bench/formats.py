"""Fixture size and load time: our msgspec JSON files against the vcrpy YAML cassette.

Ours: the four fixture files plus the header pin (the one place the header is stored), loaded by
`load_fixture` (strict typed decoding and the secret scan); the same files decoded alone by
msgspec, and parsed by the standard library's `json` (untyped, for scale). The cassette: the
peer's YAML, loaded by vcrpy's persister.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vcr.persisters.filesystem import FilesystemPersister
from vcr.serializers import yamlserializer

from bench.timing import median_of
from harness._shared._files import decode
from harness._shared._paths import (
    ANSWERS_FILE,
    LOG_FILE,
    REQUESTS_FILE,
    SCENARIO_FILE,
    SYSTEM_PIN,
    TOOLS_PIN,
    pins_root,
)
from harness._shared._secrets import scan_secrets
from harness.scenarios._formats import AnswersFile, LogFile, RequestsFile, Scenario, load_fixture

KINDS = {
    SCENARIO_FILE: Scenario,
    LOG_FILE: LogFile,
    REQUESTS_FILE: RequestsFile,
    ANSWERS_FILE: AnswersFile,
}


@dataclass(frozen=True)
class FormatFigure:
    steps: int
    fixture_bytes: int  # the four files and the pin
    load_s: float  # load_fixture: typed decode + secret scan
    decode_s: float  # msgspec typed decode of the four files alone
    scan_s: float  # the secret scan of the four files alone (load_fixture runs it on each)
    stdlib_s: float  # json.loads of the same four files
    cassette_bytes: int
    cassette_load_s: float


def fixture_files(folder: Path, pin: str) -> list[Path]:
    pins = pins_root(folder) / pin
    return [folder / name for name in KINDS] + [pins / SYSTEM_PIN, pins / TOOLS_PIN]


def measure(
    folder: Path, pin: str, steps: int, cassette: Path, repeats: int, cassette_repeats: int
) -> FormatFigure:
    data = {name: (folder / name).read_bytes() for name in KINDS}

    def decode_all() -> None:
        for name, kind in KINDS.items():
            decode(data[name], kind, folder / name)

    def scan_all() -> None:
        for raw in data.values():
            scan_secrets(raw)

    def stdlib_all() -> None:
        for raw in data.values():
            json.loads(raw)

    return FormatFigure(
        steps=steps,
        fixture_bytes=sum(path.stat().st_size for path in fixture_files(folder, pin)),
        load_s=median_of(lambda: load_fixture(folder), repeats),
        decode_s=median_of(decode_all, repeats),
        scan_s=median_of(scan_all, repeats),
        stdlib_s=median_of(stdlib_all, repeats),
        cassette_bytes=cassette.stat().st_size,
        cassette_load_s=median_of(
            lambda: FilesystemPersister.load_cassette(cassette, yamlserializer), cassette_repeats
        ),
    )
