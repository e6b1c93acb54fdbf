"""The fixture format: a msgspec Struct for every file of a scenario folder, and the folder.

A scenario lives in `fixtures/<name>/` as four JSON files, each opening with `format` and `kind`:

- `scenario.json`  the input: app preset and config, plugins and their tools, the user's turns,
                   the stand-in model's script, and what the scenario expects;
- `log.json`       the normalised session log (`{{session_id}}`, `{{time}}`, and `{{system}}` /
                   `{{tools}}` in every header: the full header lives in the class's pin);
- `requests.json`  the frozen requests as dispatched, normalised the same way;
- `answers.json`   the model's answers as recorded, which replay feeds back.

Every file goes through the codec in `harness._shared._files` (strict reads, stable pretty JSON in
wire order, atomic writes), and a scenario that decodes but cannot run is refused by
`harness.scenarios._validation`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeVar

import msgspec

from harness._shared._errors import FixtureError, UnsafeName
from harness._shared._files import Versioned, read
from harness._shared._paths import (
    ANSWERS_FILE,
    LOG_FILE,
    REQUESTS_FILE,
    SCENARIO_FILE,
    safe_component,
)
from harness._shared._paths import find_fixtures as find_fixtures  # its home moved; still here
from harness.agent._header import LlmConfig, Message, messages_json
from harness.agent._llm import RequestFields, ScriptedReply
from harness.agent._session import (
    AgentError,
    AssistantMessage,
    Event,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from harness.agent._tools import ToolSchema
from harness.scenarios._validation import check_scenario_input

SESSION_TOKEN = "{{session_id}}"
TIME_TOKEN = "{{time}}"
SYSTEM_TOKEN = "{{system}}"
TOOLS_TOKEN = "{{tools}}"

T = TypeVar("T", bound=Versioned)
R = TypeVar("R", "LogFile", "RequestsFile", "AnswersFile")


# -- scenario input ------------------------------------------------------------------------------


class ToolSpec(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A tool a scenario plugin registers, and what calling it returns."""

    name: str
    description: str
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    result: str = "ok"
    error: str | msgspec.UnsetType = msgspec.UNSET

    def schema(self) -> ToolSchema:
        return ToolSchema(self.name, self.description, dict(self.parameters))


