"""Run a build under several `PYTHONHASHSEED` values, one subprocess each.

Inside one process, iterating a `set` of strings (or a dict keyed by hash-ordered data) gives the
same order every time, so permuting registration order in-process cannot see it; a new process
with another hash seed can. The parent sends each child, on stdin, the build's reference
("module:function"), the units (as values or "module:qualified.name" references), its own
`sys.path`, and the answers the first in-process build got (a redacted one-proof cassette).

A child captures exactly as its parent does: when the parent's session intercepts (a test marked
`@pytest.mark.header_capture`), the child installs the same interception on a session made from
the parent's capture settings (`CaptureConfig.portable()`: the hosts it captures, ignores and
allows, the redaction, the matcher's name) and the same network guard, so every client the
capture knows (httpx, httpx2, urllib3 and botocore, `http.client`, aiohttp), made anywhere in the
build, is answered from the recorded answers and never reaches the network; a request the answers
do not hold, or a client the capture does not see, fails the child, and the proof, in one line.
Without interception in the parent, only the clients of `current_session()` are answered, as in
the parent. The child runs the build once in the identity order and writes its requests' cache
views to stdout after a marker line; anything the build prints goes to stderr. No file is
written. The project's modules are compiled from source in the child, never read from
`__pycache__` (`harness.prove._fresh_source`): a cached set constant keeps the order of the
process that compiled it, which made the proof depend on that file rather than on the seed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Final

import msgspec

from harness._shared._errors import CassetteMismatch, HashSeedError
from harness._shared._record_mode import RecordMode
from harness._shared._views import CacheView
from harness.prove._builds import Observed, call_build, observed_of, resolve, unit_name
from harness.prove._fresh_source import fresh_sources

if TYPE_CHECKING:
    from harness.capture._cassette import CaptureFile
    from harness.capture._session import CaptureSession

__all__ = [
    "HashSeedError",
    "build_reference",
    "iter_under_seeds",
    "run_under_seeds",
    "unit_reference",
]

MARKER: Final = "\x1eharness-hashseed-result\x1e"
_BOOT: Final = (
    "import json, sys\n"
    "payload = json.loads(sys.stdin.buffer.read())\n"
    "sys.path[:] = payload['sys_path']\n"
    "from harness.prove._hashseed import _child\n"
    "raise SystemExit(_child(payload))\n"
)


class _Wire(msgspec.Struct):
    view: CacheView
    prefix: CacheView | None = None
    body: bytes | None = None


def build_reference(build: Callable[..., Any] | str) -> str:
    """The "module:function" a subprocess imports to call `build`."""
    if isinstance(build, str):
        resolve(build)  # fail here, in the parent, with the parent's traceback
        return build
    module = getattr(build, "__module__", None)
    qualname = getattr(build, "__qualname__", None)
    problem = ""
    if not isinstance(module, str) or not isinstance(qualname, str):
        problem = "it has no __module__/__qualname__"
    elif module == "__main__":
        problem = "it lives in __main__, which a subprocess cannot import"
    elif "<locals>" in qualname or "<lambda>" in qualname:
        problem = "it is a local function or a lambda"
    else:
        reference = f"{module}:{qualname}"
        try:
            if resolve(reference) is build:
                return reference
            problem = f"{reference} names another object"
        except (ImportError, AttributeError, ValueError) as error:
            problem = f"{reference} cannot be imported ({error})"
    raise TypeError(
        f"hash_seeds needs a build a subprocess can import, and {build!r} is not one: {problem};"
        " define it at module level or pass 'module:function'"
    )


def unit_reference(unit: object) -> dict[str, Any]:
    """How a child rebuilds `unit`: its JSON value, or a "module:qualified.name" reference."""
    if unit is None or isinstance(unit, str | int | float | bool):
        return {"value": unit}
    module = getattr(unit, "__module__", None)
    qualname = getattr(unit, "__qualname__", None)
    if (
        isinstance(module, str)
        and isinstance(qualname, str)
        and module != "__main__"
        and "<" not in qualname
    ):
        reference = f"{module}:{qualname}"
        try:
            if resolve(reference) is unit:
                return {"ref": reference}
        except (ImportError, AttributeError, ValueError):
            pass
    raise TypeError(
        f"hash_seeds: unit {unit_name(unit)!r} cannot be rebuilt in a subprocess; pass names"
        " (strings), numbers, or module-level functions and classes as units"
    )


def _unit(reference: dict[str, Any]) -> Any:
    return resolve(reference["ref"]) if "ref" in reference else reference["value"]


def run_under_seeds(
    build: Callable[..., Any] | str,
    units: Sequence[Any] | None,
    *,
    seeds: Sequence[int],
    reference: CaptureFile | None = None,
    capture: CaptureSession | None = None,
    timeout: float = 120.0,
) -> list[list[Observed]]:
    """The requests `build(units)` produced in one fresh process per hash seed, in seed order."""
    return [
        observed
        for _, observed in iter_under_seeds(
            build, units, seeds=seeds, reference=reference, capture=capture, timeout=timeout
        )
    ]


def iter_under_seeds(
    build: Callable[..., Any] | str,
    units: Sequence[Any] | None,
    *,
    seeds: Sequence[int],
    reference: CaptureFile | None = None,
    capture: CaptureSession | None = None,
    timeout: float = 120.0,
) -> Generator[tuple[int, list[Observed]], None, None]:
    """`(seed, requests)` per hash seed, in seed order, as the subprocesses finish.

    `capture`: the parent's session; when it intercepts, every child intercepts the same way.
    The children run in parallel (up to one per CPU); a caller that stops early (a drift found
    between the first two seeds) cancels the children that have not started.
    """
    from harness._shared._files import encode

    payload = {
        "build": build_reference(build),
        "units": None if units is None else [unit_reference(unit) for unit in units],
        "sys_path": [entry for entry in sys.path if isinstance(entry, str)],
        "reference": encode(reference).decode("utf-8") if reference is not None else None,
        "capture": _capture_of(capture),
    }
    data = msgspec.json.encode(payload)

    def run(seed: int) -> subprocess.CompletedProcess[bytes] | None:
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        try:
            return subprocess.run(
                [sys.executable, "-c", _BOOT],
                input=data,
                capture_output=True,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None

    pool = ThreadPoolExecutor(max_workers=max(1, min(len(seeds), os.cpu_count() or 1)))
    try:
        futures = [pool.submit(run, seed) for seed in seeds]
        for seed, future in zip(seeds, futures, strict=True):
            yield seed, _result(seed, future.result(), timeout)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _capture_of(session: CaptureSession | None) -> dict[str, Any] | None:
    """What a child needs to capture as `session` does now: None when it does not intercept."""
    from harness.capture._intercept import intercepts

    if session is None or not intercepts(session):
        return None
    return {"config": session.config.portable(), "test": session.test}


def _result(
    seed: int, child: subprocess.CompletedProcess[bytes] | None, timeout: float
) -> list[Observed]:
    if child is None:
        raise HashSeedError(f"PYTHONHASHSEED={seed}: the build took over {timeout:g} s")
    text = child.stdout.decode("utf-8", "replace")
    if child.returncode != 0 or MARKER not in text:
        tail = child.stderr.decode("utf-8", "replace").strip().splitlines()[-15:]
        raise HashSeedError(
            f"PYTHONHASHSEED={seed}: the build failed in its subprocess (exit"
            f" {child.returncode}):\n" + "\n".join(tail)
        )
    wire = msgspec.json.decode(text.rsplit(MARKER, 1)[1].strip(), type=list[_Wire])
    return [Observed.of_view(item.view, item.prefix, item.body) for item in wire]


def _child(payload: dict[str, Any]) -> int:
    """The subprocess side: run the build once, print the views after MARKER."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the build's own prints must not corrupt the result
    fresh_sources()  # the seed alone decides the project's constant sets, not `__pycache__`
    try:
        from harness._shared._ci import detect_ci
        from harness._shared._files import decode
        from harness.capture._cassette import CaptureFile
        from harness.capture._config import CaptureConfig
        from harness.capture._guard import guarding
        from harness.capture._session import CaptureSession

        build = resolve(payload["build"])
        references = payload["units"]
        units = None if references is None else [_unit(reference) for reference in references]
        args = () if units is None else (units,)
        capture = payload.get("capture")
        if payload.get("reference") or capture:
            data = str(payload.get("reference") or "").encode("utf-8")
            recorded = decode(data, CaptureFile, "<reference answers>") if data else CaptureFile()
            config = CaptureConfig.of(capture["config"] if capture else None)
            session = CaptureSession(mode=RecordMode.CHECK, recorded=recorded, config=config)
            session.test = capture.get("test") if capture else None
            session.record_hint = (
                "the hash-seed runs are answered only with the first in-process build's answers"
            )
            proof = session.proving([unit_name(unit) for unit in units or ()])
            with ExitStack() as stack:
                if capture:
                    stack.enter_context(session.intercept())
                    stack.enter_context(guarding(session, config, ci=detect_ci() is not None))
                with proof.build(0) as sent:
                    result = call_build(build, *args)
            # swallowed by the build: a blocked client, a missing answer (a request that differs
            # from the first build's is the drift the parent judges, not an error here)
            errors = [e for e in session.errors if not isinstance(e, CassetteMismatch)]
            if errors:
                raise HashSeedError(str(errors[0]))
            observed = observed_of(result, list(sent))
        else:
            observed = observed_of(call_build(build, *args), None)
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.stdout = real_stdout
    wire = [_Wire(item.view, item.prefix, item.body) for item in observed]
    real_stdout.write(MARKER + msgspec.json.encode(wire, enc_hook=repr).decode("utf-8") + "\n")
    real_stdout.flush()
    return 0
