"""The co-runner columns the interference fit sees: rare jobs merged into the pool, and the
overlaps weighed by the co-runners' sizes where the fit asks for that."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cobell_cli.core.model.data import POOLED, RunData

MIN_RUNS_PER_CO_RUNNER = 3  # fewer runs cannot pin down (a, b): they join the pool


def pool_rare(data: RunData) -> RunData:
    """Merge co-runners seen in fewer than MIN_RUNS_PER_CO_RUNNER runs into the pool."""
    if not data.co_runners:
        return data
    counts = (data.overlap > 0).sum(axis=0)
    keep = [i for i, k in enumerate(data.co_runners)
            if k != POOLED and counts[i] >= MIN_RUNS_PER_CO_RUNNER]
    rare = [i for i in range(len(data.co_runners)) if i not in keep]
    cols = [data.overlap[:, i] for i in keep]
    names = [data.co_runners[i] for i in keep]
    sizes = data.co_scale_out
    size_cols = [] if sizes is None else [sizes[:, i] for i in keep]
    if rare:
        cols.append(data.overlap[:, rare].sum(axis=1))
        names.append(POOLED)
        if sizes is not None:  # the pooled apps' overlap-weighted mean scale-out
            ov, z = data.overlap[:, rare], sizes[:, rare]
            known = np.where(z > 0, ov, 0.0).sum(axis=1)
            size_cols.append(np.divide((ov * z).sum(axis=1), known, out=np.zeros(data.n),
                                       where=known > 0))
    overlap = np.column_stack(cols) if cols else np.zeros((data.n, 0))
    co_scale_out = (None if sizes is None else
                    np.column_stack(size_cols) if size_cols else np.zeros((data.n, 0)))
    return RunData(data.scale_out, data.runtime_s, overlap, tuple(names), co_scale_out)


def size_references(data: RunData) -> dict[str, float]:
    """Each co-runner job's usual scale-out: the overlap-weighted mean of the known ones. The
    pooled class has none: its sizes differ mostly between the jobs it mixes, which its pair
    already averages (weighing them cost 2-8 points of coverage with 60 co-runner jobs on 50
    runs, bench.coverage)."""
    sizes = data.co_scale_out
    if sizes is None:
        return {}
    out = {}
    for i, name in enumerate(data.co_runners):
        if name == POOLED:
            continue
        known = sizes[:, i] > 0
        weight = data.overlap[known, i].sum()
        if weight > 0:
            out[name] = float(data.overlap[known, i] @ sizes[known, i] / weight)
    return out


def weigh_by_size(data: RunData, references: Mapping[str, float]) -> RunData:
    """The runs with each overlap weighed by its co-runner's scale-out over its usual one
    (1 where unknown); `data` itself when no size is known."""
    if not references or data.co_scale_out is None:
        return data
    ref = np.array([references.get(name, 0.0) for name in data.co_runners])
    sizes = data.co_scale_out
    weight = np.where((sizes > 0) & (ref > 0), sizes / np.where(ref > 0, ref, 1.0), 1.0)
    return RunData(data.scale_out, data.runtime_s, data.overlap * weight, data.co_runners,
                   sizes)


def sizes_vary(plain: RunData, references: Mapping[str, float]) -> bool:
    """Whether some co-runner job with a usual size ran at different scale-outs: only then is
    weighing overlaps by size a question the data can answer."""
    sizes = plain.co_scale_out
    if sizes is None:
        return False
    return any(np.ptp(col[col > 0]) > 0 for name, col in zip(plain.co_runners, sizes.T,
                                                             strict=True)
               if name in references and np.any(col > 0))
