"""What the prefix-chain gate saw in one captured test, and the run's tally of it.

- `marker_waivers`: a `moves_header(reason=..., only=...)` marker as a waiver of just that move
  (`harness.capture._waivers`), instead of the whole test's exemption.
- `waived_breaks`: the gate's breaks less those a waiver takes (`only=`, `known_moves`); the
  waived ones stay on the session, as notes and as the exemption its cassette records.
- `record_chain` (in the test's process) and `take_chain` (the controller's side): the gate's
  coverage per provider, the requests to endpoints that cache nothing, stale exemptions and the
  project's known moves no test used, as plain data that crosses pytest-xdist.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from harness.pytest_plugin._api import PROP_CHAIN, moves_header_only, send
from harness.pytest_plugin._state import RunState

if TYPE_CHECKING:
    from harness.capture._session import CaptureSession

__all__ = ["marker_waivers", "record_chain", "take_chain", "waived_breaks"]


def marker_waivers(item: pytest.Item, session: CaptureSession) -> list[Any]:
    """`moves_header(reason=..., only=...)`: a waiver of just that move, and no whole-test
    exemption (`harness.capture._waivers`)."""
    from harness.capture._waivers import waiver

    only = moves_header_only(item)
    if session.moves_header is None or only is None:
        return []
    reason, session.moves_header = session.moves_header, None
    return [waiver(reason, only, source=f"@pytest.mark.moves_header on {item.nodeid}")]


def waived_breaks(session: CaptureSession, breaks: list[Any]) -> list[Any]:
    """The breaks no waiver waives (`moves_header(only=...)`, `known_moves`); the waived ones
    stay on the session, as notes and as the exemption its cassette records."""
    from harness.capture._waivers import waive

    kept, session.waived = waive(breaks, session.waivers)
    session.notes.extend(
        f"expected header move ({found.reason}): {item.to_text().splitlines()[0]}"
        for item, found in session.waived
    )
    return kept


def record_chain(item: pytest.Item, session: CaptureSession, *, moved: int) -> None:
    """Tell the controller what the gate saw in this test (plain data, it crosses xdist)."""
    chain = session.prefix_chain()
    # requests to endpoints that cache nothing (token counting...): listed as such, not as
    # requests no provider recognised
    left_out = Counter(what for r in session.requests if (what := r.non_cache) is not None)
    send(
        item,
        PROP_CHAIN,
        {
            "seen": dict(chain.seen),
            "judged": dict(chain.judged),
            "unrecognised": max(chain.unrecognised - sum(left_out.values()), 0),
            "non_cache": dict(left_out),
            "proofs": session.proving_calls,
            "moved": moved,
            "exempt": session.moves_header
            if session.moves_header is not None
            else next(
                (w.reason for w in session.waivers if not w.source.endswith("known_moves")), None
            ),
            "known": [w.reason for w in session.config.known_moves],
            "known_used": [w.reason for _, w in session.waived if w.source.endswith("known_moves")],
        },
    )


def take_chain(settings: RunState, nodeid: str, value: dict[str, Any]) -> None:
    """The controller's side of `record_chain`."""
    settings.chain_tests += 1
    settings.chain_seen.update(Counter(value.get("seen", {})))
    settings.chain_judged.update(Counter(value.get("judged", {})))
    settings.chain_unrecognised += int(value.get("unrecognised", 0))
    settings.chain_non_cache.update(Counter(value.get("non_cache", {})))
    settings.chain_proofs += int(value.get("proofs", 0))
    if value.get("exempt") is not None and not value.get("moved"):
        settings.stale.add(nodeid)
    for reason in value.get("known", ()):
        settings.known_moves.setdefault(str(reason), False)
    for reason in value.get("known_used", ()):
        settings.known_moves[str(reason)] = True
