"""The digest tier is a fast path, never a second opinion: on every shipped sample and on breaks
planted where digests and the cache model could part, the scan's findings with the tier in front
are exactly those of the cache model judging every request of every session on its bytes (the
gate's walk over the whole session), and those are `harness lint`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.scan._bytes import attach
from harness.scan._extras import pyarrow
from harness.scan._judge import judge
from harness.scan._read import Options, Tally, read_file
from harness.scan._table import schema
from tests.scan.test_one_model import EDITS, lint_breaks
from tests.scan.traces import START, line, session_lines, write_lines
from tests.support.bodies import CHAT_URL, MARK
from tests.support.conversations import conversation
from tests.support.paths import EXAMPLES

TRACES = EXAMPLES / "traces"
SAMPLES = sorted(
    path
    for path in [*TRACES.iterdir(), *(TRACES / "cassettes").iterdir()]
    if path.is_file() and path.suffix != ".py"
)


def both(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The findings with the digest tier in front, and with every request judged on its bytes."""
    tally = Tally()
    batches = list(read_file(path, 0, Options(), tally))
    assert tally.requests, f"{path.name}: nothing read"
    table = pyarrow().Table.from_batches(batches, schema=schema())
    tier = judge(table, fetch=attach).findings.to_pylist()
    full = judge(table, fetch=attach, full=True).findings.to_pylist()
    return tier, full


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_tier_agrees_with_the_full_judge_on_every_sample(path: Path) -> None:
    tier, full = both(path)
    assert tier == full


def shorthand_opening(tmp_path: Path) -> Path:
    """Two conversations take turns on one endpoint; the first one's third request sends its
    opening message in the Messages API's shorthand (a string content): the same opening to the
    cache model, other bytes to the digests."""
    a1, a2 = conversation(1), conversation(2)
    b1 = conversation(1, tools=("alpha", "beta", "gamma"))
    b1["messages"][0]["content"][0]["text"] = "another question entirely"
    opening = a2["messages"][0]
    opening["content"] = opening["content"][0]["text"]  # the shorthand of the same block
    rows = [
        line(a1, session="s", time=START + 1, read=0),
        line(b1, session="s", time=START + 2, read=0),
        line(a2, session="s", time=START + 3, read=100),
    ]
    return write_lines(tmp_path / "shorthand.jsonl", rows)


def ttls_swapped(tmp_path: Path) -> Path:
    """Both requests ask for a 1h and a 5m entry, and both mark the system block: 5m, then 1h.
    The same set of TTLs, another TTL at one place."""
    first, second = conversation(1), conversation(2)
    first["messages"][-1]["content"][-1].pop("cache_control")
    first["tools"][-1]["cache_control"] = {**MARK, "ttl": "1h"}
    first["system"][0]["cache_control"] = {**MARK, "ttl": "5m"}
    second["system"][0]["cache_control"] = {**MARK, "ttl": "1h"}
    second["messages"][-1]["content"][-1]["cache_control"] = {**MARK, "ttl": "5m"}
    rows = [
        line(first, session="s", time=START + 1),
        line(second, session="s", time=START + 2, read=100),
    ]
    return write_lines(tmp_path / "ttls.jsonl", rows)


def opening_after_none(tmp_path: Path) -> Path:
    """A request with no messages between two turns of one conversation: the third continues
    the first (its opening), not the request before it, and its tools moved since the first."""
    first = conversation(1)
    empty = conversation(1, tools=("gamma", "beta", "alpha"))
    empty["messages"] = []
    empty["system"][0]["cache_control"] = MARK  # the same TTLs as the third asks for
    third = conversation(2, tools=("gamma", "beta", "alpha"))
    rows = [
        line(first, session="s", time=START + 1),
        line(empty, session="s", time=START + 2, read=100),
        line(third, session="s", time=START + 3, read=100),
    ]
    return write_lines(tmp_path / "empty.jsonl", rows)


def anthropic_thread(tmp_path: Path) -> Path:
    """A tool runner on a server-held thread: each continuation sends its new message and the
    blocks it sends again; the third sends the system prompt edited (a break), the fourth opens
    with the first request's opening message (still a continuation of the thread)."""
    first = conversation(1)
    opening = first["messages"][0]

    def step(message: Any, **more: Any) -> dict[str, Any]:
        return {
            "model": first["model"],
            "max_tokens": 256,
            "thread": {"type": "continue", "previous_message_id": "msg_1"},
            "messages": [message],
            **more,
        }

    edited = [{**first["system"][0], "text": first["system"][0]["text"] + " Edited."}]
    rows = [
        line(first, session="s", time=START + 1),
        line(step({"role": "user", "content": "go on"}), session="s", time=START + 2, read=90),
        line(
            step({"role": "user", "content": "again"}, system=edited), session="s", time=START + 3
        ),
        line(step(opening), session="s", time=START + 4, read=90),
    ]
    return write_lines(tmp_path / "thread.jsonl", rows)


