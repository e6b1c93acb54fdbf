"""The fixture format: msgspec Structs for every file the harness writes, and their codec.

A scenario lives in `fixtures/<name>/` as four JSON files, each opening with `format` and `kind`:

- `scenario.json`  the input: app preset and config, plugins and their tools, the user's turns,
                   the stand-in model's script, and what the scenario expects;
- `log.json`       the normalised session log (`{{session_id}}`, `{{time}}`, and `{{system}}` /
                   `{{tools}}` in every header: the full header lives in the class's pin);
- `requests.json`  the frozen requests as dispatched, normalised the same way;
- `answers.json`   the model's answers as recorded, which replay feeds back.

Files are pretty-printed JSON in wire order (never key-sorted: key order is part of the bytes a
provider caches), end with a newline, and are byte-identical when rewritten with the same content.
Reading is strict: a file is checked for size, UTF-8, `format` and `kind` before it is decoded
into its Struct, and every failure is a `FixtureError` naming the file and the position.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from harness.agent.llm import ScriptedReply
from harness.agent.session import (
    AgentError,
    AssistantMessage,
    Event,
    LlmConfig,
    Message,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from harness.agent.tools import ToolSchema
from harness.paths import UnsafeName, refuse_case_twin, safe_component
from harness.secrets import scan_secrets

FORMAT_VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024

SESSION_TOKEN = "{{session_id}}"
TIME_TOKEN = "{{time}}"
SYSTEM_TOKEN = "{{system}}"
TOOLS_TOKEN = "{{tools}}"

T = TypeVar("T", bound="Versioned")


class FixtureError(Exception):
    """A file the harness reads is missing, corrupt, truncated, of another version, or not ours.

    `str(error)` is one line that names the file, what is wrong, and what to do.
    """

    def __init__(self, path: Path | str, problem: str, hint: str = "") -> None:
        self.path = Path(path)
        self.problem = problem
        self.hint = hint
        text = f"{path}: {problem}" + (f" ({hint})" if hint else "")
        # msgspec quotes field names and values raw: a newline in a file must not split the
        # message (or forge a CI annotation line), so control characters are escaped.
        super().__init__(_CONTROL.sub(lambda m: repr(m.group())[1:-1], text))


_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


class WriteRefused(Exception):
    """The harness was asked to write while it must not (CI, or check mode)."""


class Versioned(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind"):
    """Every file opens with its kind (a msgspec tag, so always written) and format version."""

    format: int = FORMAT_VERSION


class _Envelope(msgspec.Struct):
    """Just enough of any file to know whether it is ours and which version."""

    format: Any = msgspec.UNSET
    kind: Any = msgspec.UNSET


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
    config: dict[str, Any] = {}
    variables: dict[str, str] = {}
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


class MessagesDigest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request's messages, by count and SHA-256 of their JSON bytes.

    The log already holds every message readably, and the runtime checks at dispatch that a
    request's messages are exactly what the log derives; storing them again per request would
    make the file grow with the square of the conversation's length.
    """

    count: int
    sha256: str

    @classmethod
    def of(cls, messages: tuple[Message, ...]) -> MessagesDigest:
        return cls(len(messages), hashlib.sha256(msgspec.json.encode(messages)).hexdigest())


