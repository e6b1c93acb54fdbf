"""What users run, as they run it: `harness` commands as processes, start-up included.

The in-process contest (`bench.__main__.contest`) times a replay; a user times a command. This
module runs, each in a fresh interpreter, side by side and interleaved round by round:

- start-up: `harness --help` and `harness lint` on a project with one small cassette, against
  `python -c "import msgspec"` (the least a Python tool that reads JSON starts with);
- a cassette as `header_capture` writes it (the transcript's requests sent through a capture
  session to a stand-in, format 3): `harness check` as users run it (its default 8 shuffled
  orders; the folder holds no scenario, so they cost nothing here), `harness check --shuffle
  0`, `harness lint` and `harness cost`, against the decode-and-hash floor: a process that reads
  the cassette, decodes it with msgspec and hashes every stored request;
- the scenario folder: `harness check` (8 shuffled orders of the registrations, each run on the
  recorded answers) and `harness check --shuffle 0`, against the same floor over its files.

Each process is billed its CPU time (user + system, from `getrusage` of the children): on a
shared machine wall time mostly measures the neighbours. The ratio is the median process over
the median floor; its spread is the lowest and highest of the per-round ratios. A command that
exits other than as expected is an error, never a time.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from bench.bodies import URL, encoded_bodies
from harness.agent import Request
from harness.capture import CaptureSession

ROOT = Path(__file__).resolve().parent.parent
# the console script the install made, beside this interpreter (what a user's shell runs)
HARNESS = [str(Path(sys.executable).with_name("harness"))]
IMPORT_FLOOR = [sys.executable, "-c", "import msgspec"]
_FLOOR = """
import hashlib, sys
from pathlib import Path
import msgspec
encode = msgspec.json.encode
for path in sorted(Path(sys.argv[1]).rglob("*.json*")):
    data = path.read_bytes()
    hashlib.sha256(data).digest()
    if path.suffix == ".json":
        found = msgspec.json.decode(data)
        exchanges = found.get("exchanges", []) if isinstance(found, dict) else []
        for exchange in exchanges:
            hashlib.sha256(encode(exchange["request"])).digest()
    else:
        msgspec.json.decode_lines(data)
"""


@dataclass
class Command:
    """One process to time: its arguments, the exit codes that mean it ran, its CPU times."""

    name: str
    argv: list[str]
    cwd: Path
    codes: tuple[int, ...] = (0,)
    times: list[float] = field(default_factory=list)

    def run(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(self.argv, cwd=self.cwd, env=_env(), capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in self.codes:
            output = (done.stdout + done.stderr).decode(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} exited {done.returncode}:\n{output}")
        self.times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass(frozen=True)
class ProcessFigure:
    """One command against its floor, both as processes, interleaved."""

    what: str  # the command as a user types it
    kind: str  # "start-up", "cassette" or "scenario"
    on: str  # what it ran on, in words
    seconds: float  # median CPU seconds of the process
    floor: str
    floor_s: float
    runs: int
    spread: tuple[float, float]  # the per-round ratio's lowest and highest

    @property
    def ratio(self) -> float:
        return self.seconds / self.floor_s


def _env() -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # else every run recompiles what it imports
    env.pop("CI", None)  # a CI variable changes nothing check does, but keep runs alike
    return env


def record_cassette(requests: Sequence[Request], path: Path) -> Path:
    """The transcript's requests sent through a capture session to a stand-in, written as the
    `header_capture` fixture writes its cassette."""
    answer = {"id": "msg_1", "type": "message", "content": [], "usage": {"input_tokens": 10}}
    upstream = httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer))
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream)
    client = session.httpx2_client()
    for body in encoded_bodies(list(requests)):
        client.post(URL, content=body, headers={"content-type": "application/json"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(session.finish().files[0][1])
    return path


def _contest(commands: list[Command], rounds: int) -> None:
    for number in range(rounds):
        shift = number % len(commands)
        for command in [*commands[shift:], *commands[:shift]]:
            command.run()


def _figures(floor: Command, others: list[Command], kind: str, on: str) -> list[ProcessFigure]:
    found = []
    for command in others:
        ratios = [a / b for a, b in zip(command.times, floor.times, strict=True) if b > 0]
        found.append(
            ProcessFigure(
                command.name,
                kind,
                on,
                command.median,
                floor.name,
                floor.median,
                len(command.times),
                (min(ratios), max(ratios)),
            )
        )
    return found


def measure(
    requests: Sequence[Request], scenario: Path, root: Path, rounds: int
) -> list[ProcessFigure]:
    """Every row: start-up, the cassette of `requests`, the scenario folder `scenario`."""
    project = root / "processes"
    cassettes = project / "fixtures" / "cassettes"
    record_cassette(requests, cassettes / "test_conversation.json")
    small = root / "startup-project"
    record_cassette(requests[:1], small / "fixtures" / "cassettes" / "test_one.json")
    on = f"a {len(requests):,}-request conversation recorded by a capture session"

    import_floor = Command('python -c "import msgspec"', IMPORT_FLOOR, small)
    started = [
        Command("harness --help", [*HARNESS, "--help"], small),
        Command("harness lint", [*HARNESS, "lint"], small),
    ]
    floor = Command("decode-and-hash floor", [sys.executable, "-c", _FLOOR, "fixtures"], project)
    on_cassette = [
        Command("harness check", [*HARNESS, "check", "fixtures"], project),
        Command(
            "harness check --shuffle 0", [*HARNESS, "check", "--shuffle", "0", "fixtures"], project
        ),
        Command("harness lint", [*HARNESS, "lint", "fixtures"], project),
        Command("harness cost", [*HARNESS, "cost", "fixtures"], project),
    ]
    where = scenario.parent.parent
    name = str(scenario.relative_to(where))
    scenario_floor = Command("decode-and-hash floor", [sys.executable, "-c", _FLOOR, name], where)
    on_scenario = [
        Command("harness check", [*HARNESS, "check", name], where),
        Command("harness check --shuffle 0", [*HARNESS, "check", "--shuffle", "0", name], where),
    ]
    for command in (import_floor, *started, floor, *on_cassette, scenario_floor, *on_scenario):
        command.run()  # warm the bytecode caches; this run is not billed
        command.times.clear()
    _contest([import_floor, *started], rounds)
    _contest([floor, *on_cassette], rounds)
    _contest([scenario_floor, *on_scenario], max(rounds // 2, 1))
    steps = json.loads((scenario / "requests.json").read_bytes()).get("requests", [])
    return [
        *_figures(import_floor, started, "start-up", "a project with one small cassette"),
        *_figures(floor, on_cassette, "cassette", on),
        *_figures(
            scenario_floor, on_scenario, "scenario", f"the {len(steps):,}-step scenario folder"
        ),
    ]
