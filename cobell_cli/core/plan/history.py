"""Which of a job's runs the planner learns from, and the candidate scale-outs it judges.

Input-size similarity: with a known new input size s, only runs whose input_bytes is known and
within ±tolerance·s count; runs of unknown size are left out as they may be of any size. With
an unknown new size nothing can be compared, so every succeeded run counts (with a warning if
their known sizes differ by more than the tolerance).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def _order_key(run: Mapping[str, Any]) -> tuple:
    started = run.get("started_at")
    rid = run.get("id")
    id_key = (0, rid, "") if isinstance(rid, int | float) else (1, 0, str(rid))
    return (started is None, started if started is not None else 0.0, id_key)


def _is_usable(run: Mapping[str, Any]) -> bool:
    if run.get("status") != "succeeded":
        return False
    x, r = run.get("scale_out"), run.get("runtime_s")
    return (
        isinstance(x, int | float)
        and x >= 1
        and isinstance(r, int | float)
        and math.isfinite(r)
        and r > 0
    )


def similar_runs(
    history: Iterable[Mapping[str, Any]],
    input_bytes: int | None,
    input_tolerance: float = 0.10,
) -> list[Mapping[str, Any]]:
    """Succeeded runs of similar input size, oldest first (see the module doc for the rule)."""
    runs = sorted((r for r in history if _is_usable(r)), key=_order_key)
    if input_bytes is None:
        return runs
    return [
        r
        for r in runs
        if r.get("input_bytes") is not None
        and abs(r["input_bytes"] - input_bytes) <= input_tolerance * input_bytes
    ]


def candidate_scale_outs(min_scale_out: int, max_scale_out: int, step: int = 1) -> list[int]:
    """min, min+step, ... and always max, so the largest allowed reservation is considered."""
    out = list(range(min_scale_out, max_scale_out + 1, step))
    if out[-1] != max_scale_out:
        out.append(max_scale_out)
    return out


DENSE_CANDIDATES = 1000  # candidates judged one by one; every range used so far is smaller
GRID_RATIO = 1.02  # past them, each grid point about 2 % above the last (a choice, not fitted)


def sparse_scale_outs(dense: Sequence[int], anchors: Iterable[float]) -> list[int]:
    """The candidates a model judges first: `dense` itself when it has at most
    DENSE_CANDIDATES, else its first DENSE_CANDIDATES, then points GRID_RATIO apart, and
    always its last and the dense neighbours of each anchor (the edges of the observed range,
    where a candidate's distribution depends on its neighbour). Predictions and costs change
    little between grid points that close; `refined` fills in the bracket of the decision."""
    if len(dense) <= DENSE_CANDIDATES:
        return list(dense)
    kept = set(range(DENSE_CANDIDATES)) | {len(dense) - 1}
    i = DENSE_CANDIDATES - 1
    while i < len(dense) - 1:
        i = max(i + 1, bisect.bisect_left(dense, dense[i] * GRID_RATIO))
        kept.add(min(i, len(dense) - 1))
    for x in anchors:
        at = bisect.bisect_left(dense, x)
        kept.update(j for j in (at - 1, at, at + 1) if 0 <= j < len(dense))
    return [dense[j] for j in sorted(kept)]


def refined(dense: Sequence[int], judged: Sequence[int], chosen: int) -> list[int]:
    """`judged` and every `dense` candidate between its neighbours either side of `chosen`:
    where runtime falls with the scale-out, the smallest candidate meeting the target lies in
    that bracket, so judging it again gives the decision the dense candidates would."""
    k = judged.index(chosen)
    lo, hi = judged[max(k - 1, 0)], judged[min(k + 1, len(judged) - 1)]
    between = dense[bisect.bisect_left(dense, lo):bisect.bisect_right(dense, hi)]
    return sorted(set(judged).union(between))


def _without_overlaps(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "overlaps": {}} for r in runs]


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def _input_size_warnings(
    succeeded: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    input_bytes: int | None,
    input_tolerance: float,
) -> list[str]:
    """What the input-size match left out, or that runs of different sizes all count."""
    if input_bytes is not None and len(runs) < len(succeeded):
        return [
            f"{len(succeeded) - len(runs)} of {len(succeeded)} succeeded runs left out: input "
            f"size unknown or not within ±{input_tolerance:.0%} of {_fmt_bytes(input_bytes)}"
        ]
    sizes = [r["input_bytes"] for r in runs if r.get("input_bytes") is not None]
    if input_bytes is None and sizes and max(sizes) > (1 + input_tolerance) * min(sizes):
        return [
            "input size unknown: runs of different input sizes "
            f"({_fmt_bytes(min(sizes))} to {_fmt_bytes(max(sizes))}) all count"
        ]
    return []
