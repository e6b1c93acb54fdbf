"""Bedrock model invocation logs (`schemaType: ModelInvocationLog`, from S3 or CloudWatch, often
gzip): one record per invocation.

The request is `input.inputBodyJson` (the Converse or InvokeModel body as sent: evidence
`exact`), sent to the operation's endpoint for `modelId`; the counters are `input.inputTokenCount`
(uncached input), `cacheReadInputTokenCount` and `cacheWriteInputTokenCount`, and
`output.outputTokenCount`. A body over 100 KB is moved to `input.inputBodyS3Path`: it is read
when that path is readable here (a local file, or an `s3://` key whose file name sits beside the
log), else the record is counters-only. The session is `requestMetadata`'s `session_id` (or
`sessionId`, `conversation_id`; the caller sets these), the request id `requestId`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Final

import msgspec

from harness.scan._keys import id_of, seconds
from harness.scan._readers._base import BadRecord, Reader, Unit, body_of, counters
from harness.scan._record import TraceRecord

__all__ = ["BedrockReader"]

_SESSION: Final = ("session_id", "sessionId", "conversation_id", "conversationId", "session")
_PATHS: Final = {
    "Converse": "converse",
    "ConverseStream": "converse-stream",
    "InvokeModel": "invoke",
    "InvokeModelWithResponseStream": "invoke-with-response-stream",
}


class BedrockReader(Reader):
    name: ClassVar[str] = "bedrock"
    describe: ClassVar[str] = "Bedrock model invocation logs (ModelInvocationLog)"

    def claims(self, value: Any) -> bool:
        return isinstance(value, Mapping) and value.get("schemaType") == "ModelInvocationLog"

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        value = unit.value
        if not self.claims(value):
            raise BadRecord("not a Bedrock ModelInvocationLog record")
        given = value.get("input")
        given = given if isinstance(given, Mapping) else {}
        model = value.get("modelId") if isinstance(value.get("modelId"), str) else None
        region = value.get("region") if isinstance(value.get("region"), str) else "us-east-1"
        operation = _PATHS.get(str(value.get("operation")), "converse")
        url = f"https://bedrock-runtime.{region}.amazonaws.com/model/{model}/{operation}"
        body, raw = body_of(given.get("inputBodyJson"))
        note = None
        if body is None and isinstance(given.get("inputBodyS3Path"), str):
            body, raw, note = _moved(given["inputBodyS3Path"], unit)
        output = value.get("output")
        metadata = value.get("requestMetadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        yield TraceRecord(
            source=unit.where,
            format=self.name,
            ordinal=0,
            session=next(
                (id_of(metadata.get(k)) for k in _SESSION if id_of(metadata.get(k))), None
            ),
            request_id=id_of(value.get("requestId")),
            time=seconds(value.get("timestamp")),
            url=url,
            body=body,
            raw=raw,
            evidence="exact" if body is not None else "counters",
            provider="bedrock",
            model=model,
            counters=counters(
                uncached=given.get("inputTokenCount"),
                read=given.get("cacheReadInputTokenCount"),
                write=given.get("cacheWriteInputTokenCount"),
                output=output.get("outputTokenCount") if isinstance(output, Mapping) else None,
            ),
            view=value,
            note=note,
        )


def _moved(location: str, unit: Unit) -> tuple[dict[str, Any] | None, bytes | None, str | None]:
    """A body moved to S3, when a readable copy is here: the path itself, or its file name
    beside the log."""
    log = Path(unit.where.rsplit(":", 1)[0] if unit.offset >= 0 else unit.where)
    name = location.rsplit("/", 1)[-1]
    for candidate in (Path(location.removeprefix("file://")), log.parent / name):
        if "://" in str(candidate) or not candidate.is_file():
            continue
        try:
            data = candidate.read_bytes()
            decoded = msgspec.json.decode(data)
        except (OSError, msgspec.DecodeError):
            continue
        if isinstance(decoded, dict):
            return decoded, data, None
    return None, None, f"the body was moved to {location} and no copy is readable here"
