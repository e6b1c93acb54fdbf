"""What `harness diff` compares: requests files, tool pins, cassettes, or request bodies.

Both files are read strictly. Two `harness/requests` files are compared request by request (the
first that differs, as a cache view: placeholders and message digests compare as they are); two
tool pins as the tools of their first header; two cassettes exchange by exchange (the test's
own, then each prove_stable call's), the first request whose cache view differs; two provider
request bodies (as sent, or a cassette's recorded request with its URL) in their provider's cache
order, so the report has the provider's verdict and the cost. Anything else is compared as plain
JSON values. Big files stay cheap: each is read once, and two values over
`harness.drift._far.FAR` bytes are compared member by member rather than encoded whole (two 50 MB
bodies: about a second, and the memory of the two values).
"""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path

import msgspec

from harness._shared import _printer
from harness._shared._errors import FixtureError
from harness._shared._files import decode, read_checked, with_position
from harness._shared._views import RequestSplit, prompt_size, view_of_header, view_of_request
from harness.agent._header import Header, LlmConfig
from harness.cache._analysis import LintRequest, analyse
from harness.cache._markers import long_pair
from harness.cache._verdict import judge_pair
from harness.capture._cassette import CaptureFile, Exchange
from harness.capture._found import request_of
from harness.drift._compare import compare, compare_values
from harness.drift._far import FAR
from harness.drift._report import DriftReport, Loss
from harness.providers import split_request
from harness.providers._registry import provider_named
from harness.scenarios._formats import RequestsFile, ToolSchemasPin

__all__ = ["diff_files"]


_HARNESS_KINDS = ("harness/requests", "harness/tool-schemas", "harness/capture")
_WRAPPED = frozenset({"url", "body", "time", "response", "headers", "method"})


def _load_json(path: Path) -> tuple[object, bytes | None, int, bytes]:
    """The file decoded as JSON, its bytes when it is a harness file (decoded again, strictly,
    as its kind), its size and a digest of its bytes; other files' bytes are let go at once (two
    50 MB bodies are big enough)."""
    data = read_checked(path, missing_hint="check the path").removeprefix(b"\xef\xbb\xbf")
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"is not valid JSON: {with_position(data, str(error))}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be read") from None
    kind = value.get("kind") if isinstance(value, dict) else None
    _learn(value)
    digest = hashlib.blake2b(data, digest_size=16).digest()
    return value, data if kind in _HARNESS_KINDS else None, len(data), digest


def _learn(value: object) -> None:
    """Teach the printer what a compared file's request hides: its headers' secret values (a
    proxy log line's `x-api-key`, echoed in its body) and its URL's, also each exchange's of a
    cassette (which holds them redacted unless it was edited by hand)."""
    if not isinstance(value, dict):
        return
    requests: list[object] = [value]
    for exchange in value.get("exchanges") or () if value.get("kind") == "harness/capture" else ():
        if isinstance(exchange, dict):
            requests += [exchange.get("request"), exchange.get("response")]
    headers: list[tuple[str, str]] = []
    urls: list[str | None] = []
    for request in requests:
        if not isinstance(request, dict):
            continue
        found = request.get("headers")
        pairs = (
            found.items() if isinstance(found, dict) else found if isinstance(found, list) else ()
        )
        headers += [
            (str(pair[0]), str(pair[1]))
            for pair in pairs
            if isinstance(pair, list | tuple) and len(pair) == 2
        ]
        url = request.get("url")
        urls.append(url if isinstance(url, str) else None)
    _printer.learn(headers=headers, urls=urls)


def diff_files(a: Path, b: Path) -> DriftReport:
    """The drift report from file `a` to file `b`."""
    collecting = gc.isenabled()
    gc.disable()  # two big decoded values make every full collection walk millions of objects
    try:
        return _diff(a, b)
    finally:
        if collecting:
            gc.enable()


