"""What a run observed of each source of order, in words a report can quote.

Each perturbed source writes here what it saw, whether it changed anything or not: the order in
which asyncio tasks and thread jobs finished, the folders listed, the entry-point groups read.
Comparing the journal of the natural run with that of a drifting run names the cause:
`asyncio completion order (fs, web, shell vs shell, web, fs)`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["Journal", "label_of_call", "same_function_labels"]

_MAX_SHOWN: Final = 8
_MAX_LABEL: Final = 40


@dataclass
class Journal:
    """Per source: what finished, in order, and which places were listed or read; per label,
    which kinds of channel (helper processes, sockets) what finished waited on."""

    finished_order: dict[str, list[str]] = field(default_factory=dict)
    places: dict[str, list[str]] = field(default_factory=dict)
    channels: dict[str, set[str]] = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)  # asyncio tasks, as they took up answers
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def finished(self, source: str, label: str, channels: Iterable[str] = ()) -> None:
        with self._lock:
            self.finished_order.setdefault(source, []).append(label)
            if channels:
                self.channels.setdefault(label, set()).update(channels)

    def answer(self, label: str) -> None:
        """A task went on with an answer from outside (a process, a socket, a thread): tasks
        that stay open (a session kept for later) finish late, but take up answers in order."""
        with self._lock:
            if not self.answers or self.answers[-1] != label:
                self.answers.append(label)

    def place(self, source: str, where: str) -> None:
        with self._lock:
            known = self.places.setdefault(source, [])
            if where not in known:
                known.append(where)


def label_of_call(name: str, argnames: Sequence[str], values: Mapping[str, Any]) -> str:
    """`name(first argument)` when the first argument is a short plain value, or an object with
    a short `name` (a plugin, a server's parameters), else `name`."""
    for argname in argnames:
        if argname in ("self", "cls"):
            continue
        value = values.get(argname)
        if not isinstance(value, str | int | float):
            value = getattr(value, "name", None)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            text = value if isinstance(value, str) else repr(value)
            if len(text) <= _MAX_LABEL:
                return f"{name}({text})"
        break
    return name


def same_function_labels(labels: Sequence[str]) -> list[str]:
    """Labels without their shared function name (`load(fs)`, `load(web)` -> `fs`, `web`)."""
    heads = {label.partition("(")[0] for label in labels}
    if len(heads) == 1 and all(label.endswith(")") and "(" in label for label in labels):
        return [label.partition("(")[2][:-1] for label in labels]
    return list(labels)


def shown(labels: Sequence[str]) -> str:
    """A list of labels for a report line, cut after a few."""
    items = same_function_labels(labels)
    text = ", ".join(items[:_MAX_SHOWN])
    return text + (f", … ({len(items) - _MAX_SHOWN} more)" if len(items) > _MAX_SHOWN else "")
