"""The peers: what a suite built from common tools does with the same transcript.

Each peer stores the transcript's requests its own way (written outside any timing) and, when
timed, reads its files and checks every recorded request against what it expects. Each is
handed its expected values for free (built before the clock starts), re-runs no agent, rebuilds
nothing and reads no session log; `Checks` says what each one does check:

- vcrpy YAML + syrupy Amber: what default tooling gives. vcrpy's persister and YAML serializer,
  then each body through syrupy's Amber serializer against its snapshot (Amber sorts keys).
- vcrpy JSON + `json.loads` + `==`: vcrpy's JSON serializer, each body decoded and compared with
  the expected body as dicts (dict equality ignores key order).
- syrupy JSONSnapshotExtension: the JSON cassette, each body through syrupy's JSON serializer
  (which sorts keys) against its snapshot text.
- JSON Lines + msgspec typed header + `==`: one body per line, all decoded by msgspec into a
  typed header struct (the messages are skipped, not decoded), each compared with the expected
  header (struct equality; the schemas inside are dicts, so key order is not seen).
- JSON Lines + raw header bytes: one body per line, each line's bytes up to its messages
  compared with the expected header's bytes, nothing decoded: 25 lines anyone could write, and
  it sees key order (any byte of the header that moves). It checks no message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from syrupy.extensions.amber import AmberDataSerializer
from syrupy.extensions.json import JSONSnapshotExtension
from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import jsonserializer, yamlserializer

from bench.bodies import (
    HEADERS,
    URL,
    encoded_bodies,
    header_fields,
    request_body,
    response_body,
)
from harness.agent import Request
from harness.scenarios._formats import Fixture
from harness.scenarios._pins import Pin


@dataclass(frozen=True)
class Checks:
    """What a contender checks beyond "each request's header equals the expected one"."""

    key_order: bool  # a change of key order alone (which moves cache bytes) fails the check
    messages: bool  # each request's conversation is checked too
    rebuild: bool  # the header is rebuilt from the same inputs and must come out the same
    invariant: bool  # each request is frozen and equals what the session log folds to
    log: bool  # the whole session log is re-derived and compared

    def cells(self) -> list[str]:
        return ["yes" if on else "no" for on in self.__dict__.values()]


OURS = Checks(key_order=True, messages=True, rebuild=True, invariant=True, log=True)
CHECK_COLUMNS = ["key order", "messages", "rebuild", "invariant", "log"]


@dataclass(frozen=True)
class Inputs:
    """One transcript, as the peers receive it."""

    steps: int
    fixture: Fixture
    pin: Pin
    requests: list[Request]  # every dispatched request, in full

    def bodies(self) -> list[dict[str, Any]]:
        return [request_body(r) for r in self.requests]


@dataclass(frozen=True)
class Prepared:
    """A peer's files for one transcript, and the timed run that reads and checks them."""

    file_bytes: int
    run: Callable[[], int]  # returns how many requests it checked
    yaml_cassette: Path | None = None  # a vcrpy YAML cassette, for the fixture-size rows


def _cassette(path: Path, inputs: Inputs, serializer: Any) -> int:
    assert inputs.fixture.answers is not None
    bodies = list(encoded_bodies(inputs.requests))
    requests = [VcrRequest("POST", URL, body.decode(), dict(HEADERS)) for body in bodies]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps(response_body(answer, i))},
        }
        for i, answer in enumerate(inputs.fixture.answers.answers[: len(bodies)])
    ]
    FilesystemPersister.save_cassette(
        path, {"requests": requests, "responses": responses}, serializer
    )
    return path.stat().st_size


def _counted(recorded: Sequence[object], expected: Sequence[object]) -> None:
    if len(recorded) != len(expected):
        raise AssertionError(f"{len(recorded)} recorded requests, {len(expected)} expected")


@dataclass(frozen=True)
class Peer:
    name: str
    checks: Checks
    max_steps: int  # larger transcripts are not run (the files or the time would not fit)
    too_large: str  # why, for the table
    rounds: int  # at most this many timed runs per transcript (the slow ones are steady)
    prepare: Callable[[Inputs, Path], Prepared]


def _amber(inputs: Inputs, folder: Path) -> Prepared:
    cassette = folder / "amber.yaml"
    size = _cassette(cassette, inputs, yamlserializer)
    snapshots = [AmberDataSerializer.serialize(body) for body in inputs.bodies()]

    def run() -> int:
        requests, _ = FilesystemPersister.load_cassette(cassette, yamlserializer)
        _counted(requests, snapshots)
        for index, recorded in enumerate(requests):
            if AmberDataSerializer.serialize(json.loads(recorded.body)) != snapshots[index]:
                raise AssertionError(f"request {index + 1} differs from its snapshot")
        return len(requests)

    return Prepared(size, run, cassette)


