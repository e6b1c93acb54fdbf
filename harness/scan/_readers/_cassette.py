"""The harness's own cassettes (`kind: harness/capture`): a test's exchanges are one session,
each `prove_stable` call's recorded build another, in the order recorded (with format 2's times
when they are there). Evidence `exact`: a cassette keeps the bytes the client sent.

The cassette is read as `harness lint` reads it (`harness.rules._inputs`): strictly, so a
cassette that does not decode is one bad record, named.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from harness._shared._errors import HarnessError
from harness.capture._cassette import load_cassette
from harness.rules._inputs import requests_of_exchanges
from harness.scan._readers._base import BadRecord, Reader, Unit, response_counters
from harness.scan._record import TraceRecord

__all__ = ["CassetteReader"]


class CassetteReader(Reader):
    name: ClassVar[str] = "cassette"
    describe: ClassVar[str] = "the harness's cassettes (kind harness/capture)"

    def claims(self, value: Any) -> bool:
        return isinstance(value, Mapping) and value.get("kind") == "harness/capture"

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        path = Path(unit.where.rsplit(":", 1)[0] if unit.offset >= 0 else unit.where)
        try:
            capture = load_cassette(path)
        except HarnessError as error:
            raise BadRecord(str(error)) from None
        started = getattr(capture, "started", None)
        groups = [("", capture.exchanges)]
        groups += [(f"#proof{n}", p.exchanges) for n, p in enumerate(capture.proofs, start=1)]
        for suffix, exchanges in groups:
            for request in requests_of_exchanges(exchanges, started):
                provider, found = response_counters(request.body, request.url, request.response)
                timing = request.time
                model = request.body.get("model")
                yield TraceRecord(
                    source=f"{path}#{request.index + 1}{suffix}",
                    format=self.name,
                    ordinal=0,
                    session=f"{path}{suffix}",
                    time=getattr(timing, "start", None),
                    url=request.url,
                    body=dict(request.body),
                    evidence="exact",
                    provider=provider,
                    model=model if isinstance(model, str) else None,
                    counters=found,
                    view={"headers": dict(request.headers), "body": request.body},
                )