def _diff(a: Path, b: Path) -> DriftReport:
    (raw_a, data_a, size_a, digest_a), (raw_b, data_b, size_b, digest_b) = (
        _load_json(a),
        _load_json(b),
    )
    kinds = {x.get("kind") if isinstance(x, dict) else None for x in (raw_a, raw_b)}
    if kinds == {"harness/requests"} and data_a is not None and data_b is not None:
        ra = decode(data_a, RequestsFile, a).requests
        rb = decode(data_b, RequestsFile, b).requests
        for x, y in zip(ra, rb, strict=False):
            if msgspec.json.encode(x) != msgspec.json.encode(y):
                return compare(
                    view_of_request(x), view_of_request(y), label_a=str(a), label_b=str(b)
                )
        return compare_values(len(ra), len(rb), label_a=str(a), label_b=str(b))
    if kinds == {"harness/tool-schemas"} and data_a is not None and data_b is not None:
        pa = decode(data_a, ToolSchemasPin, a)
        pb = decode(data_b, ToolSchemasPin, b)
        config = LlmConfig("pinned", "pinned")
        return compare(
            view_of_header(Header(config=config, tools=pa.initial)),
            view_of_header(Header(config=config, tools=pb.initial)),
            label_a=str(a),
            label_b=str(b),
        )
    if kinds == {"harness/capture"} and data_a is not None and data_b is not None:
        return _diff_cassettes(decode(data_a, CaptureFile, a), decode(data_b, CaptureFile, b), a, b)
    size = max(size_a, size_b)
    raw_a, raw_b = _wrapped(raw_a), _wrapped(raw_b)
    request_a, request_b = _request_of(raw_a), _request_of(raw_b)
    if request_a is not None and request_b is not None and size <= FAR:
        return _diff_requests(request_a, request_b, raw_a, raw_b, (a, b), digest_a != digest_b)
    report = compare_values(raw_a, raw_b, label_a=str(a), label_b=str(b), decoded=True, size=size)
    if request_a is not None and request_b is not None:  # the cache view would copy both bodies
        note = (
            f"two request bodies over {FAR // (1024 * 1024)} MiB are compared as JSON values,"
            " member by member, without the provider's cache verdict"
        )
        report = msgspec.structs.replace(report, notes=(*report.notes, note))
    return report


def _diff_requests(
    request_a: LintRequest,
    request_b: LintRequest,
    raw_a: object,
    raw_b: object,
    paths: tuple[Path, Path],
    bytes_differ: bool,
) -> DriftReport:
    """Two provider requests: identical to the cache, `b` keeping `a`'s cached prefix (it
    extends it), or the break the cache model finds, with what it costs."""
    a, b = paths
    split_a, split_b = request_a.split, request_b.split
    assert split_a is not None and split_b is not None
    caching = caching_of(raw_b) + bookkeeping_clause(split_a, split_b)
    report = compare(split_a.view, split_b.view, label_a=str(a), label_b=str(b), caching=caching)
    differ = bookkeeping_differs(split_a, split_b)
    if report.identical:
        if bytes_differ or _spaced(raw_a) != _spaced(raw_b):
            how = (
                "in fields that never reach the cache"
                if differ
                else "in JSON spacing or escaping, which the provider parses away"
            )
            said = (
                f"identical: {a} and {b} are the same request to the provider's cache"
                f" ({report.prefix_bytes_kept:,} prompt bytes in cache order); the bodies differ"
                f" only {how}; {caching}"
            )
            report = msgspec.structs.replace(report, raw_summary=(said,))
    else:
        judged = judge_pair(request_a, request_b, labels=(str(a), str(b)))
        if judged is not None:
            report = judged.report
        elif prompt_size(split_b.view) <= prompt_size(split_a.view):
            # no extension (a shorter history, a setting of a level past the cached prefix):
            # what differs, and that nothing cached is lost by it
            kept = Loss(0, 0, f"{b} keeps what {a} caches")
            view_a, view_b = split_a.view, split_b.view
            found = provider_named(split_b.provider)
            if found is not None:  # the API's two spellings of one block are no difference
                markers = split_a.markers or split_b.markers
                view_a, view_b = long_pair(view_a, view_b, markers, found.shorthand)
            report = compare(view_a, view_b, label_a=str(a), label_b=str(b), loss=kept)
        else:
            said = (
                f"extends: {b} continues {a}'s prefix: every block {a} caches comes first in"
                f" {b}, which adds to its end (a cache marker that moves forward is how a"
                f" conversation keeps its cache); {report.prefix_bytes_kept:,} prompt bytes"
                f" (~{report.tokens_kept:,} tokens) kept; {caching}"
            )
            report = DriftReport(
                identical=False,
                verdict="extends",
                extends=True,
                raw_summary=said,
                prefix_bytes_kept=report.prefix_bytes_kept,
                tokens_kept=report.tokens_kept,
                raw_label_a=str(a),
                raw_label_b=str(b),
            )
    if differ:
        note = f"bookkeeping fields differ, and never reach the cache: {', '.join(differ)}"
        report = msgspec.structs.replace(report, notes=(*report.notes, note))
    return report


