"""How many tokens a prefix holds: the one estimate every rule asks, so it is one place to improve.

Without a tokenizer the harness counts bytes: about four bytes of JSON or English text a token
(`BYTES_PER_TOKEN`, the drift report's rule of thumb; CJK text and long identifiers run denser).
When a recorded response says how many input tokens the whole request held (the provider's usage
counters), the request's own ratio of tokens to bytes is used instead, if it is plausible (1.5 to
12 bytes a token): a stand-in upstream's made-up usage (`"input_tokens": 10` for a 20 KB request)
must not make a prefix look uncacheable. Without usage, a token counter (a tokenizer where one
is installed, or the project's: `harness.cache._counters`) gives the request's ratio. Either way
a count is an estimate, and a message says which (`Estimate.how`): "~1,234 tokens (bytes / 4)".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from harness.cache._counters import Counted
from harness.drift._wording import BYTES_PER_TOKEN

__all__ = ["PLAUSIBLE", "Estimate", "estimate"]

PLAUSIBLE: Final = (1.5, 12.0)  # bytes a token a provider's count may imply, to be believed


class Estimate(NamedTuple):
    tokens: int
    how: str  # "bytes / 4", or "scaled by the response's usage"

    def __str__(self) -> str:
        return f"~{self.tokens:,} tokens ({self.how})"


def estimate(
    size: int,
    *,
    total_size: int = 0,
    total_tokens: int | None = None,
    counted: Callable[[], Counted | None] | None = None,
) -> Estimate:
    """The tokens of a prefix of `size` bytes, in a request of `total_size` bytes that the
    provider counted as `total_tokens` input tokens (when a response said so), or that a token
    counter (`harness.cache._counters`) counts (`counted`, asked only when the usage does not
    answer: a tokenizer reads the whole request)."""
    if (
        total_tokens
        and total_size > 0
        and PLAUSIBLE[0] <= total_size / total_tokens <= PLAUSIBLE[1]
    ):
        return Estimate(round(size * total_tokens / total_size), "scaled by the response's usage")
    found = counted() if counted is not None and total_size > 0 else None
    if found is not None:
        return Estimate(round(size * found.tokens / total_size), found.how)
    return Estimate(size // BYTES_PER_TOKEN, f"bytes / {BYTES_PER_TOKEN}")
