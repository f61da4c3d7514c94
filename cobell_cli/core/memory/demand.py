"""From a run's memory columns to what the memory models fit: its demand, or a lower bound.

A succeeded run with a measured peak shows its demand; a run that failed for memory shows only
that its need was above the heap it had. Everything else says nothing about memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cobell_cli.core.memory.records import MemoryObservation

# A heap peak is live heap plus garbage: the JVM collects late, so garbage fills a share of
# the slack R - live before a collection and the peak follows the reservation R. Fitted on the
# tune set's pairs of succeeded runs at the same input and scale-out but two reservations
# (bench/data/memory/tune-v2: collect 2.25M and 3.375M rows; x2 at 1344/2048 MB: shares 0.26 and
# 0.55; x1 at 1920/2048 MB: 0.04, and 1.07, which no share explains: dropped): their median.
GARBAGE_SHARE = 0.26
# The need (the smallest heap that succeeds, 64 MB steps) over the live heap: the GC's room.
# The same pairs bound it to (1.06, 1.26) (x1 2.25M: live 906 MB, failed at 960; x2: live
# 1062-1068 MB, succeeded at 1344); the lower end, chosen in that interval on a development
# world (bench.memory_e2e's memory side on synthetic played runs, seed 2020; 1.16 reserved
# 10-25 % more there for no fewer memory failures), not on the seeds reported.
GC_HEADROOM = 1.06
# The garbage discounted is at most this share of the peak: the smallest floor (0.01 steps)
# at which no tune run's demand falls below a need it is known to exceed (x1 2.25M peaked at
# 950 MB with 2048 MB; 960 MB failed: 960 / 950 / GC_HEADROOM = 0.953). The real shares vary
# from 0.04 to 0.55 between runs, so the slack says little about one run's garbage.
LIVE_FLOOR = 0.96


def demand_mb(peak_mb: float, reserved_mb: float | None) -> float:
    """The need a succeeded run's heap peak shows (measure.py says which peak).

    The peak less the garbage it holds in proportion to the slack it had (GARBAGE_SHARE), times
    the GC's room (GC_HEADROOM), and never above the heap the run succeeded with: that heap was
    enough. Fed back as it was (demand = peak), the garbage made the need grow with the
    reservation: a generous reservation showed a larger peak, which asked for a larger one
    (bench/results/memory_e2e.md, session 2: a 351 GB heap)."""
    if reserved_mb is None or reserved_mb <= peak_mb:
        live = peak_mb
    else:
        garbage = GARBAGE_SHARE / (1 - GARBAGE_SHARE) * (reserved_mb - peak_mb)
        live = max(peak_mb - garbage, LIVE_FLOOR * peak_mb)
    need = GC_HEADROOM * live
    return min(need, reserved_mb) if reserved_mb else need


def observations(runs: Sequence[Mapping[str, Any]]) -> list[MemoryObservation]:
    """The runs the memory models can use, as observations, oldest first as given."""
    out = []
    for run in runs:
        size, x = run.get("input_bytes"), run.get("scale_out")
        if not size or not x:
            continue
        reserved = run.get("executor_memory_mb")
        if run.get("status") == "failed" and run.get("failure_reason") == "memory":
            if reserved:
                out.append(MemoryObservation(int(size), int(x), None, float(reserved), True))
        elif run.get("status") == "succeeded" and run.get("peak_memory_mb"):
            demand = demand_mb(float(run["peak_memory_mb"]), reserved)
            out.append(MemoryObservation(int(size), int(x), demand, reserved))
    return out