def _spaced(value: object) -> bool:
    """Whether a recorded request's body was kept as text (spaced or escaped JSON)."""
    recorded = request_of(value)
    return recorded is not None and not isinstance(recorded.text, msgspec.UnsetType)


def bookkeeping_differs(a: RequestSplit, b: RequestSplit) -> list[str]:
    """The bookkeeping fields (the rules pack's) whose values differ between two requests."""
    keys = [*a.bookkeeping, *(key for key in b.bookkeeping if key not in a.bookkeeping)]
    missing = object()
    return [
        key
        for key in keys
        if msgspec.json.encode(a.bookkeeping.get(key, missing), enc_hook=repr)
        != msgspec.json.encode(b.bookkeeping.get(key, missing), enc_hook=repr)
    ]


def bookkeeping_clause(a: RequestSplit, b: RequestSplit) -> str:
    differ = bookkeeping_differs(a, b)
    return (
        f"; bookkeeping that never reaches the cache differs: {', '.join(differ)}" if differ else ""
    )


def _wrapped(value: object) -> object:
    """A `{"url", "body"}` object (what `harness lint` reads, a proxy log's line) as the
    recorded request it stands for, so its URL names the provider; anything else as it is."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("body"), dict)
        and set(value) <= _WRAPPED
        and isinstance(value.get("url", ""), str)
    ):
        return {
            "method": value.get("method", "POST"),
            "url": value.get("url"),
            "json": value["body"],
        }
    return value


def caching_of(value: object) -> str:
    """What the rules say a request body caches (for an identical report's summary)."""
    recorded = request_of(value)
    if recorded is not None and isinstance(recorded.parsed, dict):
        request = LintRequest(0, recorded.parsed, url=recorded.url, headers=recorded.headers)
    elif isinstance(value, dict):
        request = LintRequest(0, value)
    else:
        return "whether it caches is not judged"
    analysis = analyse(request)
    if analysis is None:
        return "whether it caches is not judged"
    said = analysis.describe()
    if analysis.largest() is not None:
        return f"the cached prefix stays cached under the rules: it {said}"
    return said


def _request_of(value: object) -> LintRequest | None:
    """A provider request body (or a recorded request) as the cache model reads it, split in
    its provider's cache order; None when no provider recognises it."""
    recorded = request_of(value)
    if recorded is not None:
        body, url, headers = recorded.parsed, recorded.url, recorded.headers
    else:
        body, url, headers = value, None, ()
    if not isinstance(body, dict):
        return None
    request = LintRequest(0, body, url=url, headers=tuple(headers or ()))
    return request if request.split is not None else None


def _diff_cassettes(a: CaptureFile, b: CaptureFile, path_a: Path, path_b: Path) -> DriftReport:
    def numbered(capture: CaptureFile) -> list[tuple[str, Exchange]]:
        found = [(f"exchange {i}", e) for i, e in enumerate(capture.exchanges, start=1)]
        for call, proof in enumerate(capture.proofs, start=1):
            found += [
                (f"prove_stable call {call} exchange {i}", e)
                for i, e in enumerate(proof.exchanges, start=1)
            ]
        return found

    left, right = numbered(a), numbered(b)
    for (where_a, x), (where_b, y) in zip(left, right, strict=False):
        split_x = split_request_of(x)
        split_y = split_request_of(y)
        if split_x is not None and split_y is not None:
            report = compare(
                split_x.view,
                split_y.view,
                label_a=f"{path_a} {where_a}",
                label_b=f"{path_b} {where_b}",
            )
        else:
            report = compare_values(
                msgspec.to_builtins(x.request),
                msgspec.to_builtins(y.request),
                label_a=f"{path_a} {where_a}",
                label_b=f"{path_b} {where_b}",
            )
        if not report.identical:
            return report
    report = compare_values(
        [where for where, _ in left],
        [where for where, _ in right],
        label_a=str(path_a),
        label_b=str(path_b),
    )
    if not report.identical:
        return report
    said = (
        f"identical: {path_a} and {path_b} hold the same {len(left):,} request(s) to the"
        " provider's cache, in the same order"
    )
    return msgspec.structs.replace(report, raw_summary=(said,))


def split_request_of(exchange: Exchange) -> RequestSplit | None:
    """A recorded request in its provider's cache order, its body parsed whatever its spacing."""
    request = exchange.request
    body = request.parsed
    if not isinstance(body, dict):
        return None
    return split_request(body, url=request.url, headers=request.headers)
