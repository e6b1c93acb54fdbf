"""What the CLI reads in a cassette: its format, its redaction, its prefix chain, a summary.

`harness check PATH` finds every cassette under PATH (`capture._found.find_cassettes`) and audits it
(`audit_cassette`): it is decoded strictly (a corrupt or foreign file is a `FixtureError`, one
line and exit 2); secret headers and query parameters must read `[redacted]`
and the bytes must hold nothing key-shaped; and each request must extend the cached prefix of
the one it continues, per endpoint, as the plugin's gate checks it at record and replay (a
cassette whose test was marked `moves_header` says so, and its breaks are listed, not failed).
`harness show` prints `summary_lines`: per request the endpoint, provider, model, tools,
conversation length, status and the provider's cache signal, and (`caching`, given by the CLI:
the rules live above this wing) what the request caches under the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from harness._shared._body_text import response_events
from harness._shared._errors import UsageError
from harness._shared._secrets import REDACTED, Redaction
from harness._shared._views import RequestSplit
from harness.capture._captured import Captured, split_exchange
from harness.capture._cassette import (
    CaptureFile,
    Exchange,
    HttpRequest,
    ReadCassette,
    read_cassette,
)
from harness.capture._judged import refuse_bodiless
from harness.capture._prefix import CONVERSATION_BLOCKS, PrefixBreak, PrefixChain, prefix_chain
from harness.drift._tools import diff_tools
from harness.providers import cache_usage

__all__ = [
    "CassetteAudit",
    "audit_cassette",
    "captured_of",
    "summary_lines",
    "whole_requests",
]


@dataclass
class CassetteAudit:
    """One cassette as `harness check` judged it."""

    path: Path
    capture: CaptureFile
    chain: PrefixChain
    problems: list[str] = field(default_factory=list)  # redaction and secrets
    exempt_breaks: list[PrefixBreak] = field(default_factory=list)

    @property
    def breaks(self) -> list[PrefixBreak]:
        return self.chain.breaks

    @property
    def ok(self) -> bool:
        return not self.problems and not self.chain.breaks

    @property
    def stale(self) -> bool:
        """Marked `moves_header`, yet nothing moved."""
        return isinstance(self.capture.moves_header, str) and not self.exempt_breaks

    def status(self) -> str:
        requests = sum(self.chain.seen.values()) + self.chain.unrecognised
        if self.problems or self.chain.breaks:
            found = len(self.problems) + len(self.chain.breaks)
            return f"{found} finding(s) in {requests} requests"
        if self.exempt_breaks:
            return f"ok ({len(self.exempt_breaks)} expected header move(s): moves_header)"
        if self.stale:
            return f"ok ({requests} requests; moves_header is stale: nothing moved)"
        return f"ok ({requests} requests)"


def captured_of(
    exchanges: Sequence[Exchange], splits: Sequence[RequestSplit | None] | None = None
) -> list[Captured]:
    """Recorded exchanges as the requests a session captured (what the gate walks). A body
    stored as JSON is held as its value, shared with the requests before it, never encoded
    again: a long conversation's requests take memory linear in its length. `splits`: each
    exchange's provider split of its JSON body, made already (`split_request` of the body,
    its URL and headers: the rules' `LintRequest.split`), so it is not made twice."""
    return [
        _captured(number, exchange, splits[number - 1] if splits is not None else _UNSPLIT)
        for number, exchange in enumerate(exchanges, start=1)
    ]


_UNSPLIT: Final[Any] = object()


def _captured(number: int, exchange: Exchange, presplit: Any = _UNSPLIT) -> Captured:
    request = exchange.request
    value = request.json
    body = request.body if isinstance(value, msgspec.UnsetType) else b""
    held = () if isinstance(value, msgspec.UnsetType) else (value,)
    made = {} if presplit is _UNSPLIT else {"presplit": presplit}
    split = split_exchange(request.method, request.url, request.headers, body, *held, **made)
    captured = Captured(
        number,
        request.method,
        request.url,
        request.headers,
        body,
        split,
        status=exchange.response.status,
        source="cassette",
    )
    if held:
        captured.hold(value)
    return captured


