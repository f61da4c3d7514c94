"""Decision latency: what one `cobell predict` costs next to what every submission already pays.

    python -m bench.latency [--quick] [--profiles-only] [--repeats N] [--output FILE]

Whole-process wall time (and the child's user+sys CPU time, which a loaded machine disturbs
less), median of N runs after one warm-up, measured round-robin so that load drifts hit every
command alike: `cobell predict --cluster none` on histories of 100 .. 100 000 runs (with
co-locations), once with the model cache (the state `cobell submit` leaves behind: it warms the
cache for the job's next run) and once without it (COBELL_MODEL_CACHE=off: a fit in every
process), `cobell --help`, `cobell config show` (what any command costs), and `spark-submit
--version` from the pyspark wheel. Then where the time goes (in-process). A job with event-log
profiles (runs of `cobell submit` on Spark; ~26 000 tasks each, from bench/gen_event_log.py):
one run (the what-if alone plans) and three (the what-if replays three profiles), cached
(model cache and stored replays) and not; `--profiles-only` measures just those rows (with
`cobell config show` and spark-submit for scale) and prints them.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import BELL_DATA, publish
from cobell_cli.core.calibration import DEFAULT_CONFIDENCE, JACKKNIFE_MAX_FITS
from cobell_cli.threads import BLAS_THREAD_VARS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = BELL_DATA
RESULTS = ROOT / "bench" / "results" / "latency.md"
SIZES = (100, 1_000, 10_000, 100_000)
JOB, TARGET_S = "sgd", 350.0
CO_JOBS = ("grep", "pagerank", "tpchq10", "wordcount")
JOB_SHARE = 0.5  # half the history is the predicted job, the rest its co-runners' runs
OVERLAP_SHARE = 0.6  # runs with a co-location
GOAL_PREDICT_VS_SPARK = 0.10
GOAL_FIT_VS_SPARK = 0.50  # a default (risk-aware) predict that must fit
GOAL_MUST_FIT_VS_SPARK = 0.20  # issue 34: any predict that must fit, at every history size
FIT_RUNS, FIT_CO_JOBS = 1000, 20  # the history that goal is measured on
GOAL_HELP_S = 0.15
# A job with event-log profiles: runs recorded by `cobell submit` on Spark, each with the
# profile of a ~100 MB event log (bench/gen_event_log.py: ~26 000 tasks, 183 stages) at these
# executor counts; predict replays up to three of them (api.JOB_PROFILES).
PROFILE_JOB, PROFILE_LOG_MB, PROFILE_EXECUTORS = "bench-etl", 100.0, (16, 8, 24)
PROFILE_TARGET_S = 300.0
# The cluster's other jobs with profiles (what every `cobell submit` of theirs records): each
# at these executor counts, so that the what-if judges their start-up trends (core/whatif/
# evidence.py) on every predict of PROFILE_JOB, whose runs at 8, 16 and 24 are the evidence.
OTHER_PROFILE_JOBS, OTHER_PROFILE_EXECUTORS = 4, (8, 16)
QUICK_PROFILE_LOG_MB = 4.0  # ~1 000 tasks
IMPORT_NUMPY = "python -c 'import numpy'"
IMPORT_SCIPY = "python -c 'import numpy, scipy.optimize'"



def co_job_names(n: int) -> tuple[str, ...]:
    """n co-runner job names; beyond the four Bell jobs, copies of their curves (grep-2, ...)."""
    return tuple(CO_JOBS[i % len(CO_JOBS)] + ("" if i < len(CO_JOBS) else f"-{i // len(CO_JOBS)}")
                 for i in range(n))


def build_history(path: Path, n_runs: int, data_dir: Path, seed: int = 0,
                  co_jobs: Sequence[str] = CO_JOBS) -> None:
    """n_runs runs (half of JOB) from the Bell curves, 60 % with one co-runner, via insert_runs."""
    from cobell_cli.store.history import History

    rng = np.random.default_rng(seed)
    curves: dict[str, list[tuple[int, float]]] = {}
    for job in (JOB, *co_jobs):
        name = next(data_dir.glob(f"{job.split('-')[0]}.*.csv"))
        with name.open(newline="") as fh:
            curves[job] = [(int(r["Nodes"]), float(r["Runtime"]) / 1000.0)
                           for r in csv.DictReader(fh)]
    records = []
    t = 1.7e9
    for i in range(n_runs):
        job = JOB if rng.random() < JOB_SHARE else co_jobs[int(rng.integers(len(co_jobs)))]
        x, runtime = curves[job][int(rng.integers(len(curves[job])))]
        colocations = []
        if rng.random() < OVERLAP_SHARE:
            co = co_jobs[int(rng.integers(len(co_jobs)))]
            ratio = float(rng.random())
            runtime *= 1.0 + (0.15 + 2.0 / x) * ratio
            colocations.append({"co_runner_app_id": f"application_{i}_co", "co_runner_job": co,
                                "co_runner_scale_out": 24, "overlap_ratio": round(ratio, 6),
                                "overlap_s": round(ratio * runtime, 3)})
        records.append({"id": i + 1, "job": job, "scale_out": x, "runtime_s": runtime,
                        "status": "succeeded", "started_at": t, "finished_at": t + runtime,
                        "submitted_at": t, "target_s": TARGET_S if job == JOB else None,
                        "colocations": colocations})
        t += runtime + 60.0
    with History.open(path) as history:
        history.insert_runs(records)


def build_profile_history(path: Path, scratch: Path,
                          executors: Sequence[int] = PROFILE_EXECUTORS,
                          log_mb: float = PROFILE_LOG_MB) -> int:
    """Runs of PROFILE_JOB with the profiles of generated event logs, as `cobell submit` stores
    them (runs.event_log and run_profiles); returns the tasks per profile (the last one's)."""
    from bench.gen_event_log import generate
    from cobell_cli.sources.eventlog_profile import summarize
    from cobell_cli.store.history import History

    tasks = 0
    with History.open(path) as history:
        t = 1.7e9
        for seed, x in enumerate(executors, start=1):
            log = scratch / f"app-{x}"
            generate(log, log_mb, executors=x, seed=seed)
            profile = summarize(log)
            [run_id] = history.insert_runs([{
                "job": PROFILE_JOB, "scale_out": profile.scale_out, "status": "succeeded",
                "runtime_s": profile.runtime_s, "submitted_at": t, "started_at": t,
                "finished_at": t + profile.runtime_s}], keep_ids=False)
            history.save_profile(run_id, profile, event_log=str(log))
            tasks = sum(len(s.task_s) for s in profile.stages)
            log.unlink()
            t += profile.runtime_s + 60.0
    return tasks


def add_other_jobs(path: Path, scratch: Path, log_mb: float = PROFILE_LOG_MB) -> int:
    """Runs of OTHER_PROFILE_JOBS other jobs (other0, ...), older than PROFILE_JOB's, each
    with a generated log's profile under its own app id and job tag; returns their count."""
    from dataclasses import replace

    from bench.gen_event_log import generate
    from cobell_cli.sources.eventlog_profile import summarize
    from cobell_cli.store.history import History

    count = 0
    with History.open(path) as history:
        t = 1.6e9
        for j in range(OTHER_PROFILE_JOBS):
            name = f"other{j}"
            for x in OTHER_PROFILE_EXECUTORS:
                log = scratch / f"app-{name}-{x}"
                generate(log, log_mb, executors=x, seed=10 + j)
                profile = replace(summarize(log), app_id=f"app-{name}-{x}", app_name=name,
                                  job_tag=name, tags=[f"cobell-job:{name}"])
                log.unlink()
                [run_id] = history.insert_runs([{
                    "job": name, "scale_out": profile.scale_out, "status": "succeeded",
                    "runtime_s": profile.runtime_s, "submitted_at": t, "started_at": t,
                    "finished_at": t + profile.runtime_s}], keep_ids=False)
                history.save_profile(run_id, profile)
                count += 1
                t += profile.runtime_s + 60.0
    return count


def child_env(home: Path) -> dict[str, str]:
    """The user's environment minus COBELL_*, XDG dirs in a scratch dir (no config leaks in)."""
    # Without COBELL_* and BLAS thread settings: the CLI chooses its own BLAS threads, as a
    # user's shell would leave it to (rows that measure thread counts set them).
    # Without PYTHONDONTWRITEBYTECODE: an installed cobell has its bytecode compiled (pip does
    # it), and the warm-up run writes what a checkout lacks; with the flag set (as on this
    # project's machines) every module changed since its last .pyc was compiled again in every
    # timed run, 11 ms of a 150 ms predict.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COBELL_") and k not in BLAS_THREAD_VARS
           and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["XDG_DATA_HOME"] = str(home / "data")
    env["XDG_CACHE_HOME"] = str(home / "cache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


Command = tuple[Sequence[str], Mapping[str, str]]  # argv, and environment on top of the base


def time_once(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, float]:
    """(wall s, child user+sys CPU s) of one whole process; fails loudly on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), env=dict(env), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(commands: Mapping[str, Command], env: Mapping[str, str], repeats: int,
            ) -> dict[str, dict[str, float]]:
    """label -> median wall/cpu over `repeats` runs after one warm-up, round-robin."""
    for argv, extra in commands.values():
        time_once(argv, {**env, **extra})
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(repeats):
        for label, (argv, extra) in commands.items():
            samples[label].append(time_once(argv, {**env, **extra}))
    return {label: {"wall_s": statistics.median(w for w, _ in s),
                    "cpu_s": statistics.median(c for _, c in s),
                    "min_wall_s": min(w for w, _ in s), "n": len(s)}
            for label, s in samples.items()}


def breakdown(db: Path, env: Mapping[str, str]) -> dict[str, float]:
    """Where predict's time goes, measured in a child, in the order a cached predict pays it."""
    code = (
        "import time, json, sys, tempfile\n"
        "from pathlib import Path\n"
        "t0 = time.perf_counter()\n"
        "import cobell_cli.cli\n"
        "t1 = time.perf_counter()\n"
        "from cobell_cli.store.history import History\n"
        "from cobell_cli.core.plan import plan\n"
        "from cobell_cli.store.model_cache import ModelCache\n"
        "t2 = time.perf_counter()\n"
        f"h = History.open({str(db)!r}, create=False)\n"
        f"runs = h.training_runs({JOB!r}, window=1000)\n"
        "t3 = time.perf_counter()\n"
        "cache = ModelCache(Path(tempfile.mkdtemp()), grid_max=60, confidence=0.9)\n"
        "cache.fit(runs)\n"
        "t4 = time.perf_counter()\n"
        "cache.fit(runs)\n"
        "t5 = time.perf_counter()\n"
        f"plan(job={JOB!r}, history=runs, now=2e9, target_s={TARGET_S}, min_scale_out=4,"
        " max_scale_out=60, fit=cache.fit)\n"
        "t6 = time.perf_counter()\n"
        "print(json.dumps({'import_cli_s': t1 - t0, 'import_core_s': t2 - t1,"
        " 'read_history_s': t3 - t2, 'fit_cold_s': t4 - t3, 'fit_cached_s': t5 - t4,"
        " 'plan_cached_s': t6 - t5, 'runs_read': len(runs)}))\n"
    )
    import json

    child = {**env, **{v: "1" for v in BLAS_THREAD_VARS}}  # as the CLI entry sets them
    out = subprocess.run([sys.executable, "-c", code], env=child, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def whatif_breakdown(db: Path, env: Mapping[str, str]) -> dict[str, float]:
    """A cached predict on a history with profiles, in-process, in the order it pays: reading
    the profiles, the what-if fitted from stored replays, the whole `api.predict`; and the
    what-if's fit and predictions over 1..64 executors when it must replay."""
    code = (
        "import time, json, tempfile\n"
        "from pathlib import Path\n"
        "from cobell_cli import api, config\n"
        "from cobell_cli.cluster.none import NoCluster\n"
        "from cobell_cli.core.whatif import fit_whatif\n"
        "from cobell_cli.store.history import History\n"
        "from cobell_cli.store.replay_cache import ReplayCache\n"
        f"h = History.open({str(db)!r}, create=False, read_only=True)\n"
        f"runs = h.training_runs({PROFILE_JOB!r}, window=1000)\n"
        "t0 = time.perf_counter()\n"
        f"mine, others = api.job_profiles(h, {PROFILE_JOB!r}, runs, [])\n"
        "t1 = time.perf_counter()\n"
        "m = fit_whatif(mine, runs, others); m.predict(range(1, 65))\n"
        "t2 = time.perf_counter()\n"
        "store = ReplayCache(Path(tempfile.mkdtemp()))\n"
        "fit_whatif(mine, runs, others, memory=store).predict(range(1, 65)); store.save()\n"
        "t3 = time.perf_counter()\n"
        "m = fit_whatif(mine, runs, others, memory=ReplayCache(store.directory))\n"
        "m.predict(range(1, 65))\n"
        "t4 = time.perf_counter()\n"
        "s = config.load({'max_scale_out': 64})\n"
        f"api.predict(h, NoCluster('bench'), s, job={PROFILE_JOB!r}, target_s={PROFILE_TARGET_S},"
        " now=2e9)\n"
        "t5 = time.perf_counter()\n"
        f"api.predict(h, NoCluster('bench'), s, job={PROFILE_JOB!r}, target_s={PROFILE_TARGET_S},"
        " now=2e9)\n"
        "t6 = time.perf_counter()\n"
        "print(json.dumps({'profiles': len(mine), 'tasks': m.workloads_[0].n_tasks,"
        " 'read_profiles_s': t1 - t0, 'whatif_replaying_s': t2 - t1,"
        " 'whatif_storing_s': t3 - t2, 'whatif_stored_s': t4 - t3,"
        " 'predict_first_s': t5 - t4, 'predict_cached_s': t6 - t5}))\n"
    )
    import json

    with tempfile.TemporaryDirectory(prefix="cobell-latency-cache-") as cache:
        child = {**env, **{v: "1" for v in BLAS_THREAD_VARS}, "XDG_CACHE_HOME": cache}
        out = subprocess.run([sys.executable, "-c", code], env=child, capture_output=True,
                             text=True, check=True)
    return json.loads(out.stdout)


def calibration_check(db: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The one-fit leave-one-out ratios (model/loo.py) against the K-fold CV+ refits
    (calibration.JACKKNIFE_MAX_FITS) they replaced: cost and the bounds they give, in a child
    with one BLAS thread, as the CLI runs."""
    code = (
        "import json, time\n"
        "from cobell_cli.store.history import History\n"
        "from cobell_cli.core.model import fit_runtime_model\n"
        "from cobell_cli.core.calibration import jackknife_ratios, ratio_bound\n"
        f"runs = History.open({str(db)!r}, create=False).training_runs({JOB!r}, window=1000)\n"
        "fit_runtime_model(runs)\n"  # imports and first-call costs out of the timings
        "t0 = time.perf_counter(); model = fit_runtime_model(runs); t1 = time.perf_counter()\n"
        "refits = jackknife_ratios(runs, fit_runtime_model); t2 = time.perf_counter()\n"
        "loo = list(model.loo_ratios_)\n"
        "print(json.dumps({'runs': len(runs), 'co_runner_jobs': len(model.co_runners_),"
        " 'fit_s': t1 - t0, 'refits_s': t2 - t1,"
        " 'bounds': {p: [ratio_bound(loo, p), ratio_bound(refits, p)] for p in (0.9, 0.97)}}))\n"
    )
    import json

    child = {**env, **{v: "1" for v in BLAS_THREAD_VARS}}
    out = subprocess.run([sys.executable, "-c", code], env=child, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def profile_label(runs: int, tasks: int) -> str:
    return (f"{runs} run{'s' if runs > 1 else ''} of {PROFILE_JOB} with event-log profiles"
            f" ({tasks / 1000:.0f} k tasks each)")


def growth(sizes: Sequence[int], walls: Sequence[float]) -> float:
    """Log-log slope of (wall - the smallest size's wall) would hide start-up; use raw slope
    between the two largest sizes: 1 means linear, > 1 super-linear."""
    if len(sizes) < 2:
        return float("nan")
    return float(np.log(walls[-1] / walls[-2]) / np.log(sizes[-1] / sizes[-2]))


def _must_fit_goal(m: Mapping[str, Mapping[str, float]], sizes: Sequence[int],
                   spark_s: float) -> str:
    """Issue 34's must-fit goal at every history size. A young job (at most REFIT_MAX_RUNS
    runs) calibrates on K refits (calibration.JACKKNIFE_MAX_FITS, core/model/held_out.py),
    which a cached predict skips."""
    from cobell_cli.core.model.select import REFIT_MAX_RUNS

    parts = []
    for n in sizes:
        key = f"predict, {n} runs, no cache"
        if key not in m:
            continue
        r = m[key]["wall_s"] / spark_s
        refits = (f" (the job's runs: {JACKKNIFE_MAX_FITS} refits)"
                  if n * JOB_SHARE <= REFIT_MAX_RUNS else "")
        verdict = "met" if r <= GOAL_MUST_FIT_VS_SPARK else "MISSED"
        parts.append(f"{n} runs {r:.3f}x{refits} ({verdict})")
    return (f"- a predict that must fit <= {GOAL_MUST_FIT_VS_SPARK}x spark-submit --version"
            f" (issue 34), at every history: {'; '.join(parts)}")


def render(result: Mapping[str, Any], command: str) -> str:
    m = result["measured"]
    sizes = result["sizes"]
    spark = m.get("spark-submit --version")
    lines = [
        "# Decision latency",
        "",
        f"Command: `{command}` (from the repository root). Machine: {os.cpu_count()} cores,"
        f" load average {result['load_before']} before and {result['load_after']} after (other"
        " engineers' jobs share it; CPU time is the steadier number).",
        "",
        f"Whole-process wall time, median of {result['repeats']} runs after one warm-up,"
        " commands interleaved round-robin. Histories: N runs, half of them of the predicted"
        f" job `{JOB}` (Bell sgd curve), the rest of {', '.join(CO_JOBS)};"
        f" {OVERLAP_SHARE:.0%} with a co-location. `predict` = `cobell --db H predict"
        f" --cluster none --job {JOB} -t {TARGET_S:g}` with the model cache as `cobell submit`"
        " leaves it (the warm-up run fills it); `no cache` sets COBELL_MODEL_CACHE=off, so every"
        " process fits. Planning reads the job's newest 1000 runs (`history_window`). cobell runs"
        " from bytecode, as installed (the harness runs `compileall` on cobell_cli first).",
        "",
        f"Histories with event-log profiles: 1 or {len(PROFILE_EXECUTORS)} runs of"
        f" `{PROFILE_JOB}` (at {', '.join(map(str, PROFILE_EXECUTORS))} executors), each with"
        " the profile of a generated event log (bench/gen_event_log.py) in run_profiles, as"
        f" `cobell submit` stores it; `predict` = `cobell --db H predict --cluster none --job"
        f" {PROFILE_JOB} -t {PROFILE_TARGET_S:g}`. Cached: the model cache and the what-if's"
        " stored replays (store/replay_cache.py) as the warm-up run leaves them. `and N runs"
        f" of {OTHER_PROFILE_JOBS} other jobs`: the {len(PROFILE_EXECUTORS)}-run history with"
        f" other jobs' profiled runs (at {', '.join(map(str, OTHER_PROFILE_EXECUTORS))}"
        " executors each) on the cluster, whose start-up trends the what-if judges against"
        f" {PROFILE_JOB}'s runs on every predict.",
        "",
        "| command | wall s (median) | wall s (min) | CPU s (median) | wall / spark-submit |",
        "|---|---|---|---|---|",
    ]
    for label, v in m.items():
        ratio = f"{v['wall_s'] / spark['wall_s']:.2f}" if spark else "n/a"
        lines.append(f"| {label} | {v['wall_s']:.3f} | {v['min_wall_s']:.3f} |"
                     f" {v['cpu_s']:.3f} | {ratio} |")
    if not spark:
        lines += ["", f"spark-submit --version skipped: {result['spark_note']}"]
    lines += ["", "## Goals", ""]
    at = next((s for s in sizes if s == 10_000), sizes[-1] if sizes else None)
    key = f"predict, {at} runs"
    if spark and key in m:
        r = m[key]["wall_s"] / spark["wall_s"]
        verdict = "met" if r <= GOAL_PREDICT_VS_SPARK else "MISSED"
        cold = m[f"{key}, no cache"]["wall_s"] / spark["wall_s"]
        lines.append(f"- predict at {at} runs <= {GOAL_PREDICT_VS_SPARK}x spark-submit --version:"
                     f" {r:.3f}x ({verdict}). A predict that has to fit (the cache off, or the"
                     " first predict after the history changed other than through `cobell"
                     f" submit`) takes {cold:.3f}x there")
        lines.append(_must_fit_goal(m, sizes, spark["wall_s"]))
    fit_label = result.get("fit_label")
    if spark and fit_label:
        default = m[f"predict (default), {fit_label}"]["wall_s"]
        r = default / spark["wall_s"]
        point = m[f"predict --confidence point, {fit_label}"]["wall_s"]
        cpu_gap = (m[f"predict (default), {fit_label}"]["cpu_s"]
                   - m[f"predict --confidence point, {fit_label}"]["cpu_s"])
        threads = next(v["wall_s"] for k, v in m.items()
                       if k.startswith(f"predict (default), {fit_label}, BLAS"))
        lines.append(f"- a default (risk-aware, P(meet) >= {DEFAULT_CONFIDENCE:g}) predict that"
                     f" must fit, at {fit_label} <= {GOAL_FIT_VS_SPARK}x spark-submit"
                     f" --version: {r:.2f}x"
                     f" ({'met' if r <= GOAL_FIT_VS_SPARK else 'MISSED'}); the point decision"
                     f" on the same history {point / spark['wall_s']:.2f}x (difference"
                     f" {default - point:+.3f} s wall, {cpu_gap:+.3f} s CPU); with as many"
                     " BLAS threads as cores (what numpy does unless told)"
                     f" {threads / spark['wall_s']:.2f}x")
    for label in result.get("profile_labels", ()):
        if spark:
            cached = m[f"predict, {label}"]["wall_s"] / spark["wall_s"]
            cold = m[f"predict, {label}, no cache"]["wall_s"] / spark["wall_s"]
            lines.append(f"- predict, {label}, <= {GOAL_PREDICT_VS_SPARK}x spark-submit"
                         f" --version: {cached:.3f}x"
                         f" ({'met' if cached <= GOAL_PREDICT_VS_SPARK else 'MISSED'}); without"
                         f" the cache (every profile replayed) {cold:.3f}x")
    if "cobell --help" not in m:
        return _render_whatif_breakdown(lines, result)
    h = m["cobell --help"]["wall_s"]
    lines.append(f"- cobell --help <= {GOAL_HELP_S} s: {h:.3f} s"
                 f" ({'met' if h <= GOAL_HELP_S else 'MISSED'}); a bare `python -c pass`"
                 f" takes {m['python -c pass']['wall_s']:.3f} s here")
    for suffix, what in (("", "cached"), (", no cache", "without the cache")):
        walls = [m[f"predict, {s} runs{suffix}"]["wall_s"] for s in sizes]
        cpus = [m[f"predict, {s} runs{suffix}"]["cpu_s"] for s in sizes]
        slope = growth(sizes, cpus)
        steps = ", ".join(f"{(walls[i + 1] - walls[i]) / (sizes[i + 1] - sizes[i]) * 1e6:.0f} µs"
                          f" ({sizes[i]}->{sizes[i + 1]})" for i in range(len(sizes) - 1))
        lines.append(f"- growth at most linear ({what}): CPU slope between the two largest"
                     f" histories {slope:.2f}, wall {growth(sizes, walls):.2f} (log-log; 1 ="
                     f" linear) ({'met' if slope <= 1.05 else 'MISSED'}); marginal wall cost per"
                     f" extra run: {steps}")
    if spark and "cobell config show" in m:
        floor = m["cobell config show"]["wall_s"]
        lines.append(f"- floor: `cobell config show` (start-up, typer, settings; no history, no"
                     f" model) takes {floor:.3f} s = {floor / spark['wall_s']:.3f}x spark-submit"
                     " --version")
    if result.get("breakdown"):
        lines += ["", "## Where the time goes (in-process, one child per history)", "",
                  *_table(("history", "runs read", "import CLI s", "import core s",
                           "read history s", "fit, cold s", "fit, cached s", "plan, cached s"),
                          ((size, b["runs_read"], f"{b['import_cli_s']:.3f}",
                            f"{b['import_core_s']:.3f}", f"{b['read_history_s']:.3f}",
                            f"{b['fit_cold_s']:.3f}", f"{b['fit_cached_s']:.4f}",
                            f"{b['plan_cached_s']:.4f}")
                           for size, b in result["breakdown"].items()))]
        lines += ["", "fit, cold: the first fit in the process (imports numpy, fits,"
                  " writes the cache entry); fit, cached: the same runs again, answered from the"
                  " cache file; plan, cached: `plan()` over 57 candidates with the cached model."]
    _render_whatif_breakdown(lines, result)
    cal = result.get("calibration")
    if cal:
        b9, b97 = cal["bounds"]["0.9"], cal["bounds"]["0.97"]
        lines += ["", "## Calibration without refits", "",
                  f"The job's {cal['runs']} runs ({cal['co_runner_jobs']} co-runner classes in"
                  " the model) of the fit-goal history, one BLAS thread. The planner's bound"
                  " on runtime / predicted from the model's own leave-one-out ratios (one fit;"
                  " `cobell_cli/core/model/loo.py`) next to the"
                  f" {JACKKNIFE_MAX_FITS}-fold CV+ refits it replaced"
                  " (`calibration.jackknife_ratios`):", "",
                  "| | time s | 0.9 bound | 0.97 bound |", "|---|---|---|---|",
                  f"| fit, leave-one-out ratios included | {cal['fit_s']:.3f} | {b9[0]:.4f} |"
                  f" {b97[0]:.4f} |",
                  f"| {JACKKNIFE_MAX_FITS} refits (CV+) | {cal['refits_s']:.3f} | {b9[1]:.4f} |"
                  f" {b97[1]:.4f} |"]
    return "\n".join(lines) + "\n"


def _table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table's lines."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(map(str, row)) + " |" for row in rows)]


def _render_whatif_breakdown(lines: list[str], result: Mapping[str, Any]) -> str:
    if result.get("whatif_breakdown"):
        keys = ("read_profiles_s", "whatif_replaying_s", "whatif_storing_s", "whatif_stored_s",
                "predict_first_s", "predict_cached_s")
        lines += ["", "## Where the time goes with event-log profiles (in-process)", "",
                  *_table(("history", "profiles", "read profiles s", "what-if, replaying s",
                           "what-if, storing s", "what-if, stored s", "predict, first s",
                           "predict, cached s"),
                          ((label, b["profiles"], *(f"{b[k]:.3f}" for k in keys))
                           for label, b in result["whatif_breakdown"].items()))]
        lines += ["", "read profiles: `api.job_profiles` (the job's newest three and the"
                  " cluster's, decoded from run_profiles); what-if: fit and predictions at"
                  " 1..64 executors, replaying every profile (no memory), filling a fresh"
                  " ReplayCache and saving it, and answered from that saved table in a new"
                  " ReplayCache; predict: `api.predict` with an empty cache directory, then"
                  " again (model cache and stored replays)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="histories of 100 and 1000 runs, 3 repeats, no spark-submit, no "
                             "breakdown; prints, writes nothing")
    parser.add_argument("--profiles-only", action="store_true",
                        help="only the rows of the job with event-log profiles (and config show,"
                             " spark-submit unless --quick); prints, writes nothing")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    args = parser.parse_args(argv)
    result = run(quick=args.quick, repeats=args.repeats, data_dir=args.data, sizes=args.sizes,
                 profiles_only=args.profiles_only)
    command = "python -m bench.latency" + (" --quick" if args.quick else "") + (
        " --profiles-only" if args.profiles_only else "")
    text = render(result, command)
    publish(text, None if args.quick or args.profiles_only else args.output)


def run(*, quick: bool, repeats: int | None = None, data_dir: Path = DEFAULT_DATA,
        sizes: Sequence[int] | None = None, profiles_only: bool = False) -> dict[str, Any]:
    sizes = () if profiles_only else tuple(sizes or ((100, 1_000) if quick else SIZES))
    repeats = repeats or (3 if quick else 5)
    # The console script installed next to this interpreter, as a user runs it; not whatever
    # `cobell` comes first on PATH (a pyenv shim there adds ~0.1 s of bash and pyenv).
    cobell = Path(sys.executable).with_name("cobell")
    base_cmd = [str(cobell)] if cobell.exists() else [sys.executable, "-m", "cobell_cli"]
    started = time.perf_counter()
    # An installed cobell runs from bytecode (pip compiles at install time). An editable
    # checkout compiles on first import, unless PYTHONDONTWRITEBYTECODE is set, as on the CI
    # machines; then every process would recompile cobell_cli (~50 ms). Measure what users run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "cobell_cli")],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="cobell-latency-") as tmp:
        home = Path(tmp)
        env = child_env(home)
        dbs = {}
        for size in sizes:
            dbs[size] = home / f"history-{size}.db"
            build_history(dbs[size], size, data_dir)
        predict = ["predict", "--cluster", "none", "--job", JOB, "-t", f"{TARGET_S:g}"]
        commands: dict[str, Command] = {
            "python -c pass": ([sys.executable, "-c", "pass"], {}),
            IMPORT_NUMPY: ([sys.executable, "-c", "import numpy"], {}),
            IMPORT_SCIPY: ([sys.executable, "-c", "import numpy, scipy.optimize"], {}),
            "cobell --help": ([*base_cmd, "--help"], {}),
            "cobell config show": ([*base_cmd, "config", "show"], {})}
        if profiles_only:
            commands = {k: v for k, v in commands.items() if k in ("python -c pass",
                                                                   "cobell config show")}
        profile_dbs = {}
        log_mb = QUICK_PROFILE_LOG_MB if quick else PROFILE_LOG_MB
        profile_predict = ["predict", "--cluster", "none", "--job", PROFILE_JOB, "-t",
                           f"{PROFILE_TARGET_S:g}"]
        for n in (1, len(PROFILE_EXECUTORS)):
            db = home / f"history-profiles-{n}.db"
            tasks = build_profile_history(db, home, PROFILE_EXECUTORS[:n], log_mb)
            label = profile_label(n, tasks)
            profile_dbs[label] = db
            argv = [*base_cmd, "--db", str(db), *profile_predict]
            commands[f"predict, {label}"] = (argv, {})
            commands[f"predict, {label}, no cache"] = (argv, {"COBELL_MODEL_CACHE": "off"})
        db = home / "history-profiles-others.db"
        shutil.copy(profile_dbs[label], db)
        others = add_other_jobs(db, home, log_mb)
        label = f"{label} and {others} runs of {OTHER_PROFILE_JOBS} other jobs"
        profile_dbs[label] = db
        argv = [*base_cmd, "--db", str(db), *profile_predict]
        commands[f"predict, {label}"] = (argv, {})
        commands[f"predict, {label}, no cache"] = (argv, {"COBELL_MODEL_CACHE": "off"})
        for size in sizes:
            argv = [*base_cmd, "--db", str(dbs[size]), *predict]
            commands[f"predict, {size} runs"] = (argv, {})
            commands[f"predict, {size} runs, no cache"] = (argv, {"COBELL_MODEL_CACHE": "off"})
        fit_label = ""
        if not quick and not profiles_only:
            fit_db = home / f"history-{FIT_RUNS}-{FIT_CO_JOBS}co.db"
            build_history(fit_db, FIT_RUNS, data_dir, co_jobs=co_job_names(FIT_CO_JOBS))
            fit_argv = [*base_cmd, "--db", str(fit_db), *predict]
            off = {"COBELL_MODEL_CACHE": "off"}
            cores = str(os.cpu_count() or 1)
            fit_label = f"{FIT_RUNS} runs, {FIT_CO_JOBS} co-runner jobs, no cache"
            commands[f"predict (default), {fit_label}"] = (fit_argv, off)
            commands[f"predict --confidence point, {fit_label}"] = (
                [*fit_argv, "--confidence", "point"], off)
            commands[f"predict (default), {fit_label}, BLAS threads = {cores}"] = (
                fit_argv, {**off, **{v: cores for v in BLAS_THREAD_VARS}})
        spark_note = ""
        if not quick:
            from cobell_cli.run.local_cluster import spark_submit_path

            try:
                spark = spark_submit_path()
            except Exception as exc:  # no pyspark: say so, measure the rest
                spark, spark_note = None, f"pyspark not installed ({exc})"
            if spark is not None and not shutil.which("java") and not os.environ.get(
                    "JAVA_HOME"):
                spark, spark_note = None, "Java is missing"
            if spark is not None:
                commands["spark-submit --version"] = ([str(spark), "--version"], {})
        load_before = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        measured = measure(commands, env, repeats)
        result: dict[str, Any] = {"sizes": sizes, "repeats": repeats, "measured": measured,
                                  "spark_note": spark_note or "not run in --quick",
                                  "fit_label": fit_label, "profile_labels": list(profile_dbs)}
        if not quick:
            result["breakdown"] = {size: breakdown(dbs[size], env) for size in sizes}
            result["whatif_breakdown"] = {label: whatif_breakdown(db, env)
                                          for label, db in profile_dbs.items()}
        if fit_label:
            result["calibration"] = calibration_check(fit_db, env)
        result["load_before"] = load_before
        result["load_after"] = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        result["elapsed_s"] = time.perf_counter() - started
    return result


if __name__ == "__main__":
    main()
