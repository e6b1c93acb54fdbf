"""A conversation inlined into one growing message (DSPy's ReAct) is judged by its byte prefix.

Each step sends the system prompt and one user message that holds the whole trajectory so far: a
later message that extends the earlier text is an extension; one whose start was rewritten is a
break; a new question on the same endpoint is a new conversation, not a break; and a tool moved in
the system prompt between steps is found (before, every step looked like a new conversation).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from harness.capture import CaptureSession

CHAT = "https://api.openai.com/v1/chat/completions"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
SYSTEM = "Your input fields are: question, trajectory. Tools: (1) search, (2) lookup, (3) finish."
HEAD = "[[ ## question ## ]]\nWhat is the capital of the country north of Spain?\n\n"


def session() -> CaptureSession:
    return CaptureSession(
        upstream=httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True}))
    )


def step(text: str, system: str = SYSTEM) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
    }


def trajectory(steps: int) -> str:
    lines = [f"[[ ## thought_{i} ## ]]\nI should search step {i}.\n" for i in range(steps)]
    return HEAD + "[[ ## trajectory ## ]]\n" + "".join(lines)


def run(capture: CaptureSession, *bodies: dict[str, Any], url: str = CHAT) -> None:
    for body in bodies:
        capture.httpx2_client().post(url, content=json.dumps(body))


def test_a_message_that_grows_is_an_extension_and_is_judged() -> None:
    capture = session()
    run(capture, step(trajectory(1)), step(trajectory(2)), step(trajectory(3)))
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.judged["openai-chat"] == 2


TAIL = "\nRespond with the corresponding output fields, starting with `[[ ## next_thought ## ]]`."


def test_steps_inserted_before_a_fixed_tail_are_an_extension_as_dspy_sends_them() -> None:
    capture = session()
    run(capture, *(step(trajectory(n) + TAIL) for n in (1, 2, 3)))
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.judged["openai-chat"] == 2
    # the near miss: the tail changed too (another module's instructions) is not this thread
    run(capture, step(trajectory(4) + "\nRespond with `[[ ## answer ## ]]`.", "Extract."))
    assert capture.prefix_breaks() == [] and capture.prefix_chain().judged["openai-chat"] == 2
    # and a tool moved in the system prompt between two such steps is found
    moved = SYSTEM.replace("(1) search, (2) lookup", "(1) lookup, (2) search")
    run(capture, step(trajectory(5) + TAIL, moved))
    (found,) = capture.prefix_breaks()
    assert found.block == "system"


def test_a_tool_moved_in_the_system_prompt_between_steps_is_a_break() -> None:
    capture = session()
    moved = SYSTEM.replace("(1) search, (2) lookup", "(1) lookup, (2) search")
    run(capture, step(trajectory(1)), step(trajectory(2), moved))
    (found,) = capture.prefix_breaks()
    assert found.block == "system"


def test_a_rewritten_start_is_a_break() -> None:
    capture = session()
    rewritten = "[[ ## step at 12:02 ## ]]\n" + trajectory(2)
    run(capture, step("[[ ## step at 12:01 ## ]]\n" + trajectory(1)), step(rewritten))
    (found,) = capture.prefix_breaks()
    assert found.block == "messages"


def test_a_new_question_on_the_same_endpoint_is_a_new_conversation() -> None:
    capture = session()
    other = trajectory(2).replace("north of Spain", "south of France, by the sea")
    run(capture, step(trajectory(1)), step(other))
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.judged["openai-chat"] == 0


def test_gemini_parts_grow_too() -> None:
    def body(text: str) -> dict[str, Any]:
        return {
            "systemInstruction": {"parts": [{"text": SYSTEM}]},
            "contents": [{"role": "user", "parts": [{"text": text}]}],
        }

    capture = session()
    run(capture, body(trajectory(1)), body(trajectory(2)), url=GEMINI)
    chain = capture.prefix_chain()
    assert chain.breaks == [] and chain.judged["gemini"] == 1
    run(capture, body("x" + trajectory(3)), url=GEMINI)  # its first line rewritten
    (found,) = capture.prefix_breaks()
    assert found.index == 3 and found.block == "contents"


def test_a_tool_moved_in_the_prompt_and_the_message_of_a_new_step_is_found() -> None:
    # DSPy names its tools in the message's instructions too: the message is new as well, so
    # only the same head in another order ties the step to the one before it
    def tail(tools: str) -> str:
        return f"\nRespond with `next_tool_name` (Literal[{tools}])."

    capture = session()
    moved = SYSTEM.replace("(1) search, (2) lookup", "(1) lookup, (2) search")
    run(capture, step(trajectory(1) + tail("'search', 'lookup'")))
    run(capture, step(trajectory(1) + tail("'lookup', 'search'"), moved))
    (found,) = capture.prefix_breaks()
    assert found.block == "system"
    # the near miss: the same head and a new question is a new conversation
    other = trajectory(1).replace("north of Spain", "east of Chile") + tail("'lookup', 'search'")
    run(capture, step(other, moved))
    assert len(capture.prefix_breaks()) == 1
