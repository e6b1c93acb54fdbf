"""An Anthropic request's markers, deferred tools and images are found wherever they are, though
the split looks for them only where they can be.

The split asks its tools for `cache_control` and `defer_loading` in one pass over plain dicts, and
reads the messages' JSON once for a marker or an image before walking them. Each near miss puts
the one thing at the one place a shortcut could miss it: the last of 200 tools, a tool that is a
dict of another type, a message's last block, a tool result's content; and the word as a value,
where it is no marker.
"""

from __future__ import annotations

import copy
from typing import Any

from harness.providers import split_request
from harness.providers._anthropic import DEFERRED, IMAGES

URL = "https://api.anthropic.com/v1/messages"
MARK = {"type": "ephemeral"}


class Tool(dict[str, Any]):
    """A tool given as a dict of another type (a client library's mapping)."""


def body(tools: int = 200) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "tools": [
            {"name": f"t{n}", "description": "d", "input_schema": {"type": "object"}}
            for n in range(tools)
        ],
        "system": [{"type": "text", "text": "You are terse."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        ],
    }


def breakpoints(value: dict[str, Any]) -> tuple[str, ...]:
    split = split_request(value, url=URL)
    assert split is not None
    return split.breakpoints


def test_a_marker_is_found_at_each_place_it_can_stand() -> None:
    assert breakpoints(body()) == ()
    last_tool = body()
    last_tool["tools"][-1]["cache_control"] = MARK
    assert breakpoints(last_tool) == ("/tools/199/cache_control",)
    other_type = body()
    other_type["tools"][7] = Tool(other_type["tools"][7], cache_control=MARK)
    assert breakpoints(other_type) == ("/tools/7/cache_control",)
    system = body()
    system["system"][0]["cache_control"] = MARK
    assert breakpoints(system) == ("/system/0/cache_control",)
    message = body()
    message["messages"][-1]["content"][-1]["cache_control"] = MARK
    assert breakpoints(message) == ("/messages/2/content/0/cache_control",)
    everywhere = copy.deepcopy(last_tool)
    everywhere["system"][0]["cache_control"] = MARK
    everywhere["messages"][0]["content"][0]["cache_control"] = MARK
    assert breakpoints(everywhere) == (
        "/tools/199/cache_control",
        "/system/0/cache_control",
        "/messages/0/content/0/cache_control",
    )


def test_the_word_as_a_value_is_no_marker() -> None:
    said = body()
    said["tools"][3]["description"] = "cache_control"
    said["messages"][0]["content"][0]["text"] = "cache_control"
    said["messages"][1]["content"][0]["type"] = "cache_control"
    assert breakpoints(said) == ()


def test_a_deferred_tool_is_kept_apart_wherever_it_is() -> None:
    for place, kind in ((199, dict), (0, Tool)):
        value = body()
        value["tools"][place] = kind(value["tools"][place], defer_loading=True)
        split = split_request(value, url=URL)
        assert split is not None
        assert [t["name"] for t in split.bookkeeping[DEFERRED]] == [f"t{place}"]
        assert len(split.view.blocks["tools"]) == 199
    near = body()
    near["tools"][5]["defer_loading"] = False  # not deferred: in the prefix
    split = split_request(near, url=URL)
    assert split is not None and DEFERRED not in split.bookkeeping
    assert len(split.view.blocks["tools"]) == 200


def test_an_image_is_counted_wherever_it_is() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    inside = body()
    result = {"type": "tool_result", "tool_use_id": "c1", "content": [image, image]}
    inside["messages"][2]["content"].append(result)
    split = split_request(inside, url=URL)
    assert split is not None and split.view.settings[IMAGES] == 2
    word = body()
    word["messages"][0]["content"][0]["text"] = '"image"'
    split = split_request(word, url=URL)
    assert split is not None and IMAGES not in split.view.settings
