"""One BLAS thread for cobell's own small fits, without imposing it on the jobs it starts.

cobell's model fits solve hundreds of small least-squares problems (tens of columns, up to a
thousand rows). A multithreaded BLAS spends more on waking and syncing its threads than on
the arithmetic: on the 2-core machine of bench/results/latency.md a fit at 1000 runs and 20
co-runner jobs took 1.06 s with the default threads and 0.27 s with one, and a loaded
machine widens the gap. The BLAS libraries read their thread count once, when numpy loads,
so the CLI entry sets it before anything imports numpy, unless the user set it; the commands
cobell runs (the user's job, Spark daemons) get the user's environment back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_SET_BY_COBELL: set[str] = set()


def limit_blas_threads(environ: MutableMapping[str, str] | None = None) -> tuple[str, ...]:
    """Set each BLAS thread variable the user left unset to 1; returns the ones set."""
    env = os.environ if environ is None else environ
    added = tuple(name for name in BLAS_THREAD_VARS if not env.get(name))
    for name in added:
        env[name] = "1"
    if environ is None:
        _SET_BY_COBELL.update(added)
    return added


def user_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment as the user gave it: without the variables cobell set for itself."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k not in _SET_BY_COBELL}
