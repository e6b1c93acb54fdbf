"""A scan's findings as SARIF 2.1.0: one result per finding, `ruleId` the verdict, `level` its
severity, located at the record's file (and line, where the format has lines), with the
finding's figures under `properties`. Text is the printer's (redacted, bounded); the file as a
whole is redacted again when written.
"""

from __future__ import annotations

import re
from typing import Any, Final

from harness._shared._printer import line
from harness.scan._result import ScanResult

__all__ = ["SARIF_SCHEMA", "sarif"]

SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
_LINE: Final = re.compile(r"^(?P<file>.*):(?P<line>\d+)$")
_PART: Final = re.compile(r"#[^/]*$")


def _location(source: str) -> dict[str, Any]:
    found = _LINE.match(source)
    if found is not None:
        return {
            "physicalLocation": {
                "artifactLocation": {"uri": line(found.group("file"), 1000)},
                "region": {"startLine": int(found.group("line"))},
            }
        }
    return {"physicalLocation": {"artifactLocation": {"uri": line(_PART.sub("", source), 1000)}}}


def sarif(found: ScanResult) -> dict[str, Any]:
    verdicts = sorted({f.verdict for f in found.findings})
    rules = [
        {
            "id": verdict,
            "name": verdict,
            "shortDescription": {"text": f"prompt-cache break: {verdict}"},
        }
        for verdict in verdicts
    ]
    results = [
        {
            "ruleId": f.verdict,
            "ruleIndex": verdicts.index(f.verdict),
            "level": "error" if f.severity == "error" else "warning",
            "message": {"text": line(f.summary, 1000)},
            "locations": [_location(f.source)],
            "properties": {
                "session": line(f.session, 300),
                "request": f.request,
                "request_id": line(f.request_id, 300) if f.request_id else None,
                "block": f.block,
                "evidence": f.evidence,
                "deploy": line(f.deploy, 300) if f.deploy else None,
                "tokens_lost": f.tokens_lost,
                "usd_lost": f.usd_lost,
                "pointer": line(f.pointer, 300) if f.pointer else None,
                "byte": f.byte,
            },
        }
        for f in found.findings
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "harness scan", "rules": rules}},
                "results": results,
                "properties": {
                    "requests": found.totals.requests,
                    "sessions": found.totals.sessions,
                    "usd_lost": found.totals.usd_lost,
                },
            }
        ],
    }
