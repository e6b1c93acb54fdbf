"""The files `harness init` writes into a project: the pytest configuration, a conftest, and a
first proof that the project's tool order is stable.

Each works as written: the conftest's fixtures return the plugin's own defaults (the stand-in
upstream is there, commented, for recording without an API key), and the proof's example build
loads tools concurrently, as agents do, and sorts them, so it passes until the user points it at
their agent. Deleting the sort makes it fail: the example shows the fix, not a toy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness._shared._distribution import DISTRIBUTION
from harness.cli.init._detect import EntryPoint, Sdk
from harness.cli.init._pytest_config import settings_lines

__all__ = [
    "CONFTEST",
    "PROOF",
    "PROOF_NAME",
    "agent_conftest",
    "agent_proof",
    "conftest",
    "pytest_ini",
]

PROOF_NAME: Final = "test_prompt_cache.py"


def pytest_ini(src: bool = False) -> str:
    """A `pytest.ini` for a project that has no pytest configuration yet."""
    lines = [
        f"# Written by `harness init` ({DISTRIBUTION}). Its folder is pytest's rootdir, so the",
        "# harness's recordings land in the same fixtures/ wherever pytest is started.",
        "[pytest]",
        "# the project's own modules importable from tests (from my_agent import build_request)",
        "pythonpath = . src" if src else "pythonpath = .",
        *settings_lines("ini"),
    ]
    return "\n".join(lines) + "\n"


CONFTEST: Final = f'''\
"""Settings of the prompt-cache harness for these tests (written by `harness init`).

The `harness` pytest plugin is active as soon as {DISTRIBUTION} is installed. A test marked
`@pytest.mark.header_capture` sends every request that any httpx or httpx2 client makes to a
model provider (so the anthropic and openai SDKs, pydantic-ai, openai-agents, LangChain) through
a capture session: recorded once into fixtures/cassettes/ (`pytest --harness-mode=record`),
replayed offline ever after, and failed when the tools or the system prompt move. The two
fixtures below are its settings for the tests in this folder and below; as written they return
the plugin's defaults.
"""

from __future__ import annotations

from typing import Any

import pytest

# To record without an API key, answer from a stand-in: uncomment this, and return
# stand_in() from harness_upstream. harness.upstream.StandIn answers Anthropic, OpenAI (chat and
# Responses), Gemini and Bedrock Converse in each one's own shape, streamed when asked, from a
# script of turns: text("..."), tool_call("get_weather", {{"city": "Paris"}}).
#
# from harness.upstream import StandIn, text
#
#
# def stand_in() -> StandIn:
#     """Every request is answered with this text."""
#     return StandIn([text("Hello from the stand-in.")])


@pytest.fixture
def harness_upstream() -> Any:
    """Where `pytest --harness-mode=record` sends the captured requests. None: the provider's
    API, with the key the SDK reads (ANTHROPIC_API_KEY, OPENAI_API_KEY)."""
    return None  # or: return stand_in()


@pytest.fixture
def harness_capture_config() -> dict[str, Any]:
    """The project's capture settings (the keys of harness.capture.CaptureConfig); keyword
    arguments of @pytest.mark.header_capture(...) override them for one test."""
    return {{
        # "redact_headers": ["x-tenant-token"],  # redacted besides the default secret headers
        # "redact_query": ["session"],  # query parameters to redact
        # "secret_patterns": [r"acme_live_[0-9a-f]{{32}}"],  # a recording holding one is refused
        # "allow": ["sk-test-not-a-key"],  # known fake values that look like keys
        # "matcher": "exact_body",  # which recording answers a request (default "cache_view")
        # "hosts": ["llm.internal:8080"],  # capture these hosts too
        # "ignore_hosts": ["api.deepseek.com"],  # let these through untouched
        # "local_hosts": ["localhost:11434"],  # local OpenAI-compatible servers ([]: none)
        # "prefix_chain": False,  # turn off the gate: each request extends the cached prefix
    }}
'''


_STAND_IN: Final = "# To record without an API key"
_UPSTREAM: Final = "@pytest.fixture\ndef harness_upstream"
_CONFIG: Final = "@pytest.fixture\ndef harness_capture_config"


def conftest(left_alone: frozenset[str] = frozenset()) -> str:
    """The conftest, without the fixtures the project already defines (`left_alone`): a
    fixture written here would shadow the project's own."""
    head, rest = CONFTEST.split(_STAND_IN)
    stand_in, rest = rest.split(_UPSTREAM)
    upstream, config = rest.split(_CONFIG)
    parts = [head]
    if "harness_upstream" not in left_alone:
        parts += [_STAND_IN, stand_in, _UPSTREAM, upstream]
    if "harness_capture_config" not in left_alone:
        parts += [_CONFIG, config]
    return "".join(parts).rstrip("\n") + "\n"