def audit_cassette(
    path: Path | ReadCassette,
    redaction: Redaction | None = None,
    judged: Sequence[tuple[Sequence[RequestSplit | None], PrefixChain]] | None = None,
) -> CassetteAudit:
    """Read `path` strictly (or take it as read), then check its redaction, secrets and prefix
    chain. `judged`: per conversation (the test's exchanges, then each prove_stable call's),
    the provider split of each exchange's JSON body and the prefix chain judged over them
    (`harness check`'s rules made both): a request is split once, and only a request that broke
    there is judged again, for the audit's own report."""
    path, data, capture = path if isinstance(path, ReadCassette) else read_cassette(path)
    refuse_bodiless(path, capture)  # nothing to judge is no pass
    rules = redaction or Redaction()
    chain = PrefixChain()
    conversations = [capture.exchanges, *(proof.exchanges for proof in capture.proofs)]
    for number, exchanges in enumerate(conversations):
        # each prove_stable call's first build: a conversation of its own
        if judged is None:
            chain.add(prefix_chain(captured_of(exchanges)))
            continue
        splits, earlier = judged[number]
        captured = captured_of(exchanges, splits)
        same = all(c.split is s for c, s in zip(captured, splits, strict=True))
        broke = {item.index for item in (*earlier.breaks, *earlier.warnings)}
        chain.add(prefix_chain(captured, only=broke if same else None))
    audit = CassetteAudit(path, capture, chain)
    audit.problems += _unredacted(capture, rules)
    audit.problems += [f"holds {finding.describe()}" for finding in rules.scan(data)]
    if isinstance(capture.moves_header, str):
        audit.exempt_breaks, chain.breaks = chain.breaks, []
    return audit


def _exchanges(capture: CaptureFile) -> Iterator[tuple[str, Exchange]]:
    for number, exchange in enumerate(capture.exchanges, start=1):
        yield f"exchange {number}", exchange
    for call, proof in enumerate(capture.proofs, start=1):
        for number, exchange in enumerate(proof.exchanges, start=1):
            yield f"prove_stable call {call} exchange {number}", exchange


def _unredacted(capture: CaptureFile, rules: Redaction) -> list[str]:
    problems: list[str] = []
    for where, exchange in _exchanges(capture):
        request, response = exchange.request, exchange.response
        for side, headers in (("request", request.headers), ("response", response.headers)):
            for (name, value), (_, shown) in zip(headers, rules.header_pairs(headers), strict=True):
                if shown == REDACTED and value != REDACTED:
                    problems.append(f"{where}: {side} header {name!r} is not redacted")
        if rules.url(request.url) != request.url:
            problems.append(
                f"{where}: the URL's password, token or a secret query parameter is not redacted"
            )
    return problems


# -- harness show -------------------------------------------------------------------------------


def summary_lines(
    path: Path, capture: CaptureFile, caching: Callable[[Exchange], str] | None = None
) -> list[str]:
    """A cassette in a few lines per request: what `harness show` prints (`caching`: what a
    request caches, in words)."""
    lines = [f"{path}: cassette, {len(capture.exchanges)} exchanges, {len(capture.proofs)} proofs"]
    if isinstance(capture.moves_header, str):
        lines.append(f"  moves_header: {capture.moves_header}")

    def said(exchange: Exchange) -> str:
        text = caching(exchange) if caching is not None else ""
        return f"; {text}" if text else ""

    for number, exchange in enumerate(capture.exchanges, start=1):
        lines.append("  " + _request_line(number, exchange) + said(exchange))
    for call, proof in enumerate(capture.proofs, start=1):
        units = ", ".join(proof.units) or "(none)"
        lines.append(f"  prove_stable call {call}: units {units}")
        lines += [
            "    " + _request_line(number, exchange) + said(exchange)
            for number, exchange in enumerate(proof.exchanges, start=1)
        ]
    chain = prefix_chain(captured_of(capture.exchanges))
    lines.append("  " + chain.coverage())
    return lines


