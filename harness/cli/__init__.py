"""The `harness` command: `_main` (the parser and the commands), `_diff` (what `harness diff`
compares), `init/` (`harness init`). `main` is the console script's entry point."""

from harness.cli._main import main

__all__ = ["main"]
