"""Spark's memory strings ("512m", "4g", "2048"), read as Spark reads them (JavaUtils
.byteStringAs): a whole number and an optional binary unit; no unit means MiB for
`spark.executor.memory` and `spark.executor.memoryOverhead`."""

from __future__ import annotations

import math
import re

_UNITS_MB = {
    "b": 1 / (1024 * 1024), "k": 1 / 1024, "kb": 1 / 1024, "m": 1, "mb": 1,
    "g": 1024, "gb": 1024, "t": 1024**2, "tb": 1024**2, "p": 1024**3, "pb": 1024**3,
}  # fmt: skip
_MEMORY = re.compile(r"\s*(\d+)\s*([a-z]*)\s*", re.IGNORECASE)
FORMS = "a whole number with an optional unit: 512m, 4g, 2048 (MiB)"
MAX_MB = 1024**3  # a petabyte per executor: anything larger is a typo


def memory_mb(text: str) -> int:
    """MiB, rounded up; ValueError naming the accepted forms."""
    match = _MEMORY.fullmatch(text or "")
    unit = match.group(2).lower() if match else ""
    if not match or unit not in {*_UNITS_MB, ""}:
        raise ValueError(f"{text!r} is not a memory size ({FORMS})")
    mb = math.ceil(int(match.group(1)) * _UNITS_MB.get(unit, 1))
    if not 0 < mb <= MAX_MB:
        raise ValueError(f"{text!r} is not a plausible executor memory (1 MB to 1 PB)")
    return mb
