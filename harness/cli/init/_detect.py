"""What `harness init` reads in a project: the SDKs it uses, and its agent's entry point.

The SDKs come from what the project declares (`pyproject.toml`'s dependencies and extras,
`requirements*.txt`, `setup.cfg`) and what its own modules import; each known one is named with
the environment variable its client reads for a key, so the conftest can give the stand-in a fake
one (a real key, when set, wins). The entry point is a module-level function of the project's own
code (tests, virtual environments and hidden folders left out) in a module that imports an SDK:
one that takes no argument, else one that takes a single prompt-like argument, preferring the
names agents use (`one_turn`, `run_agent`, `ask`, `chat`, `run`, `main`...). It is read with
`ast`, never imported: init runs nothing of the project.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["EntryPoint", "Sdk", "detect_sdks", "find_entry_point"]


@dataclass(frozen=True)
class Sdk:
    name: str  # the distribution
    module: str  # the import name's first part
    key: str  # the environment variable its client reads ("" for none)


KNOWN: Final = (
    Sdk("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
    Sdk("openai", "openai", "OPENAI_API_KEY"),
    Sdk("google-genai", "google.genai", "GEMINI_API_KEY"),
    Sdk("boto3", "boto3", ""),
    Sdk("pydantic-ai", "pydantic_ai", ""),
    Sdk("openai-agents", "agents", "OPENAI_API_KEY"),
    Sdk("langchain-anthropic", "langchain_anthropic", "ANTHROPIC_API_KEY"),
    Sdk("langchain-openai", "langchain_openai", "OPENAI_API_KEY"),
    Sdk("litellm", "litellm", ""),
    Sdk("crewai", "crewai", "OPENAI_API_KEY"),
    Sdk("haystack-ai", "haystack", "OPENAI_API_KEY"),
    Sdk("autogen-agentchat", "autogen_agentchat", "OPENAI_API_KEY"),
    Sdk("semantic-kernel", "semantic_kernel", "OPENAI_API_KEY"),
    Sdk("google-adk", "google.adk", "GOOGLE_API_KEY"),
    Sdk("mistralai", "mistralai", "MISTRAL_API_KEY"),
)
_SKIPPED: Final = frozenset(
    {"tests", "test", ".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox",
     "build", "dist", "site-packages", "fixtures", "examples", "docs"}
)  # fmt: skip
_NAMES: Final = (
    "one_turn", "run_agent", "agent_turn", "run_turn", "ask", "chat", "respond", "answer",
    "run", "main", "build_request",
)  # fmt: skip
_WORDS: Final = ("agent", "turn", "ask", "chat", "reply", "answer", "request")
_PROMPT: Final = frozenset({"prompt", "question", "message", "query", "text", "user_input", "task"})
_REQUIREMENT: Final = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(project: Path) -> set[str]:
    found: set[str] = set()
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
            data = {}
        table = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        lines = list(table.get("dependencies", []) or [])
        for extra in (table.get("optional-dependencies", {}) or {}).values():
            lines += list(extra or [])
        found |= {m.group(1) for line in lines if (m := _REQUIREMENT.match(str(line)))}
    for path in [*project.glob("requirements*.txt"), project / "setup.cfg"]:
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if (m := _REQUIREMENT.match(line)) and not line.lstrip().startswith(("#", "[")):
                    found.add(m.group(1))
    return {_normal(name).split("[")[0] for name in found}


def _sources(project: Path) -> Iterator[Path]:
    for path in sorted(project.rglob("*.py")):
        parts = path.relative_to(project).parts
        if any(p in _SKIPPED or p.startswith(".") for p in parts[:-1]):
            continue
        if parts[-1].startswith(("test_", "conftest")) or parts[-1].endswith("_test.py"):
            continue
        yield path


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _uses(imported: set[str], sdk: Sdk) -> bool:
    return any(name == sdk.module or name.startswith(sdk.module + ".") for name in imported)


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return None


def detect_sdks(project: Path) -> list[Sdk]:
    """The known SDKs the project declares or imports, in `KNOWN`'s order."""
    declared = _declared(project)
    imported: set[str] = set()
    for path in _sources(project):
        tree = _parse(path)
        if tree is not None:
            imported |= _imports(tree)
    return [sdk for sdk in KNOWN if _normal(sdk.name) in declared or _uses(imported, sdk)]


@dataclass(frozen=True)
class EntryPoint:
    module: str  # "my_agent.agent"
    function: str
    prompt: bool  # takes one prompt-like argument
    asynchronous: bool
    source: Path


def _module_name(project: Path, path: Path) -> tuple[str, bool]:
    """The import name of `path`, and whether it lives under `src/`."""
    parts = list(path.relative_to(project).with_suffix("").parts)
    under_src = parts[:1] == ["src"]
    if under_src:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts), under_src


def find_entry_point(project: Path, sdks: list[Sdk]) -> tuple[EntryPoint | None, bool]:
    """The project's agent entry point (see the module doc), and whether it is under `src/`."""
    found: list[tuple[int, EntryPoint, bool]] = []
    for path in _sources(project):
        tree = _parse(path)
        if tree is None or not any(_uses(_imports(tree), sdk) for sdk in sdks):
            continue
        module, under_src = _module_name(project, path)
        if not module or not all(part.isidentifier() for part in module.split(".")):
            continue
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("_"):
                continue
            arguments = node.args
            required = len(arguments.posonlyargs) + len(arguments.args) - len(arguments.defaults)
            required += sum(1 for d in arguments.kw_defaults if d is None)
            prompt = required == 1 and (arguments.posonlyargs + arguments.args)[0].arg in _PROMPT
            if required and not prompt:
                continue
            if node.name not in _NAMES and not any(w in node.name for w in _WORDS):
                continue  # a helper (make_client, load_tools): not what one turn runs
            rank = _NAMES.index(node.name) if node.name in _NAMES else len(_NAMES)
            point = EntryPoint(
                module, node.name, prompt, isinstance(node, ast.AsyncFunctionDef), path
            )
            found.append((rank * 2 + prompt, point, under_src))
    if not found:
        return None, False
    _, point, under_src = min(found, key=lambda item: (item[0], str(item[1].source)))
    return point, under_src