PROOF: Final = '''\
"""The proof that this project's requests keep their bytes, tool order first (written by
`harness init`).

Provider prompt caches match the request prefix byte for byte, tools first, then the system
prompt. `prove_stable` runs `build_request` several times (`--harness-shuffle`, default 8) under
perturbed orders of its own sources of order: asyncio completion, thread pools, folder listings,
entry points. Different bytes fail the test with the cause, the drift report and the command
that reproduces it.

Point `build_request` at your agent: import the function that builds one model request and
return the body it sends (`from my_agent import build_request`), or let it send the request
through the SDK in a test marked `@pytest.mark.header_capture` (see conftest.py), and
`prove_stable` judges what was sent. The example below loads tools from three plugins
concurrently, as agents do, and sorts them before building the request: delete the sort and
this test fails.
"""

from __future__ import annotations

import asyncio
from typing import Any


def tool(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return {"name": name, "description": description, "input_schema": schema}


PLUGINS = {
    "fs": [tool("read_file", "Read a UTF-8 text file."), tool("list_dir", "List a folder.")],
    "shell": [tool("run", "Run a shell command in the workspace.")],
    "web": [tool("fetch", "Fetch a web page as text.")],
}


async def load_plugin(name: str) -> list[dict[str, Any]]:
    await asyncio.sleep(0.001 * len(name))  # an import, or an MCP server's answer
    return PLUGINS[name]


async def build_request() -> dict[str, Any]:
    """One Anthropic Messages request body, as an agent builds it."""
    tools: list[dict[str, Any]] = []

    async def register(name: str) -> None:
        tools.extend(await load_plugin(name))  # in the order the plugins finish loading

    await asyncio.gather(*(register(name) for name in PLUGINS))
    tools.sort(key=lambda schema: schema["name"])  # the fix: one order, whatever finished first
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a careful assistant for this repository.",
        "tools": tools,
        "messages": [{"role": "user", "content": "What changed since yesterday?"}],
    }


def test_tool_order_is_stable(prove_stable: Any) -> None:
    prove_stable(build_request)
'''


def agent_conftest(sdks: Sequence[Sdk], left_alone: frozenset[str] = frozenset()) -> str:
    """The conftest for a project whose SDKs init found: `harness_upstream` answers from
    `harness.upstream.StandIn` (no API key needed to record), and each SDK's client finds a fake
    key (a real one, when set, wins)."""
    names = ", ".join(sdk.name for sdk in sdks)
    keys = sorted({sdk.key for sdk in sdks if sdk.key})
    head = CONFTEST.split(_STAND_IN)[0].replace(
        "from typing import Any", "import os\nfrom typing import Any"
    )
    parts = [head.rstrip("\n") + "\n\nfrom harness.upstream import StandIn, text\n"]
    if keys:
        parts.append(
            "\n# Fake keys for the stand-in (a key set in the environment wins; to record against"
            " the\n# real API, return None from harness_upstream).\n"
        )
        parts += [f'os.environ.setdefault("{key}", "sk-test-not-a-key")\n' for key in keys]
    if "harness_upstream" not in left_alone:
        parts.append(
            f"""

@pytest.fixture
def harness_upstream() -> Any:
    \"\"\"Where `pytest --harness-mode=record` sends the captured requests: a stand-in for the
    providers this project's SDKs reach ({names}), in each one's own shape. Script it
    turn by turn (from harness.upstream import tool_call): tool_call("get_weather",
    {{"city": "Paris"}}), then text("Sunny in Paris."); return None to record against the
    real API.\"\"\"
    return StandIn([text("Hello from the stand-in.")])
"""
        )
    if "harness_capture_config" not in left_alone:
        parts.append("\n\n" + _CONFIG + CONFTEST.split(_CONFIG, 1)[1])
    return "".join(parts).rstrip("\n") + "\n"


def agent_proof(point: EntryPoint) -> str:
    """The proof of the project's own agent: its entry point, run as one turn under
    `prove_stable`, its requests captured and answered by the stand-in."""
    argument = '"What can you do?"' if point.prompt else ""
    call = f"{point.function}({argument})"
    run = f"asyncio.run({call})" if point.asynchronous else call
    imports = "import asyncio\n" if point.asynchronous else ""
    return f'''"""The proof that this project's agent keeps its request bytes, tool order first
(written by `harness init`, for {point.module}.{point.function} in {point.source.name}).

Provider prompt caches match the request prefix byte for byte, tools first, then the system
prompt. `prove_stable` runs one turn of the agent several times (`--harness-shuffle`, default
8) under perturbed orders of its own sources of order (asyncio completion, thread pools, folder
listings, entry points) and judges the requests it sent: different bytes fail the test with the
cause, the drift report and the command that reproduces it. `hash_seeds` adds one child process
per PYTHONHASHSEED, for tools gathered in a set.

Record once (`pytest --harness-mode=record`: the stand-in in conftest.py answers, no API key
needed), commit fixtures/, and the proof replays offline ever after.
"""

from __future__ import annotations

{imports}from typing import Any

import pytest

from {point.module} import {point.function}


def one_turn() -> Any:
    """One turn of the agent: every request it sends is captured and judged."""
    return {run}


@pytest.mark.header_capture
def test_agent_requests_are_stable(prove_stable: Any) -> None:
    prove_stable(one_turn, hash_seeds=2)
'''
