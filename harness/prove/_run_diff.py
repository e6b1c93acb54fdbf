"""The drift between two runs of a build: the requests each sent, paired, and the first that moved.

`prove_stable` compares every perturbed run with the natural one, and the hash-seed runs with
each other, here. Requests are compared in the order sent; when the same requests went out in
another order (independent conversations sent concurrently), nothing drifted. Otherwise each
request is compared with the one of the other run it shares the longest prefix with, and a
difference that lies after an Anthropic request's last `cache_control` breakpoint is a note,
not a drift: the cached prefix is unaffected.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness._shared._errors import Drift
from harness._shared._views import canonical_bytes
from harness.drift._compare import compare
from harness.drift._locate import first_byte_difference
from harness.drift._parts import Reproduce
from harness.drift._report import DriftReport
from harness.prove._builds import Observed

__all__ = ["HeaderDrift", "difference"]


class HeaderDrift(Drift):
    """Header bytes moved under a perturbation. `str()` is the cause, then the whole report."""

    def __init__(
        self,
        message: str,
        report: DriftReport | None,
        *,
        seed: int | None = None,
        orders: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
        hash_seeds: tuple[int, int] | None = None,
    ) -> None:
        self.message = message
        self.report = report
        self.seed = seed
        self.orders = orders
        self.hash_seeds = hash_seeds
        self.cause: str | None = None
        super().__init__(self._text())

    def add_cause(self, cause: str) -> None:
        """Name the source that moved the bytes, on the first line."""
        self.cause = cause
        self.args = (self._text(),)

    @property
    def headline(self) -> str:
        """One line for a summary: the cause when known, else what moved."""
        first = self.message.splitlines()[0]
        return f"{first}; cause: {self.cause}" if self.cause else first

    def _text(self) -> str:
        head = f"cause: {self.cause}\n{self.message}" if self.cause else self.message
        return head if self.report is None else f"{head}\n\n{self.report.to_text()}"


def difference(
    base: list[Observed],
    other: list[Observed],
    *,
    owners: Mapping[str, str | None] | None,
    reproduce: Reproduce,
    labels: tuple[str, str],
    what: tuple[str, str],
    notes: list[str],
) -> HeaderDrift | None:
    """The drift between two builds' requests, or None; differences past the prefix are notes.

    Requests are compared in the order sent; when the same requests went out in another order
    (independent conversations sent concurrently), that is no drift: each prefix is unchanged.
    Otherwise each request is compared with the one of the other build it shares the longest
    prefix with, so a reordering of conversations does not read as their content changing.
    """
    title, where = what
    label_a, label_b = labels
    for position, (a, b) in enumerate(paired(base, other, notes, labels)):
        if a.key == b.key or canonical_bytes(a.view) == canonical_bytes(b.view):
            continue
        report = compare(
            a.view, b.view, owners=owners, reproduce=reproduce, label_a=label_a, label_b=label_b
        )
        which = f"request {position + 1} " if len(base) > 1 or len(other) > 1 else ""
        if (
            a.prefix is not None
            and b.prefix is not None
            and canonical_bytes(a.prefix) == canonical_bytes(b.prefix)
        ):
            notes.append(
                f"{which}differs between {label_a} and {label_b} only after the last"
                f" cache_control breakpoint (information: the cached prefix is unaffected):"
                f" {report.summary}"
            )
            continue
        raw = ""
        if a.body is not None and b.body is not None:
            offset = first_byte_difference(a.body, b.body)
            raw = f"\nthe request bodies as sent first differ at byte {offset:,} of {len(a.body):,}"
        message = f"{title}: {which}bytes differ between {label_a} and {label_b} {where}{raw}"
        return HeaderDrift(message, report)
    if len(base) != len(other):
        return HeaderDrift(
            f"{title}: {label_a} sent {len(base)} requests, {label_b} sent {len(other)} {where}",
            None,
        )
    return None


def paired(
    base: list[Observed], other: list[Observed], notes: list[str], labels: tuple[str, str]
) -> list[tuple[Observed, Observed]]:
    """Each request of `other` with its counterpart in `base` (see `_difference`)."""
    if all(a.key == b.key for a, b in zip(base, other, strict=False)):
        return list(zip(base, other, strict=False))
    keys_a, keys_b = sorted(a.key for a in base), sorted(b.key for b in other)
    if keys_a == keys_b:
        note = (
            f"the same requests went out in another order in {labels[1]} than in {labels[0]}"
            " (independent conversations): each one's prefix is unchanged"
        )
        if note not in notes:
            notes.append(note)
        return []
    unmatched = list(base)
    pairs = []
    for b in other:
        if not unmatched:
            break
        same = next((a for a in unmatched if a.key == b.key), None)
        if same is None:
            mine = canonical_bytes(b.view)
            same = max(
                unmatched, key=lambda a: first_byte_difference(canonical_bytes(a.view), mine)
            )
        unmatched.remove(same)
        pairs.append((same, b))
    return pairs
