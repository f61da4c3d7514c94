"""Plain JSON types for the core's records (`to_dict`), without the output edge."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars and arrays (duck-typed, numpy need not be loaded) become
    numbers and lists, non-finite floats null, mapping keys strings."""
    if isinstance(value, Mapping):
        return {("null" if k is None else str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
