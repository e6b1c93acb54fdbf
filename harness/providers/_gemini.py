"""Google Gemini `generateContent`: tools, then the system instruction, then the contents.

Gemini caches implicitly (2.5 and later): a request whose beginning matches one seen recently is
served from the cache, with no guarantee and no marker, so the whole request is the prefix the
next one must extend, as for OpenAI. Explicit caching puts the system instruction, the tools and
the first contents in a `CachedContent` that a request names in `cachedContent`: the name is then
the cache key, a setting. Reached on the Gemini API (`generativelanguage.googleapis.com`) and on
Vertex AI (`*-aiplatform.googleapis.com`), as `:generateContent` or `:streamGenerateContent`; the
model is in the URL path (`/models/gemini-2.5-flash:generateContent`), so it is read from there.

Settings: `toolConfig` (the function-calling mode, Gemini's tool choice), `cachedContent`, and
`generationConfig` member by member, less its sampling and output limits (`thinkingConfig`,
`responseSchema` and the response type stay). `safetySettings` and `labels` are bookkeeping. The
rules pack says which is which (`_classify.classify`). The hit signal is
`usageMetadata.cachedContentTokenCount`, in a streamed answer too (each chunk of the JSON-array
stream or of `alt=sse` carries `usageMetadata`; the fullest counts); Gemini gives no miss reason.

Bodies come camelCase (google-genai: `functionDeclarations`, `systemInstruction`,
`cachedContent`) or snake_case (litellm, the REST API's proto names: `function_declarations`,
`system_instruction`, `cached_content`): both are read, under the keys they were sent with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness._shared._reasons import Vocabulary
from harness._shared._views import CacheView, RequestSplit
from harness.providers._base import (
    CacheUsage,
    Provider,
    integer,
    member,
    model_in_path,
    optional,
)
from harness.providers._classify import classify

GEMINI: Final = "gemini"

_METHOD: Final = re.compile(r"/models/(?P<model>[^/:]+):(?:stream)?[gG]enerateContent$")
_SYSTEM_KEYS: Final = ("systemInstruction", "system_instruction")
_PROMPT: Final = frozenset({"tools", "contents", *_SYSTEM_KEYS})


def model_in(url: str | None) -> str | None:
    return model_in_path(_METHOD, url)


class Gemini(Provider):
    name = GEMINI
    reasons = Vocabulary(blocks={"contents": "messages_changed"})

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            return model_in(url) is not None and isinstance(body.get("contents"), list)
        return isinstance(body.get("contents"), list) and "messages" not in body

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return self.split_url(body, headers, None)

    def split_url(
        self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
    ) -> RequestSplit:
        settings, bookkeeping = classify(GEMINI, body, _PROMPT)
        model = model_in(url)
        if model is not None:
            settings["model"] = model
        settings = dict(sorted(settings.items()))
        blocks: dict[str, Any] = {}
        if "tools" in body:
            blocks["tools"] = body["tools"]
        for key in _SYSTEM_KEYS:
            if key in body:
                blocks[key] = body[key]
                break
        if "contents" in body:
            blocks["contents"] = body["contents"]
        view = CacheView(settings=settings, blocks=blocks, provider=GEMINI)
        return RequestSplit(GEMINI, view, view, "exact-prefix", bookkeeping=bookkeeping)

    def usage(self, response: Any) -> CacheUsage | None:
        usage = member(response, "usageMetadata")
        if not isinstance(usage, dict):
            usage = member(response, "usage_metadata")
        if not isinstance(usage, dict):
            return None
        read = integer(
            usage.get("cachedContentTokenCount", usage.get("cached_content_token_count"))
        )
        prompt = integer(usage.get("promptTokenCount", usage.get("prompt_token_count")))
        output = usage.get("candidatesTokenCount", usage.get("candidates_token_count"))
        return CacheUsage(
            GEMINI,
            read_tokens=read,
            uncached_tokens=prompt - read,
            output_tokens=optional(output),
        )