class SectionSpec(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    name: str
    text: str
    order: int = 500
    complete: bool = False


class ReverseToolsFromStep(
    msgspec.Struct,
    frozen=True,
    tag="reverse-tools-from-step",
    tag_field="kind",
    forbid_unknown_fields=True,
):
    """From step `step` of the session on, the listener reverses the tool list (deterministic)."""

    step: int


class AppendTool(
    msgspec.Struct, frozen=True, tag="append-tool", tag_field="kind", forbid_unknown_fields=True
):
    """The listener appends a tool after the authoritative order (it is not re-sorted)."""

    tool: ToolSpec


class RotatePerCall(
    msgspec.Struct, frozen=True, tag="rotate-per-call", tag_field="kind", forbid_unknown_fields=True
):
    """The listener rotates the tools by how often it has run: hidden state, not deterministic."""


class AppendInLoadOrder(
    msgspec.Struct,
    frozen=True,
    tag="append-in-load-order",
    tag_field="kind",
    forbid_unknown_fields=True,
):
    """The listener appends `tools` in the order their plugins finished loading: racy."""

    tools: tuple[ToolSpec, ...]


ListenerSpec = ReverseToolsFromStep | AppendTool | RotatePerCall | AppendInLoadOrder


class PluginSpec(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A plugin of the scenario: its tools, sections and assemble listeners.

    `provider: true` contributes the tools through a tool provider of its own (so the provider
    order races too) instead of registering them in the ToolRuntime.
    """

    name: str
    tools: tuple[ToolSpec, ...] = ()
    provider: bool = False
    sections: tuple[SectionSpec, ...] = ()
    listeners: tuple[ListenerSpec, ...] = ()


class PinSpec(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Which header class the scenario belongs to, and whether it owns (writes) that pin."""

    name: str
    owner: bool = False


class Scenario(Versioned, frozen=True, kw_only=True, tag="harness/scenario"):
    """Everything needed to run a scenario from scratch."""

    name: str
    description: str = ""
    app: Literal["cli", "tui"] = "cli"
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    variables: dict[str, str] = msgspec.field(default_factory=dict)
    plugins: tuple[PluginSpec, ...] = ()
    loops: tuple[tuple[str, ...], ...] = ()
    script: tuple[ScriptedReply, ...] = ()
    pin: PinSpec | None = None
    expected_header_changes: int = 0
    expect: Literal["stable", "unstable"] = "stable"


# -- recordings ----------------------------------------------------------------------------------


class RecordedHeader(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A header as stored: system and tools are `{{system}}`/`{{tools}}` when the pin holds them."""

    config: LlmConfig
    system: str | msgspec.UnsetType = msgspec.UNSET
    tools: tuple[ToolSchema, ...] | str | msgspec.UnsetType = msgspec.UNSET


class RecordedRequestHeader(Event, frozen=True, tag="request/header"):
    header: RecordedHeader
    reason: Literal["initial", "resume", "change"]


RecordedEvent = (
    TurnStart
    | UserMessage
    | StepStart
    | RecordedRequestHeader
    | AssistantMessage
    | ToolCall
    | ToolResult
    | StepEnd
    | TurnEnd
    | AgentError
)


class MessagesDigest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """A request's messages, by count and SHA-256 of their JSON bytes.

    The log already holds every message readably, and the runtime checks at dispatch that a
    request's messages are exactly what the log derives; storing them again per request would
    make the file grow with the square of the conversation's length.
    """

    count: int
    sha256: str

    @classmethod
    def of(cls, messages: Sequence[Message]) -> MessagesDigest:
        return cls(len(messages), hashlib.sha256(messages_json(messages)).hexdigest())


class RecordedRequest(
    RequestFields, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A dispatched request as the requests file keeps it: its fields, tools as the pin holds
    them (or `{{tools}}`), and its messages as a digest."""

    tools: tuple[ToolSchema, ...] | str | msgspec.UnsetType = msgspec.UNSET
    messages: MessagesDigest
    session_id: str


# A recording's files grow with its steps (a session log about 1 KB a step): they are read up to
# this size (about 250,000 steps), the other files up to the shared 64 MiB; the recorder refuses,
# in one line, a recording whose file would be over it.
RECORDING_MAX_BYTES: Final = 256 * 1024 * 1024


class LogFile(Versioned, frozen=True, kw_only=True, tag="harness/log"):
    MAX_BYTES: ClassVar[int | None] = RECORDING_MAX_BYTES

    scenario: str
    registration_order: tuple[str, ...] = ()
    events: tuple[RecordedEvent, ...] = ()


class RequestsFile(Versioned, frozen=True, kw_only=True, tag="harness/requests"):
    MAX_BYTES: ClassVar[int | None] = RECORDING_MAX_BYTES

    scenario: str
    requests: tuple[RecordedRequest, ...] = ()


class AnswersFile(Versioned, frozen=True, kw_only=True, tag="harness/answers"):
    MAX_BYTES: ClassVar[int | None] = RECORDING_MAX_BYTES

    scenario: str
    answers: tuple[ScriptedReply, ...] = ()


class ToolSchemasPin(Versioned, frozen=True, kw_only=True, tag="harness/tool-schemas"):
    """`tool-schemas.expected.json`: the tools of the first header and of each expected change."""

    initial: tuple[ToolSchema, ...] = ()
    changes: tuple[tuple[ToolSchema, ...], ...] = ()


# -- a fixture folder ----------------------------------------------------------------------------


class Fixture(msgspec.Struct, frozen=True):
    """The four files of one scenario folder, decoded."""

    path: str
    scenario: Scenario
    log: LogFile | None
    requests: RequestsFile | None
    answers: AnswersFile | None

    @property
    def folder(self) -> Path:
        return Path(self.path)

    @property
    def recorded(self) -> bool:
        return self.log is not None and self.requests is not None and self.answers is not None


def load_fixture(
    folder: Path, *, require_recording: bool = True, scenario_only: bool = False
) -> Fixture:
    """Read a scenario folder strictly.

    A missing recording is an error unless not required; `scenario_only` reads the input alone,
    so a recording about to be replaced (perhaps in an old format) is never opened.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FixtureError(
            folder, "is not a scenario folder", f"expected a folder with {SCENARIO_FILE}"
        )
    scenario = read(folder / SCENARIO_FILE, Scenario)
    for name in (scenario.name, *([scenario.pin.name] if scenario.pin else [])):
        try:
            safe_component(name)
        except UnsafeName as error:
            raise FixtureError(folder / SCENARIO_FILE, str(error)) from None
    check_scenario_input(scenario, folder / SCENARIO_FILE)

    def optional(name: str, kind: type[R]) -> R | None:
        path = folder / name
        if scenario_only or (not require_recording and not path.exists()):
            return None
        recording = read(path, kind)
        if recording.scenario != scenario.name:  # a file copied from another scenario's folder
            raise FixtureError(
                path,
                f"belongs to scenario {recording.scenario!r}, not {scenario.name!r}"
                " (at `$.scenario`)",
                f"copied from another folder? re-record it: harness record {folder}",
            )
        return recording

    return Fixture(
        str(folder),
        scenario,
        optional(LOG_FILE, LogFile),
        optional(REQUESTS_FILE, RequestsFile),
        optional(ANSWERS_FILE, AnswersFile),
    )