def _vcr_json(inputs: Inputs, folder: Path) -> Prepared:
    cassette = folder / "vcr.json"
    size = _cassette(cassette, inputs, jsonserializer)
    expected = inputs.bodies()

    def run() -> int:
        requests, _ = FilesystemPersister.load_cassette(cassette, jsonserializer)
        _counted(requests, expected)
        for index, recorded in enumerate(requests):
            if json.loads(recorded.body) != expected[index]:
                raise AssertionError(f"request {index + 1} differs from the expected body")
        return len(requests)

    return Prepared(size, run)


def _syrupy_json(inputs: Inputs, folder: Path) -> Prepared:
    cassette = folder / "syrupy.json"
    size = _cassette(cassette, inputs, jsonserializer)
    extension = JSONSnapshotExtension()
    snapshots = [extension.serialize(body) for body in inputs.bodies()]
    size += sum(len(text.encode()) for text in snapshots)  # one snapshot file per request

    def run() -> int:
        requests, _ = FilesystemPersister.load_cassette(cassette, jsonserializer)
        _counted(requests, snapshots)
        for index, recorded in enumerate(requests):
            if extension.serialize(json.loads(recorded.body)) != snapshots[index]:
                raise AssertionError(f"request {index + 1} differs from its snapshot")
        return len(requests)

    return Prepared(size, run)


class PeerTool(msgspec.Struct):
    name: str
    description: str
    input_schema: dict[str, Any]


class PeerHeader(msgspec.Struct):
    """The header fields of an Anthropic Messages body; the rest of a body is skipped."""

    model: str
    max_tokens: int
    system: str = ""
    tools: list[PeerTool] = []


def _jsonl_msgspec(inputs: Inputs, folder: Path) -> Prepared:
    path = folder / "requests.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        for body in encoded_bodies(inputs.requests):
            handle.write(body + b"\n")
    expected = msgspec.convert(header_fields(inputs.requests[0], inputs.pin), PeerHeader)
    decoder = msgspec.json.Decoder(PeerHeader)
    count = len(inputs.requests)

    def run() -> int:
        headers = decoder.decode_lines(path.read_bytes())
        if len(headers) != count:
            raise AssertionError(f"{len(headers)} recorded requests, {count} expected")
        for index, header in enumerate(headers):
            if header != expected:
                raise AssertionError(f"request {index + 1}'s header differs from the expected")
        return len(headers)

    return Prepared(path.stat().st_size, run)


def _raw_bytes(inputs: Inputs, folder: Path) -> Prepared:
    path = folder / "requests.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        for body in encoded_bodies(inputs.requests):
            handle.write(body + b"\n")
    head = next(encoded_bodies(inputs.requests[:1]))
    expected = head[: head.index(b',"messages":') + len(b',"messages":')]
    count = len(inputs.requests)

    def run() -> int:
        lines = path.read_bytes().splitlines()
        if len(lines) != count:
            raise AssertionError(f"{len(lines)} recorded requests, {count} expected")
        for index, line in enumerate(lines):
            if not line.startswith(expected):
                raise AssertionError(f"request {index + 1}'s header bytes differ")
        return len(lines)

    return Prepared(path.stat().st_size, run)


_WHOLE_BODY = Checks(key_order=False, messages=True, rebuild=False, invariant=False, log=False)
_SLOW = "not run: its per-request pass over every body would take minutes"

PEERS: tuple[Peer, ...] = (
    Peer("vcrpy YAML + syrupy Amber", _WHOLE_BODY, 100, _SLOW, 3, _amber),
    Peer("vcrpy JSON + json.loads + ==", _WHOLE_BODY, 100, "not run: too large", 5, _vcr_json),
    Peer("syrupy JSONSnapshotExtension", _WHOLE_BODY, 100, _SLOW, 3, _syrupy_json),
    Peer(
        "JSON Lines + msgspec typed header + ==",
        Checks(key_order=False, messages=False, rebuild=False, invariant=False, log=False),
        1_000,
        "not run: too large",
        99,
        _jsonl_msgspec,
    ),
    Peer(
        "JSON Lines + raw header bytes",
        Checks(key_order=True, messages=False, rebuild=False, invariant=False, log=False),
        1_000,
        "not run: too large",
        99,
        _raw_bytes,
    ),
)