def another_providers_marker(tmp_path: Path) -> Path:
    """An OpenAI Chat conversation whose messages carry Anthropic's `cache_control` (a proxy
    forwarding it as it came), moved forward each turn: no marker to OpenAI's split, so to the
    cache model each turn rewrites the message that held it (a break), while a digest that set
    every provider's markers aside would see a conversation growing."""
    rows = []
    for turn in range(1, 4):
        messages: list[dict[str, Any]] = []
        for n in range(turn):
            text = f"question {n} of the queue, in detail. " * 30
            messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
            messages.append({"role": "assistant", "content": f"answer {n}"})
        messages.pop()
        messages[-1]["content"][0]["cache_control"] = MARK
        body = {"model": "gpt-4o", "messages": messages}
        rows.append(line(body, session="s", time=START + turn, url=CHAT_URL))
    return write_lines(tmp_path / "openai.jsonl", rows)


def schema_keys_moved(tmp_path: Path) -> Path:
    """The third request sends a tool's schema with its keys in another order (a framework that
    rebuilds schemas from a set: bifrost #2082): the same tools to a key-sorted trace, other
    bytes to the provider, whose body the proxy logged as sent."""
    rows = []
    for turn in range(1, 5):
        body = conversation(turn)
        if turn >= 3:
            schema = body["tools"][1]["input_schema"]
            schema["properties"] = {"q": {"type": "string"}}
            body["tools"][1]["input_schema"] = dict(reversed(list(schema.items())))
        else:
            body["tools"][1]["input_schema"]["properties"] = {"q": {"type": "string"}}
        rows.append(line(body, session="s", time=START + turn, read=100 if turn > 1 else 0))
    return write_lines(tmp_path / "schema.jsonl", rows)


def settings_keys_moved(tmp_path: Path) -> Path:
    """The third request sends its top-level members in another order, nothing else changed."""
    rows = []
    for turn in range(1, 5):
        body = conversation(turn)
        if turn >= 3:
            body = {
                key: body[key] for key in ("messages", "system", "tools", "max_tokens", "model")
            }
        rows.append(line(body, session="s", time=START + turn, read=100 if turn > 1 else 0))
    return write_lines(tmp_path / "order.jsonl", rows)


def counters_miss(tmp_path: Path) -> Path:
    """A conversation that keeps its prefix byte for byte, and the provider's counters say its
    fourth request read nothing though the third had cached tokens: an unexplained miss, seen
    by the digests alone."""
    rows = [
        line(conversation(turn), session="s", time=START + turn, read=0 if turn in (1, 4) else 90)
        for turn in range(1, 6)
    ]
    return write_lines(tmp_path / "miss.jsonl", rows)


PLANTED = {
    "a tool schema's keys moved": schema_keys_moved,
    "the top-level keys moved": settings_keys_moved,
    "a miss only the counters show": counters_miss,
    "another provider's marker": another_providers_marker,
    "anthropic thread": anthropic_thread,
    "shorthand opening": shorthand_opening,
    "ttls swapped": ttls_swapped,
    "opening after none": opening_after_none,
}


@pytest.mark.parametrize("name", list(PLANTED))
def test_the_tier_agrees_with_the_full_judge_where_digests_could_mislead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = PLANTED[name](tmp_path)
    tier, full = both(path)
    assert tier == full
    words = [(f["request"], f["verdict"]) for f in full if f["verdict"] != "unexplained_miss"]
    assert words == lint_breaks(path, capsys)


@pytest.mark.parametrize("name", list(EDITS))
def test_the_tier_agrees_with_the_full_judge_on_each_planted_edit(
    tmp_path: Path, name: str
) -> None:
    path = write_lines(tmp_path / "s.jsonl", session_lines("s", turns=5, edit=EDITS[name]))
    tier, full = both(path)
    assert tier == full


EXPECTED = {
    "a tool schema's keys moved": [(3, "tools_changed", "exact")],
    "the top-level keys moved": [],  # not a break on Anthropic (the near miss of the above)
    "a miss only the counters show": [(4, "unexplained_miss", "counters")],
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_what_the_tier_finds_on_the_planted_edits(tmp_path: Path, name: str) -> None:
    tier, _ = both(PLANTED[name](tmp_path))
    assert [(f["request"], f["verdict"], f["evidence"]) for f in tier] == EXPECTED[name]
