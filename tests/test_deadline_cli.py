"""`--deadline` on predict and submit: real processes, real SQLite, the stand-in YARN RM.

The history is synthetic and its numbers known: job `report` takes 40 + 1000/x s alone and
twice that alongside `etl` or another `report` (a = 1); `etl` takes 20 + 480/x s. So with
an `etl` app at 2 executors that started 100 s ago (260 s alone: it ends in ~160 s) and a
deadline 900 s away, waiting for it and running alone is cheaper than starting now slowed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.yarn_standin import StandinRM

PY = sys.executable
XS = (2, 3, 4, 6, 8, 12, 16, 24, 32)


def _runs(now: float) -> list[dict]:
    rng = np.random.default_rng(27)
    out, t = [], now - 400_000.0
    for _rep in range(2):
        for x in XS:
            for together in (None, "etl", "report"):
                ratio = 0.0 if together is None else float(rng.choice([0.5, 1.0]))
                runtime = (40 + 1000 / x) * (1 + ratio) * float(rng.lognormal(0, 0.02))
                colocations = [] if together is None else [{
                    "co_runner_app_id": f"application_1_{len(out):04d}",
                    "co_runner_job": together, "co_runner_scale_out": 4,
                    "overlap_s": ratio * runtime, "overlap_ratio": ratio}]
                out.append({"job": "report", "status": "succeeded", "scale_out": x,
                            "runtime_s": runtime, "started_at": t, "finished_at": t + runtime,
                            "submitted_at": t, "colocations": colocations})
                t += 3000
    for x in (2, 4, 8, 16):
        for _ in range(3):
            runtime = (20 + 480 / x) * float(rng.lognormal(0, 0.02))
            out.append({"job": "etl", "status": "succeeded", "scale_out": x,
                        "runtime_s": runtime, "started_at": t, "finished_at": t + runtime,
                        "submitted_at": t})
            t += 3000
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with History.open(path) as history:
        history.insert_runs(_runs(time.time()), keep_ids=False)
    return path


@pytest.fixture
def rm(yarn_rm: StandinRM) -> StandinRM:
    """The stand-in on today's clock, with `etl` at 2 executors for the last 100 s."""
    yarn_rm.now_s = time.time()
    yarn_rm.add_app("etl", tags="cobell,cobell-job:etl", executors=2, duration_s=None,
                    start_s=yarn_rm.now_s - 100, app_id="application_1699990000000_0042")
    return yarn_rm


def _yarn(rm: StandinRM) -> list[str]:
    return ["--cluster", "yarn", "--rm-url", rm.url, "--max-scale-out", "32"]


def _waiting_rows(db: Path) -> list[tuple]:
    with History.open(db) as history:
        return history.conn.execute("SELECT state, job FROM waiting").fetchall()


def _report_runs(db: Path) -> list[dict]:
    """The runs the tests' submits made (the synthetic history's have no deadline)."""
    with History.open(db) as history:
        return [r for r in history.runs(newest_first=False) if r["deadline_at"] is not None]


def test_predict_shows_the_starts_and_why_one_won(db: Path, rm: StandinRM) -> None:
    result = cobell("--db", db, "predict", "-j", "report", "--deadline", "+15min", *_yarn(rm))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "deadline " in out and "start " in out and "after" in out
    assert "etl (application_1699990000000_0042)" in out
    assert "decision: start at " in out and "waits for etl" in out  # cheaper: module doc
    why = cobell("--db", db, "predict", "-j", "report", "--deadline", "+15min", "--verbose",
                 *_yarn(rm)).stdout
    assert "  why: " in why and "waiting for etl" in why
    js = cobell("--db", db, "predict", "-j", "report", "--deadline", "+15min", "--json",
                *_yarn(rm))
    plan = json.loads(js.stdout)
    assert plan["deadline_at"] == pytest.approx(time.time() + 900, abs=30)
    assert plan["start_in_s"] > 0 and plan["start_at"] > time.time()
    assert {o["start_in_s"] == 0 for o in plan["options"]} == {True, False}
    chosen = min((o for o in plan["options"] if o["feasible"]), key=lambda o: o["cost"])
    assert plan["scale_out"] == chosen["scale_out"]
    assert plan["meet_probability"] >= 0.9


