"""Header pins: one header class's full header, kept where a reviewer reads it.

`snapshots/headers/<class>/system-prompt.expected.md` holds the exact system text and
`tool-schemas.expected.json` the tools of the first header (`initial`) and of each header change a
scenario of the class is expected to go through (`changes`). Every scenario log stores
`{{system}}`/`{{tools}}` instead, and replay checks each live header against the pin: the first
header against `initial`, the k-th `change` against `changes[k-1]`, a `resume` against the state in
force. The system text is pinned once per class: a header change that alters it is a finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from harness._shared._errors import FixtureError
from harness._shared._files import FileContents, encode, read, read_checked, warn_if_secret
from harness._shared._paths import SYSTEM_PIN, TOOLS_PIN, pin_folder
from harness._shared._views import view_of_header
from harness.agent._header import Header, header_equals
from harness.agent._tools import ToolSchema
from harness.drift._compare import compare
from harness.drift._report import DriftReport
from harness.scenarios._formats import ToolSchemasPin


@dataclass(frozen=True)
class Pin:
    system: str
    tools: ToolSchemasPin

    def state(self, index: int) -> tuple[ToolSchema, ...]:
        return self.tools.initial if index == 0 else self.tools.changes[index - 1]


def load_pin(root: Path, name: str) -> Pin | None:
    folder = pin_folder(root, name)
    system_path, tools_path = folder / SYSTEM_PIN, folder / TOOLS_PIN
    if not system_path.exists() and not tools_path.exists():
        return None
    if not system_path.exists():
        raise FixtureError(system_path, "is missing beside its tool pin", "run harness refresh")
    data = read_checked(system_path)
    try:
        system = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FixtureError(system_path, f"is not valid UTF-8 at byte {error.start}") from None
    warn_if_secret(system_path, data)
    return Pin(system, read(tools_path, ToolSchemasPin))


def pin_from_headers(headers: Sequence[tuple[str, Header]]) -> Pin:
    first = headers[0][1]
    system = first.system if isinstance(first.system, str) else ""
    tools = [h.tools if isinstance(h.tools, tuple) else () for _, h in headers]
    changes = tuple(tools[i] for i, (reason, _) in enumerate(headers) if reason == "change")
    return Pin(system, ToolSchemasPin(initial=tools[0], changes=changes))


def pin_files(root: Path, name: str, pin: Pin) -> list[FileContents]:
    folder = pin_folder(root, name)
    return [
        (folder / SYSTEM_PIN, pin.system.encode("utf-8")),
        (folder / TOOLS_PIN, encode(pin.tools)),
    ]


@dataclass(frozen=True)
class PinMismatch:
    index: int  # which header of the run
    reason: str
    message: str
    report: DriftReport | None


def check_against_pin(
    headers: Sequence[tuple[str, Header]],
    pin: Pin,
    expected_changes: int,
    owners: dict[str, str | None] | None = None,
) -> list[PinMismatch]:
    """Every live header must equal the pinned state it claims to be in."""
    mismatches: list[PinMismatch] = []
    changes = sum(reason == "change" for reason, _ in headers)
    if changes != expected_changes:
        mismatches.append(
            PinMismatch(
                -1,
                "change",
                f"the scenario declares {expected_changes} header change(s); "
                f"replay logged {changes}",
                None,
            )
        )
    state = 0
    for index, (reason, header) in enumerate(headers):
        if reason == "change":
            state += 1
        if state > len(pin.tools.changes):
            mismatches.append(
                PinMismatch(index, reason, f"header change {state} is not pinned", None)
            )
            continue
        tools = pin.state(state)
        pinned = Header(
            config=header.config,
            system=pin.system if pin.system else msgspec.UNSET,
            tools=tools if tools else msgspec.UNSET,
        )
        if header_equals(pinned, header):
            continue  # the byte-equality the report would find, without building its views
        report = compare(
            view_of_header(pinned),
            view_of_header(header),
            owners=owners,
            label_a="pinned",
            label_b="replayed",
        )
        if not report.identical:
            where = "initial header" if state == 0 else f"header change {state}"
            mismatches.append(
                PinMismatch(
                    index, reason, f"{reason} header differs from the pinned {where}", report
                )
            )
    return mismatches
