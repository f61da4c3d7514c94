"""From a run's memory columns to what the memory models fit: its demand, or a lower bound.

A succeeded run with a measured peak shows its demand; a run that failed for memory shows only
that its need was above the heap it had. Everything else says nothing about memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cobell_cli.core.memory.records import MemoryObservation


@dataclass(frozen=True)
class DemandRule:
    """How a succeeded run's heap peak P at reservation R shows its need.

    A heap peak is live heap plus garbage: the JVM collects late, so garbage fills a share g of
    the slack R - live before a collection and the peak follows the reservation. The live heap
    is then P - g / (1 - g) (R - P), at least f P (the slack says little about one run's
    garbage), and the need h times it (the GC's room), never above R: R was enough. g = 0 and
    f = 1 read the peak as it is, times h."""

    garbage_share: float  # g
    headroom: float  # h
    live_floor: float  # f


# Chosen and fitted by bench.memory_measure on set tune-quiet (95 runs of 36 cases whose needs
# were bisected, 6 jobs; bench/results/memory_measure.md): judged on jobs left out, no rule
# that discounts the slack's garbage (nor the unified memory, nor the JVM's RSS) predicted the
# need better than the heap peak itself by a standard error, so the simplest stays: the peak
# times 0.97. (Before: g 0.26, h 1.06, f 0.96, from bench/data/memory/tune-v2's four pairs.)
DEMAND = DemandRule(garbage_share=0.0, headroom=0.97, live_floor=1.0)


def demand_mb(peak_mb: float, reserved_mb: float | None, rule: DemandRule = DEMAND) -> float:
    """The need a succeeded run's heap peak shows (measure.py says which peak), by `rule`.

    Fed back as it was (demand = peak), the garbage made the need grow with the reservation:
    a generous reservation showed a larger peak, which asked for a larger one
    (bench/results/memory_e2e.md, session 2: a 351 GB heap)."""
    if reserved_mb is None or reserved_mb <= peak_mb:
        live = peak_mb
    else:
        share = rule.garbage_share
        garbage = share / (1 - share) * (reserved_mb - peak_mb)
        live = max(peak_mb - garbage, rule.live_floor * peak_mb)
    need = rule.headroom * live
    return min(need, reserved_mb) if reserved_mb else need


def observations(
    runs: Sequence[Mapping[str, Any]], rule: DemandRule = DEMAND
) -> list[MemoryObservation]:
    """The runs the memory models can use, as observations, oldest first as given; a run
    without an input size has input 0 (model.py fits those only when no run has one)."""
    out = []
    for run in runs:
        size, x = run.get("input_bytes") or 0, run.get("scale_out")
        if not x:
            continue
        reserved = run.get("executor_memory_mb")
        if run.get("status") == "failed" and run.get("failure_reason") == "memory":
            if reserved:
                out.append(MemoryObservation(int(size), int(x), None, float(reserved), True))
        elif run.get("status") == "succeeded" and run.get("peak_memory_mb"):
            demand = demand_mb(float(run["peak_memory_mb"]), reserved, rule)
            out.append(MemoryObservation(int(size), int(x), demand, reserved))
    return out