def whole_requests(capture: CaptureFile, wanted: Sequence[str] = ()) -> list[str]:
    """Whole requests as they were sent (what `harness show --requests` prints): a line naming
    the exchange, its method and URL, then its headers and its body (JSON pretty, in wire
    order; text as it is). `wanted` picks exchanges by number (`3`, or `2.1` for prove_stable
    call 2's first); empty, every one. A number the cassette does not hold is a `UsageError`."""
    named = dict(_numbered(capture))
    unknown = [spec for spec in wanted if spec not in named]
    if unknown:
        raise UsageError(
            f"--request {unknown[0]}: the cassette holds exchanges {_range(list(named))}"
            " (N, or C.N for prove_stable call C's exchange N)"
        )
    lines: list[str] = []
    for spec, exchange in named.items():
        if wanted and spec not in wanted:
            continue
        request = exchange.request
        where = f"exchange {spec}" if "." not in spec else f"prove_stable call exchange {spec}"
        lines.append(f"{where}: {request.method} {request.url}")
        lines += [f"  {name}: {value}" for name, value in request.headers]
        lines.append(_body_text(request))
    return lines


def _numbered(capture: CaptureFile) -> Iterator[tuple[str, Exchange]]:
    for number, exchange in enumerate(capture.exchanges, start=1):
        yield str(number), exchange
    for call, proof in enumerate(capture.proofs, start=1):
        for number, exchange in enumerate(proof.exchanges, start=1):
            yield f"{call}.{number}", exchange


def _range(specs: list[str]) -> str:
    if not specs:
        return "none"
    return specs[0] if len(specs) == 1 else f"{specs[0]} to {specs[-1]}"


def _body_text(request: HttpRequest) -> str:
    if not isinstance(request.json, msgspec.UnsetType):
        return msgspec.json.format(msgspec.json.encode(request.json), indent=2).decode()
    if isinstance(request.text, str):
        return request.text
    if isinstance(request.base64, str):
        return f"({len(request.body):,} bytes that are not UTF-8, stored as base64)"
    return "(no body)"


def _request_line(number: int, exchange: Exchange) -> str:
    request = exchange.request
    captured = captured_of([exchange])[0]
    head = (
        f"{number}. {request.method} {captured.host}{captured.path} -> {exchange.response.status}"
    )
    split = captured.split
    if split is None:
        return f"{head} (no provider)"
    view = split.view
    model = next((view.settings[k] for k in ("model", "modelId") if k in view.settings), None)
    parts = [split.provider] + ([str(model)] if model is not None else [])
    tools = diff_tools(view.blocks.get("tools", []), []).names_a
    if tools:
        shown = ", ".join(tools[:6]) + (f" and {len(tools) - 6} more" if len(tools) > 6 else "")
        parts.append(f"tools {shown}")
    conversation = next((view.blocks[n] for n in CONVERSATION_BLOCKS if n in view.blocks), None)
    if isinstance(conversation, list):
        parts.append(f"{len(conversation)} messages")
    parts.append(f"prefix: {split.rule}")
    usage = _usage(split.provider, exchange)
    if usage:
        parts.append(usage)
    return f"{head}: " + "; ".join(parts)


def _usage(provider: str, exchange: Exchange) -> str:
    """The response's cache signal: tokens read from and written to the cache, a miss reason."""
    found = None
    for value in _response_values(exchange):
        for candidate in (value, _member(value, "message"), _member(value, "response")):
            usage = cache_usage(provider, candidate) if isinstance(candidate, dict) else None
            if usage is not None and (usage.read_tokens or usage.written_tokens or found is None):
                found = usage
    if found is None:
        return ""
    text = f"cache read {found.read_tokens:,}, written {found.written_tokens:,}"
    return text + (f", miss: {found.miss_reason}" if found.miss_reason else "")


def _response_values(exchange: Exchange) -> Iterator[Any]:
    response = exchange.response
    yield from response_events(response.json, response.text, response.lines)


def _member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
