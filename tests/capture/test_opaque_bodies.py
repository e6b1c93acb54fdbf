"""A body no provider claims, on a captured host, is still gated: as opaque bytes, whole.

Requests go through a capture session's client to a stand-in upstream; the session's
`prefix_chain()` is what the plugin gates every captured test on, and `harness check` walks a
cassette's requests the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import pytest

from harness.capture import CaptureFile, CaptureSession, Exchange
from harness.capture._cassette import HttpRequest, HttpResponse
from harness.cli import main

UNKNOWN = "https://api.cohere.com/v1/some-route"
LOCAL = "http://localhost:11434/api/chat"


def session() -> CaptureSession:
    return CaptureSession(
        upstream=httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True}))
    )


def body(turns: list[str], tools: tuple[str, ...] = ("alpha", "beta", "gamma")) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": text} for text in turns],
        "tools": [{"type": "function", "function": {"name": name}} for name in tools],
    }


def post(capture: CaptureSession, url: str, content: bytes | dict[str, Any]) -> None:
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    capture.httpx2_client().post(url, content=data)


@pytest.mark.parametrize("url", [UNKNOWN, LOCAL])
def test_a_growing_conversation_in_an_unknown_body_passes(url: str) -> None:
    capture = session()
    for turns in (["a"], ["a", "b"], ["a", "b", "c"]):
        post(capture, url, body(turns))
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.seen["opaque"] == 3 and chain.judged["opaque"] == 2
    assert chain.unrecognised == 0


def test_a_tool_reordered_in_an_unknown_body_is_a_break_said_to_be_judged_as_opaque_bytes() -> None:
    capture = session()
    post(capture, UNKNOWN, body(["a"]))
    post(capture, UNKNOWN, body(["a", "b"], ("beta", "alpha", "gamma")))
    (found,) = capture.prefix_breaks()
    text = found.to_text()
    assert found.report.kind == "opaque" and found.report.pointer.startswith("/body/tools/0")
    assert "judged as opaque bytes" in text
    assert "same tool names in the same order" not in text


def test_an_edited_earlier_message_in_an_unknown_body_is_a_break() -> None:
    capture = session()
    post(capture, UNKNOWN, body(["a", "b"]))
    post(capture, UNKNOWN, body(["A", "b", "c"]))
    assert len(capture.prefix_breaks()) == 1


def test_a_text_body_must_extend_the_earlier_bytes() -> None:
    capture = session()
    post(capture, LOCAL, b"question: why?")
    post(capture, LOCAL, b"question: why? answer: because")
    assert capture.prefix_breaks() == []
    post(capture, LOCAL, b"Question: why? answer: because. more")
    (found,) = capture.prefix_breaks()
    assert found.report.kind == "opaque" and "judged as opaque bytes" in found.to_text()


def test_a_body_that_is_not_utf8_is_judged_byte_for_byte() -> None:
    capture = session()
    post(capture, LOCAL, b"\xff\xfe binary")
    post(capture, LOCAL, b"\xff\xfe binary and more")
    assert capture.prefix_breaks() == []
    post(capture, LOCAL, b"\xfe\xfe binary and more")
    assert len(capture.prefix_breaks()) == 1


def test_harness_check_judges_an_unknown_body_in_a_cassette(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cassette(second: tuple[str, ...]) -> bytes:
        exchanges = tuple(
            Exchange(
                HttpRequest(method="POST", url=UNKNOWN, json=body(turns, tools)),
                HttpResponse(status=200, json={"ok": True}),
            )
            for turns, tools in ((["a"], ("alpha", "beta")), (["a", "b"], second))
        )
        return msgspec.json.encode(CaptureFile(exchanges=exchanges))

    folder = tmp_path / "fixtures" / "cassettes" / "test_x"
    folder.mkdir(parents=True)
    (folder / "test_y.json").write_bytes(cassette(("alpha", "beta")))
    assert main(["check", str(tmp_path)]) == 0
    capsys.readouterr()
    (folder / "test_y.json").write_bytes(cassette(("beta", "alpha")))
    assert main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "body_changed" in out and "judged as opaque bytes" in out


def test_batches_of_plain_inputs_are_not_taken_for_an_edited_conversation() -> None:
    capture = session()
    embeddings = "https://api.openai.com/v1/embeddings"
    post(capture, embeddings, {"model": "e", "input": ["first", "batch"]})
    post(capture, embeddings, {"model": "e", "input": ["other", "batch", "here"]})
    assert capture.prefix_breaks() == []
    # the near miss: a batch that opens the same way and then differs is judged
    post(capture, embeddings, {"model": "e", "input": ["first", "changed"]})
    assert len(capture.prefix_breaks()) == 1


def test_an_upload_is_not_judged() -> None:
    capture = session()
    client = capture.httpx2_client()
    for boundary in ("aaa", "bbb"):
        client.post(
            "https://api.openai.com/v1/audio/transcriptions",
            content=f"--{boundary}\r\nfile\r\n--{boundary}--".encode(),
            headers={"content-type": f"multipart/form-data; boundary={boundary}"},
        )
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.unrecognised == 2


def test_a_cohere_break_says_no_cache_is_lost() -> None:
    capture = session()
    chat = "https://api.cohere.com/v2/chat"
    post(capture, chat, body(["a"]))
    post(capture, chat, body(["a", "b"], ("beta", "alpha", "gamma")))
    (found,) = capture.prefix_breaks()
    assert found.verdict == "tools_changed" and found.report.kind == "reorder"
    assert "cohere documents no prompt caching: no cache is lost" in found.to_text()
