"""Where the figures were measured: CPU model and count, Python, OS, date."""

from __future__ import annotations

import datetime
import os
import platform
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Machine:
    cpu: str
    cpus: int
    python: str
    system: str
    date: str

    def line(self) -> str:
        return f"{self.cpu} ({self.cpus} CPUs), Python {self.python}, {self.system}, {self.date}"


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine() or "unknown CPU"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.machine() or "unknown CPU"


def this_machine() -> Machine:
    return Machine(
        cpu=_cpu_model(),
        cpus=os.cpu_count() or 1,
        python=platform.python_version(),
        system=f"{platform.system()} {platform.release()}",
        date=datetime.date.today().isoformat(),
    )
