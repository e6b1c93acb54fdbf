"""The hosts each provider answers on, as data: `harness/providers/hosts.json`.

Every row names a provider (a harness provider name), its host patterns (`*` matches within a
name: `*.openai.azure.com`; a pattern with `:port` matches that port only), its `source` and the
date it was `checked_on`, as the rules pack's rows do. `local` is the default list of local
OpenAI-compatible servers (Ollama, vLLM) a capture session intercepts; a project replaces it with
`harness_capture_config`'s `local_hosts` key. A provider's own `hosts` are added to the rows named
after it (`harness.providers._base.hosts_of`).
"""

from __future__ import annotations

import datetime
from functools import cache
from importlib.resources import files
from typing import Final

import msgspec

from harness._shared._errors import FixtureError

__all__ = ["HostRow", "HostsFile", "known_hosts", "local_hosts"]

KIND: Final = "harness/hosts"
FORMAT: Final = 1


class HostRow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The hosts one provider answers on, with where that is said."""

    provider: str
    hosts: tuple[str, ...]
    source: str
    checked_on: datetime.date
    note: str = ""


class LocalHosts(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    hosts: tuple[str, ...]
    source: str
    checked_on: datetime.date


class HostsFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    format: int
    rows: tuple[HostRow, ...]
    local: LocalHosts


@cache
def _shipped() -> HostsFile:
    where = "harness/providers/hosts.json"
    data = files("harness.providers").joinpath("hosts.json").read_bytes()
    try:
        value = msgspec.json.decode(data, type=HostsFile)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise FixtureError(where, f"is not a hosts file: {error}") from None
    if value.kind != KIND or value.format != FORMAT:
        raise FixtureError(where, f"holds {value.kind!r} format {value.format}, expected {KIND!r}")
    return value


def host_rows() -> tuple[HostRow, ...]:
    return _shipped().rows


@cache
def known_hosts(provider: str) -> tuple[str, ...]:
    """The host patterns the data gives `provider`, lower-cased, in row order."""
    found = (host.lower() for row in host_rows() if row.provider == provider for host in row.hosts)
    return tuple(dict.fromkeys(found))


def local_hosts() -> tuple[str, ...]:
    """The local OpenAI-compatible servers captured by default (`local_hosts` replaces them)."""
    return tuple(host.lower() for host in _shipped().local.hosts)
