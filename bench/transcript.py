"""A generated transcript: a real scenario with a realistic header, recorded into a temp folder.

The header is the size the issue asks for (200 tools over 50 plugins, a ~50 KB system section),
so every per-step cost that scales with the header shows. The script is mostly tool calls: each
turn is `steps_per_turn` steps, all but the last a tool call, so a transcript of N steps is N
model requests over a conversation that grows by two messages per step.

Everything is derived from a seeded `random.Random`, so the same size gives the same bytes on
every run and every host.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._shared._files import write
from harness._shared._paths import SCENARIO_FILE
from harness.agent import ScriptedReply, ScriptedToolCall
from harness.scenarios._formats import (
    PinSpec,
    PluginSpec,
    Scenario,
    SectionSpec,
    ToolSpec,
    load_fixture,
)
from harness.scenarios._record import record_fixture

TOOLS = 200
PLUGINS = 50
SYSTEM_BYTES = 50_000
STEPS_PER_TURN = 10
PIN = "bench"

_VERBS = ("read", "write", "list", "search", "run", "fetch", "open", "close", "create", "delete")
_NOUNS = ("file", "dir", "issue", "branch", "commit", "test", "page", "table", "ticket", "job")
_TEXT = (
    "the agent must keep its request header byte-stable so that the provider's prompt cache "
    "can serve the tools and the system text from the prefix it has already seen; every tool "
    "is described once and ordered by the system prompt service, never by plugin load order"
)
_WORDS = _TEXT.split(" ")


@dataclass(frozen=True)
class Shape:
    """The size of a generated transcript."""

    steps: int
    tools: int = TOOLS
    plugins: int = PLUGINS
    system_bytes: int = SYSTEM_BYTES
    steps_per_turn: int = STEPS_PER_TURN

    @property
    def name(self) -> str:
        return f"bench-{self.steps}-steps"


def _prose(rng: random.Random, size: int) -> str:
    """Readable filler text of exactly `size` characters, in paragraphs."""
    parts: list[str] = []
    length = 0
    while length < size:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20)))
        paragraph_end = rng.random() < 0.15
        piece = sentence.capitalize() + (".\n\n" if paragraph_end else ". ")
        parts.append(piece)
        length += len(piece)
    return "".join(parts)[:size]


def _tool(rng: random.Random, index: int) -> ToolSpec:
    verb, noun = _VERBS[index % len(_VERBS)], _NOUNS[(index // len(_VERBS)) % len(_NOUNS)]
    name = f"{verb}_{noun}_{index:03d}"
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "target": {"type": "string", "description": f"Which {noun} to {verb}."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
        },
        "required": ["target"],
    }
    return ToolSpec(
        name=name,
        description=f"{verb.capitalize()} a {noun}. " + _prose(rng, rng.randint(40, 90)),
        parameters=parameters,
        result=_prose(rng, rng.randint(60, 200)),
    )


def scenario(shape: Shape, seed: int = 0) -> Scenario:
    """The scenario of `shape`: plugins, a large system section, and a script of tool calls."""
    rng = random.Random(seed)
    tools = [_tool(rng, i) for i in range(shape.tools)]
    per_plugin = -(-shape.tools // shape.plugins)
    plugins: list[PluginSpec] = []
    for p in range(shape.plugins):
        own = tuple(tools[p * per_plugin : (p + 1) * per_plugin])
        sections: tuple[SectionSpec, ...] = ()
        if p == 0:
            # {{cwd}} keeps interpolation on the hot path, as in a real prompt.
            text = "Workspace: {{cwd}}\n\n" + _prose(rng, shape.system_bytes)
            sections = (SectionSpec(name="guidelines", text=text, order=500),)
        # Every fifth plugin serves its tools through a provider of its own: both paths race.
        plugins.append(
            PluginSpec(name=f"plugin-{p:02d}", tools=own, provider=p % 5 == 4, sections=sections)
        )
    script: list[ScriptedReply] = []
    turns: list[str] = []
    for step in range(shape.steps):
        last_of_turn = (step + 1) % shape.steps_per_turn == 0 or step == shape.steps - 1
        if step % shape.steps_per_turn == 0:
            turns.append(f"Task {len(turns) + 1}: " + _prose(rng, 60))
        if last_of_turn:
            script.append(ScriptedReply(text="Done. " + _prose(rng, 80)))
            continue
        tool = rng.choice(tools)
        call = ScriptedToolCall(
            id=f"call_{step + 1}", name=tool.name, input={"target": f"item-{rng.randint(1, 999)}"}
        )
        script.append(
            ScriptedReply(text=_prose(rng, 40) if step % 3 == 0 else "", tool_calls=(call,))
        )
    return Scenario(
        name=shape.name,
        description=f"Generated benchmark transcript: {shape.steps} steps.",
        config={
            "tool_order": [tools[0].name, tools[1].name, "<unlisted-tools>"],
            "max_steps": shape.steps_per_turn,
        },
        variables={"cwd": "/workspace/project", "platform": "linux"},
        plugins=tuple(plugins),
        loops=(tuple(turns),),
        script=tuple(script),
        pin=PinSpec(name=PIN, owner=True),
    )


def record(shape: Shape, root: Path, seed: int = 0) -> Path:
    """Write the scenario under `root/fixtures/` and record it, as `harness record` would.

    Pins go to `root/snapshots/headers/`, beside the fixtures, never into the repository.
    """
    folder = root / "fixtures" / shape.name
    write(folder / SCENARIO_FILE, scenario(shape, seed))
    record_fixture(load_fixture(folder, scenario_only=True))
    return folder