def test_start_now_and_a_short_max_wait_start_at_once(db: Path, rm: StandinRM) -> None:
    for extra in (["--start-now"], ["--max-wait", "0s"]):
        result = cobell("--db", db, "predict", "-j", "report", "--deadline", "+15min", "--json",
                        *_yarn(rm), *extra)
        plan = json.loads(result.stdout)
        assert plan["start_in_s"] == 0 and len(plan["options"]) == 1, extra
    # a start now still gathers the submits that cron fires with it (GATHER_S), unless capped
    result = cobell("--db", db, "predict", "-j", "report", "--deadline", "+15min", "--json",
                    *_yarn(rm), "--max-wait", "5s")
    plan = json.loads(result.stdout)
    assert 0 < plan["start_in_s"] <= 5 and plan["waits_for"] == "submits arriving with it"


def test_a_deadline_in_the_past_is_loud_and_strict_exits_2(db: Path, rm: StandinRM) -> None:
    """Issue 35: it says the deadline has passed (no 0 s target), and under --strict it is a
    usage error before anything is planned (was exit 3, advising --max-scale-out)."""
    result = cobell("--db", db, "predict", "-j", "report", "--deadline", "-", *_yarn(rm))
    assert result.exit_code == 2 and "is not a time" in result.stderr
    past = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))
    loud = cobell("--db", db, "predict", "-j", "report", "--deadline", past, *_yarn(rm))
    assert loud.exit_code == 0
    assert " passed 60 min " in loud.stderr and "planning the fastest start" in loud.stderr
    strict = cobell("--db", db, "predict", "-j", "report", "--deadline", past, "--strict",
                    *_yarn(rm))
    assert strict.exit_code == 2 and "nothing was started" in strict.stderr
    assert "Traceback" not in strict.stderr and "--max-scale-out" not in strict.stderr


def _submit(db: Path, rm: StandinRM, *extra: str, command: list[str] | None = None,
            ) -> subprocess.Popen[str]:
    argv = [PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "report", *_yarn(rm),
            *extra, "--", *(command or ["echo", "ran at {scale_out}"])]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _read_until(proc: subprocess.Popen[str], needle: str, timeout_s: float = 60) -> str:
    """stderr lines until one holds `needle` (the process keeps running)."""
    seen = []
    deadline = time.monotonic() + timeout_s
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"no {needle!r} in:\n{''.join(seen)}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_wait_and_nothing_starts(db: Path, rm: StandinRM, signum: int) -> None:
    proc = _submit(db, rm, "--deadline", "+15min")
    seen = _read_until(proc, "waiting until")
    assert "for etl (application_1699990000000_0042) to end, then scale-out" in seen
    assert _waiting_rows(db) == [("waiting", "report")]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert f"interrupted by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert _report_runs(db) == []
    assert _waiting_rows(db) == []


def test_a_killed_waiting_submit_is_reaped(db: Path, rm: StandinRM) -> None:
    proc = _submit(db, rm, "--deadline", "+15min")
    _read_until(proc, "waiting until")
    proc.kill()
    proc.communicate(timeout=60)
    assert _waiting_rows(db) == []  # History.open reaps the row of the dead process
    assert _report_runs(db) == []


def test_the_wait_ends_when_the_co_runner_does_and_the_run_records_it(db: Path,
                                                                      rm: StandinRM) -> None:
    proc = _submit(db, rm, "--deadline", "+15min", "--json")
    _read_until(proc, "waiting until")
    rm.finish("application_1699990000000_0042")  # the poll notices within 10 s
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["waited_s"] > 0 and summary["deadline_at"] > time.time()
    run = _report_runs(db)[-1]
    assert run["waited_s"] == pytest.approx(summary["waited_s"])
    assert run["deadline_at"] == pytest.approx(summary["deadline_at"])
    assert "starting now" in run["start_reason"]
    assert run["target_s"] <= run["deadline_at"] - run["submitted_at"]
    assert _waiting_rows(db) == []


