"""Request bodies from a case's compact description, deterministically.

Prefix sizes decide verdicts (a prefix under the model's minimum caches nothing), so bodies must
be big, and exactly as big as the case says. Writing 8 KB of text into a case file would hide
what the case is about; a template says it instead:

- `{"$pad": N}` as a string value: filler text making the enclosing block exactly N tokens in
  the harness's documented estimate (docs/rules.md, "Tokens": a block's JSON, cache markers left
  out, / 4 bytes a token). At the top level of a body (a Responses `instructions` string) the
  string alone is the block. The filler is words, no digits: nothing in it reads as a date, an
  id or a number.
- `{"$repeat": N, "item": T}` inside a list: N copies of T, `{i}` in its strings replaced by
  0, 1, ... (plus `"start"`).
- `{"$use": NAME, "patch": [...]}`: the file's template NAME; `{"$from": K, "patch": [...]}`:
  the case's request K (0-based), as built. `patch` is JSON Patch (RFC 6902: add, remove,
  replace; "-" appends to a list), applied after the template is built.
- `"$url"` at the top of a built body: the URL this request is sent to (then removed).

Everything is deterministic: the same case file always gives the same bytes.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

__all__ = ["MARKERS", "block_tokens", "build_requests", "filler"]

# Keys whose values are cache markers: left out of a block's size, as the providers bill them.
MARKERS: Final = ("cache_control", "cachePoint", "prompt_cache_breakpoint")
BYTES_PER_TOKEN: Final = 4
_WORDS: Final = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut",
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco",
    "laboris nisi aliquip ex ea commodo consequat",
)


def filler(length: int) -> str:
    """`length` characters of words (ASCII, no digits, nothing JSON escapes)."""
    words = " ".join(_WORDS).split(" ")
    text = ""
    index = 0
    while len(text) < length:
        text += words[index % len(words)] + " "
        index += 1
    return text[:length]


def _encoded(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in MARKERS}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and set(v) <= set(MARKERS))]
    return value


def block_tokens(block: Any) -> float:
    """A block's tokens in the harness's documented estimate: its JSON, markers left out, / 4."""
    return _encoded(_strip(block)) / BYTES_PER_TOKEN


def _is_pad(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"$pad"} and isinstance(value["$pad"], int)


def _pad_block(block: dict[str, Any]) -> dict[str, Any]:
    """`block` with its one `$pad` string filled so the block is exactly that many tokens."""
    keys = [key for key, value in block.items() if _is_pad(value)]
    if len(keys) != 1:
        raise ValueError(f"a block holds one $pad, not {len(keys)}: {block}")
    key = keys[0]
    tokens = block[key]["$pad"]
    sized = {**block, key: ""}
    room = tokens * BYTES_PER_TOKEN - _encoded(_strip(sized))
    if room < 0:
        raise ValueError(f"{tokens} tokens is smaller than the block around the padding: {block}")
    return {**block, key: filler(room)}


def _pad_string(tokens: int) -> str:
    room = tokens * BYTES_PER_TOKEN - _encoded("")
    if room < 0:
        raise ValueError(f"{tokens} tokens is too small for a string")
    return filler(room)


def _expand(value: Any) -> Any:
    """Expand `$pad` and `$repeat` below a body's top level."""
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            if isinstance(item, dict) and "$repeat" in item:
                start = item.get("start", 0)
                for index in range(item["$repeat"]):
                    out.append(_expand(_numbered(item["item"], start + index)))
            else:
                out.append(_expand(item))
        return out
    if isinstance(value, dict):
        if _is_pad(value):
            raise ValueError("a $pad must be a value inside a block")
        expanded = {k: v if _is_pad(v) else _expand(v) for k, v in value.items()}
        if any(_is_pad(v) for v in expanded.values()):
            return _pad_block(expanded)
        return expanded
    return value


def _numbered(template: Any, index: int) -> Any:
    if isinstance(template, str):
        return template.replace("{i}", str(index))
    if isinstance(template, list):
        return [_numbered(v, index) for v in template]
    if isinstance(template, dict):
        return {k: _numbered(v, index) for k, v in template.items()}
    return template


def _body(template: Any) -> dict[str, Any]:
    if not isinstance(template, dict):
        raise ValueError(f"a body is an object, not {template!r}")
    body = {k: _pad_string(v["$pad"]) if _is_pad(v) else v for k, v in template.items()}
    built = _expand(body)
    assert isinstance(built, dict)
    return built


def build_requests(
    templates: list[Any], bodies: dict[str, Any]
) -> list[tuple[dict[str, Any], str | None]]:
    """`(body, url)` for each of a case's requests (`url`: the body's own `$url`, if any)."""
    built: list[dict[str, Any]] = []
    for template in templates:
        if isinstance(template, dict) and "$use" in template:
            name = template["$use"]
            if name not in bodies:
                raise ValueError(f"no template named {name!r}")
            body = _body(copy.deepcopy(bodies[name]))
        elif isinstance(template, dict) and "$from" in template:
            body = copy.deepcopy(built[template["$from"]])
        else:
            body = _body(copy.deepcopy(template))
            built.append(body)
            continue
        for operation in template.get("patch", []):
            _apply(body, operation)
        built.append(_body(body))
    return [(body, body.pop("$url", None)) for body in (copy.deepcopy(b) for b in built)]


def _parent(document: Any, path: str) -> tuple[Any, str]:
    if not path.startswith("/"):
        raise ValueError(f"a JSON pointer starts with '/': {path!r}")
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    node = document
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, parts[-1]


def _apply(document: dict[str, Any], operation: dict[str, Any]) -> None:
    """One JSON Patch operation, in place: add, remove or replace."""
    op, path = operation["op"], operation["path"]
    node, last = _parent(document, path)
    value = copy.deepcopy(operation.get("value"))
    if isinstance(node, list):
        if op == "add":
            node.insert(len(node) if last == "-" else int(last), value)
        elif op == "remove":
            del node[int(last)]
        elif op == "replace":
            node[int(last)] = value
        else:
            raise ValueError(f"unknown patch op {op!r}")
        return
    if op in ("add", "replace"):
        if op == "replace" and last not in node:
            raise ValueError(f"replace at {path}: nothing there")
        node[last] = value
    elif op == "remove":
        del node[last]
    else:
        raise ValueError(f"unknown patch op {op!r}")
