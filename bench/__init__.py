"""Benchmarks: `python -m bench gate` and the canonical benchmarks (bench/README.md,
docs/benchmarks.md)."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# OpenBLAS picks its kernels by CPU, and their rounding differs: the paper's joint fit
# (scipy's least_squares, bench/joint_fit.py) is non-convex and lands in another local
# minimum in 6 of profiles dev's 60 folds: 19.70 % on the machine the baseline was first
# computed on, 22.01 % on an AMD EPYC (its own kernel, or Haswell's), 20.14 % with
# Sandybridge's. Every benchmark (and the gate's workers, which inherit it) uses one kernel
# every x86-64 CPU since 2008 runs, and numpy's SIMD paths up to AVX2 (AVX-512 only some
# machines have). Every other gated figure is then the same on any x86-64 machine with AVX2;
# that fit is not (the measurements: bench/gate/figures.py, PEER_ERROR_PCT). Set before numpy
# loads (`python -m bench...` imports this first); a value already set is kept.
SAME_ON_ANY_X86 = {"OPENBLAS_CORETYPE": "Nehalem",
                   "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
if platform.machine().lower() in ("x86_64", "amd64"):
    for _var, _value in SAME_ON_ANY_X86.items():
        os.environ.setdefault(_var, _value)
BELL_DATA_ENV = "COBELL_BELL_DATA"


def bell_data(environ: Mapping[str, str] | None = None, checkout: Path = ROOT) -> Path:
    """Where the Bell runtime data is: $COBELL_BELL_DATA, else `shared/data/bell` beside the
    checkout or beside one of its parents (a git worktree under /work/wt/NAME finds
    /work/shared as /work/main does). Never copied into the repository (its licence)."""
    env = os.environ if environ is None else environ
    if env.get(BELL_DATA_ENV):
        return Path(env[BELL_DATA_ENV])
    for parent in checkout.parents:
        candidate = parent / "shared" / "data" / "bell"
        if candidate.is_dir():
            return candidate
    return checkout.parent / "shared" / "data" / "bell"


BELL_DATA = bell_data()


def publish(text: str, output: Path | None) -> None:
    """Print a benchmark's report and, unless it is a quick run (`output` None), write it,
    keeping the gate's blocks and the hand-written ones the file held (bench/gate/blocks.py),
    stamped with the core it was made on (bench/staleness.py)."""
    from bench.gate.blocks import carried_over, kept_over
    from bench.staleness import stamped

    print(text)
    if output is None:
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.is_file():
        old = output.read_text()
        text = kept_over(old, carried_over(old, text))
    output.write_text(stamped(text))
    print(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")


def git(*args: str, cwd: Path = ROOT) -> str | None:
    """`git ARGS` in this checkout (or `cwd`): its output, or None off git or when it fails."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
