"""A JSON-pointer oracle for the drift tests: what a pointer names, and where its bytes are.

Written independently of `harness.drift` (plain dict/list walking over msgspec's compact
encoding), so the property tests of the drift report and of `first_difference` check the
harness against something that does not share its code.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

MISSING: Final = object()


def _enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


def pointer_tokens(pointer: str) -> list[str]:
    """The unescaped reference tokens of an RFC 6901 pointer ("" is the whole document)."""
    if pointer == "":
        return []
    assert pointer.startswith("/"), pointer
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def child(node: Any, token: str) -> Any:
    """The member `token` names in `node`, or MISSING."""
    if isinstance(node, dict):
        return node.get(token, MISSING)
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return MISSING


def member_span(document: Any, tokens: list[str]) -> tuple[int, int] | None:
    """The bytes of the member `tokens` names in encode(document): its separator, key and value
    (the whole document for no tokens); None when it is not there."""
    start, end, node = 0, len(_enc(document)), document
    member_start = start
    for token in tokens:
        position = start + 1  # after "{" or "["
        if isinstance(node, dict) and token in node:
            for index, (key, item) in enumerate(node.items()):
                if key == token:
                    member_start = position - 1 if index else position
                    start = position + len(_enc(key)) + 1
                    end = start + len(_enc(item))
                    break
                position += len(_enc(key)) + 1 + len(_enc(item)) + 1
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            index = int(token)
            for item in node[:index]:
                position += len(_enc(item)) + 1
            member_start = position - 1 if index else position
            start, end, node = position, position + len(_enc(node[index])), node[index]
        else:
            return None
    return member_start, end