def test_submits_that_decide_at_once_take_turns(db: Path, rm: StandinRM) -> None:
    """Three submits of `report` (which slows another `report` twofold) at the same moment
    on one history, no other app: they gather (GATHER_S), then decide together under the
    history's lock: some start, the others wait for them (all three at once would miss the
    deadline). Without the lock all would start. Whether one or two start first is the joint
    schedule's cost choice (both were seen), so the test asks only what the lock guarantees."""
    rm.finish("application_1699990000000_0042")
    procs = [_submit(db, rm, "--deadline", "+25min",
                     command=["sh", "-c", "sleep 30; echo {scale_out}"]) for _ in range(3)]
    lines: list[list[str]] = [[] for _ in procs]

    def drain(i: int) -> None:
        assert procs[i].stderr is not None
        for line in procs[i].stderr:
            lines[i].append(line)

    for i in range(3):
        threading.Thread(target=drain, args=(i,), daemon=True).start()
    states: list[tuple] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with History.open(db, read_only=True) as history:
            states = history.conn.execute("SELECT state, pid, start_at FROM waiting").fetchall()
        if _decided(states):
            break
        time.sleep(0.2)
    assert _decided(states), lines
    started = {pid for s, pid, _ in states if s == "started"}
    waiting = {pid for s, pid, _ in states if s == "waiting"}
    assert started and waiting, states
    for proc in procs:
        if proc.pid in waiting:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(timeout=90)
    codes = {proc.pid: proc.returncode for proc in procs}
    assert all(codes[pid] == 0 for pid in started), lines
    assert all(codes[pid] == 143 for pid in waiting), lines
    assert len(_report_runs(db)) == len(started)
    assert _waiting_rows(db) == []


def _decided(states: list[tuple]) -> bool:
    """All three submits past their gathering: each started, or waiting for a start a minute
    or more away (a submit still gathering waits only GATHER_S)."""
    later = time.time() + 60
    return len(states) == 3 and any(s == "started" for s, _, _ in states) and all(
        s == "started" or (s == "waiting" and (at or 0) > later) for s, _, at in states)


def test_a_dry_run_decides_and_writes_nothing(db: Path, rm: StandinRM, tmp_path: Path) -> None:
    result = cobell("--db", db, "submit", "-j", "report", "--deadline", "+15min", "--dry-run",
                    "--json", *_yarn(rm), "--", "echo", "{scale_out}")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["start_in_s"] > 0 and plan["command"][0] == "echo"
    assert _waiting_rows(db) == [] and _report_runs(db) == []
    fresh = tmp_path / "new.db"  # a job's first submit: no model, so it would start now
    result = cobell("--db", fresh, "submit", "-j", "report", "--deadline", "+15min",
                    "--dry-run", "--json", "--cluster", "none", "--", "echo", "{scale_out}")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["start_in_s"] == 0
    assert _waiting_rows(fresh) == []


def _with_peaks(tmp_path: Path) -> Path:
    """The deadline tests' history, its `report` runs with measured memory peaks (the heap
    need falls with the scale-out: 300 + 2000 / x MB) and an input size."""
    path = tmp_path / "peaks.db"
    runs = [{**r, "executor_memory_mb": 2048, "peak_memory_mb": 300 + 2000 / r["scale_out"],
             "backend": "yarn", "input_bytes": 2**30} if r["job"] == "report" else r
            for r in _runs(time.time())]
    with History.open(path) as history:
        history.insert_runs(runs, keep_ids=False)
    return path


