"""What a reservation costs, in the units one `--minimize` option chooses between.

../shared/CONVENTIONS.md ("Cost"): executor-seconds = scale-out × runtime (older benchmark
tables say node-seconds); memory-MB-seconds = container MB × executors × runtime; a node
label's price multiplies executor-seconds. Pure arithmetic, so every table, plan and
benchmark prices a candidate the same way.
"""

from __future__ import annotations

from typing import Literal, get_args

Minimize = Literal["executor-seconds", "memory-mb-seconds"]
MINIMIZE_CHOICES: tuple[str, ...] = get_args(Minimize)
DEFAULT_MINIMIZE: Minimize = "executor-seconds"


def executor_seconds(scale_out: float, runtime_s: float, price: float = 1.0) -> float:
    """Executors held × seconds held, times the node label's price (1 without labels)."""
    return price * scale_out * runtime_s


def memory_mb_seconds(container_mb: float, scale_out: float, runtime_s: float) -> float:
    """Container memory reserved across all executors, over the run."""
    return container_mb * scale_out * runtime_s


def reservation_cost(
    minimize: Minimize,
    scale_out: float,
    runtime_s: float,
    container_mb: float | None = None,
    price: float = 1.0,
) -> float:
    """The cost `minimize` names; memory-MB-seconds needs the container's size."""
    if minimize == "executor-seconds":
        return executor_seconds(scale_out, runtime_s, price)
    if container_mb is None:
        raise ValueError("memory-MB-seconds needs the container size")
    return memory_mb_seconds(container_mb, scale_out, runtime_s)