class RecordedRequest(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    provider: str
    model: str
    max_tokens: int = 1024
    temperature: float | msgspec.UnsetType = msgspec.UNSET
    system: str | msgspec.UnsetType = msgspec.UNSET
    tools: tuple[ToolSchema, ...] | str | msgspec.UnsetType = msgspec.UNSET
    messages: MessagesDigest
    session_id: str


class LogFile(Versioned, frozen=True, kw_only=True, tag="harness/log"):
    scenario: str
    registration_order: tuple[str, ...] = ()
    events: tuple[RecordedEvent, ...] = ()


class RequestsFile(Versioned, frozen=True, kw_only=True, tag="harness/requests"):
    scenario: str
    requests: tuple[RecordedRequest, ...] = ()


class AnswersFile(Versioned, frozen=True, kw_only=True, tag="harness/answers"):
    scenario: str
    answers: tuple[ScriptedReply, ...] = ()


class ToolSchemasPin(Versioned, frozen=True, kw_only=True, tag="harness/tool-schemas"):
    """`tool-schemas.expected.json`: the tools of the first header and of each expected change."""

    initial: tuple[ToolSchema, ...] = ()
    changes: tuple[tuple[ToolSchema, ...], ...] = ()


# -- codec ---------------------------------------------------------------------------------------

_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """Pretty JSON in wire order with a trailing newline: stable bytes for the same content."""
    return msgspec.json.format(_encoder.encode(value), indent=2) + b"\n"


def with_position(data: bytes, message: str) -> str:
    """msgspec's message with the line and column of the byte offset it names."""
    match = re.search(r"byte (\d+)", message)
    if match is None and "truncated" not in message:
        return message
    offset = int(match.group(1)) if match else len(data)
    if match is None:
        message = f"{message} at byte {offset}"
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"{message} (line {line}, column {column})"


def decode(data: bytes, kind: type[T], path: Path | str) -> T:
    """Decode `data` strictly as `kind`; every failure is one FixtureError line naming `path`."""
    if len(data) > MAX_FILE_BYTES:
        raise FixtureError(
            path,
            f"is {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
            "not a fixture?",
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FixtureError(
            path, f"is not valid UTF-8 at byte {error.start}", "re-record it"
        ) from None
    try:
        envelope = msgspec.json.decode(data, type=_Envelope)
    except msgspec.ValidationError as error:  # a subclass of DecodeError: it must come first
        raise FixtureError(path, f"is not a harness file: {error}") from None
    except msgspec.DecodeError as error:
        problem = (
            "is empty"
            if not data.strip()
            else f"is not valid JSON: {with_position(data, str(error))}"
        )
        raise FixtureError(
            path, problem, "truncated or corrupt; restore it from git or re-record"
        ) from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be a harness file") from None
    expected_kind = kind.__struct_config__.tag
    if envelope.kind is msgspec.UNSET or envelope.format is msgspec.UNSET:
        raise FixtureError(path, 'is not a harness file (no "format" and "kind" fields)')
    if envelope.kind != expected_kind:
        raise FixtureError(path, f"holds {envelope.kind!r}, expected {expected_kind!r}")
    if envelope.format != FORMAT_VERSION:
        raise FixtureError(
            path,
            f"has format version {envelope.format!r}; this harness reads version {FORMAT_VERSION}",
            "re-record it with this version, or use the harness version that wrote it",
        )
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"does not match the {expected_kind} format: {error}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be a harness file") from None


class SecretWarning(UserWarning):
    """A file the harness read holds something key-shaped (it was written before redaction?)."""


def warn_if_secret(path: Path | str, data: bytes) -> None:
    findings = scan_secrets(data)
    if findings:
        shown = "; ".join(f.describe() for f in findings[:3])
        warnings.warn(
            SecretWarning(
                f"{path} holds {len(findings)} secret-looking string(s) ({shown}); rotate the "
                "secret and re-record the file"
            ),
            stacklevel=3,
        )


def read_checked(path: Path, missing_hint: str = "record it first: harness record") -> bytes:
    """A file's bytes, refused by size before it is read; every failure is a FixtureError."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FixtureError(path, f"is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit")
        return path.read_bytes()
    except FileNotFoundError:
        raise FixtureError(path, "does not exist", missing_hint) from None
    except IsADirectoryError:
        raise FixtureError(path, "is a folder, not a file") from None
    except OSError as error:
        raise FixtureError(path, f"cannot be read: {error.strerror}") from None


def read(path: Path, kind: type[T]) -> T:
    data = read_checked(path)
    value = decode(data, kind, path)
    warn_if_secret(path, data)
    return value


CI_VARIABLES = (
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "TF_BUILD",
    "JENKINS_URL",
)


def writes_allowed() -> bool:
    """CI never writes: any of the usual CI variables set (and not "false"/"0") forbids it."""
    for name in CI_VARIABLES:
        value = os.environ.get(name)
        if value and value.lower() not in ("0", "false", "no"):
            return False
    return True


def write_atomic(path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temp file in the same folder and a rename.

    Returns False (and writes nothing) when the file already holds exactly `data`, so rewriting
    unchanged content leaves mtimes and git alone. Refuses under CI (WriteRefused), and beside a
    name that differs only in case (UnsafeName, see `paths.refuse_case_twin`).
    """
    if not writes_allowed():
        raise WriteRefused(
            f"refusing to write {path} under CI; refresh fixtures locally and commit them"
        )
    refuse_case_twin(path)
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600 files; a fixture keeps its (or the usual) mode
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return True


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a power loss after it must not bring the old file back)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a folder; the rename is still atomic
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write(path: Path, value: Any) -> bool:
    return write_atomic(path, encode(value))


FileContents = tuple[Path, bytes]


def write_files(files: list[FileContents]) -> list[Path]:
    """Write each file atomically; return those whose bytes changed."""
    return [path for path, data in files if write_atomic(path, data)]


# -- a fixture folder ----------------------------------------------------------------------------

SCENARIO_FILE = "scenario.json"
LOG_FILE = "log.json"
REQUESTS_FILE = "requests.json"
ANSWERS_FILE = "answers.json"


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

    def optional(name: str, kind: type[T]) -> T | None:
        path = folder / name
        if scenario_only or (not require_recording and not path.exists()):
            return None
        return read(path, kind)

    return Fixture(
        str(folder),
        scenario,
        optional(LOG_FILE, LogFile),
        optional(REQUESTS_FILE, RequestsFile),
        optional(ANSWERS_FILE, AnswersFile),
    )


def find_fixtures(paths: list[Path]) -> list[Path]:
    """Scenario folders under the given paths (a folder holding scenario.json, or its parent)."""
    found: list[Path] = []
    for path in paths:
        if (path / SCENARIO_FILE).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.glob(f"*/{SCENARIO_FILE}")))
        elif path.name == SCENARIO_FILE:
            found.append(path.parent)
        else:
            raise FixtureError(path, "is not a scenario folder or a folder of them")
    return found