def test_a_deadline_minimizes_memory_mb_seconds(tmp_path: Path) -> None:
    """--deadline with --minimize memory-mb-seconds prices every start at the container
    sized for its scale-out (it was a usage error: the starts were priced in executor-seconds
    only); the chosen one is the cheapest in MB-s, not the smallest scale-out, and submit
    gives the run the memory sized for the scale-out the schedule chose."""
    db = _with_peaks(tmp_path)
    args = ("--db", db, "predict", "-j", "report", "--deadline", "+15min", "--cluster", "none",
            "--input-size", "1G", "--json")
    by_mb = cobell(*args, "--minimize", "memory-mb-seconds")
    assert by_mb.exit_code == 0, by_mb.stderr
    plan = json.loads(by_mb.stdout)
    plain = json.loads(cobell(*args).stdout)
    containers = {c["scale_out"]: c["container_mb"] for c in plan["candidates"]}
    assert containers[2] > containers[16]  # more executors, less memory each
    for option in plan["options"]:
        x = option["scale_out"]
        assert option["cost"] == pytest.approx(containers[x] * x * option["predicted_s"])
    assert all(o["cost"] == pytest.approx(o["scale_out"] * o["predicted_s"])
               for o in plain["options"])
    smallest = plain["scale_out"]  # executor-seconds: the smallest meeting the deadline
    assert plan["scale_out"] > smallest
    chosen = next(o for o in plan["options"] if o["scale_out"] == plan["scale_out"])
    by_smallest = containers[smallest] * next(
        o["predicted_s"] for o in plain["options"] if o["scale_out"] == smallest) * smallest
    assert chosen["cost"] < by_smallest
    run = cobell("--db", db, "submit", "--dry-run", "-j", "report", "--deadline", "+15min",
                 "--cluster", "none", "--input-size", "1G", "--minimize", "memory-mb-seconds",
                 "--json", "--", "spark-submit", "--master", "yarn", "app.py")
    assert run.exit_code == 0, run.stderr
    started = json.loads(run.stdout)
    x = started["scale_out"]
    heap = next(c["executor_memory_mb"] for c in started["candidates"] if c["scale_out"] == x)
    assert started["memory"]["scale_out"] == x and started["memory"]["container_mb"] == \
        containers[x]
    assert f"{heap}m" in started["command"]


def test_memory_mb_seconds_without_a_container_size_is_one_line(db: Path) -> None:
    """No measured peak (or not a Spark command): nothing sizes a container to price with,
    so the starts are priced by executor-seconds and a warning says why; --strict: exit 2,
    one line, nothing started (tests/test_planning_paths.py has every combination)."""
    why = {"predict": "no run with a measured executor memory peak or a memory failure yet",
           "submit": "memory is not sized for this command (not a Spark command)"}
    for command in ("predict", "submit"):
        tail = ["--dry-run", "--", "echo", "{scale_out}"] if command == "submit" else []
        args = ("--db", db, command, "-j", "report", "--deadline", "+1h", "--cluster", "none",
                "--minimize", "memory-mb-seconds", "--json", *tail)
        out = cobell(*args)
        assert out.exit_code == 0, out.stderr
        assert json.loads(out.stdout)["minimize"] == "executor-seconds"
        assert f"--minimize memory-mb-seconds cannot act: {why[command]}" in out.stderr
        strict = cobell(*args[:-len(tail) or None], "--strict", *tail)
        assert strict.exit_code == 2, strict.stderr
        assert strict.stderr.strip().count("\n") == 0 and why[command] in strict.stderr


def test_a_deadline_without_confidence_plans_at_the_deadline_default(db: Path) -> None:
    """bench.deadline's tuning seed 7: P(meet) was calibrated, yet at the runtime target's
    default of the time, 0.9, only ~91 % of the deadlines were met (the issue asks >= 95 % at
    default flags); a deadline without --confidence plans at risk.DEADLINE_CONFIDENCE, a given
    one is kept, and a runtime target keeps its own default (0.95 too since 29 Nov)."""
    from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
    from cobell_cli.core.schedule.risk import DEADLINE_CONFIDENCE

    def confidence(*extra: str) -> float:
        out = cobell("--db", db, "predict", "-j", "report", "--cluster", "none", "--json",
                     *extra)
        assert out.exit_code == 0, out.stderr
        return json.loads(out.stdout)["confidence"]

    assert DEADLINE_CONFIDENCE == 0.95
    assert confidence("--deadline", "+15min") == DEADLINE_CONFIDENCE
    assert confidence("--deadline", "+15min", "--confidence", "0.9") == 0.9
    assert confidence("--target-runtime", "900") == DEFAULT_CONFIDENCE
