"""Executor memory through the CLI and the planner: predict's memory object and columns,
--minimize memory-mb-seconds, a command's own memory kept and judged, bad memory strings, and
submit's memory failures and retries (with a stand-in spark-submit that runs out of memory
until it is given enough)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cobell_cli.core.memory.plan import MemoryRequest
from cobell_cli.core.memory.sizing import ContainerRules
from cobell_cli.core.plan import plan
from cobell_cli.store.history import History
from tests.cli_support import cobell, cobell_process

MB = 1024 * 1024


def _runs(job: str = "etl") -> list[dict]:
    """Runs at 4 input sizes and 4 scale-outs: runtime 30 + 600/x, heap need 400 + 3 MB per
    MB of input per executor, recorded at a 2 GB reservation."""
    out, i = [], 0
    for size_mb in (100, 150, 225, 340):
        for x in (2, 4, 6, 8):
            i += 1
            out.append({"id": i, "job": job, "status": "succeeded", "scale_out": x,
                        "input_bytes": size_mb * MB, "runtime_s": 30 + 600 / x,
                        "submitted_at": 1e9 + 100 * i, "executor_memory_mb": 2048,
                        "peak_memory_mb": 400 + 3 * size_mb / x, "backend": "yarn"})
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs(_runs())
    return path


def test_predict_sizes_each_candidates_memory(db: Path) -> None:
    args = ("--db", db, "predict", "-j", "etl", "-t", "200", "--cluster", "none",
            "--input-size", "500M", "--input-tolerance", "10", "--max-scale-out", "8")
    result = cobell(*args, "--json")
    assert result.exit_code == 0, result.stderr
    plan_ = json.loads(result.stdout)
    memory = plan_["memory"]
    assert memory["source"] == "model" and memory["runs"] == 16
    assert memory["model"].endswith("(per_executor)")
    x = plan_["scale_out"]
    need = 400 + 3 * 500 / x
    assert memory["predicted_peak_mb"] == pytest.approx(need, rel=0.05)
    assert memory["executor_memory_mb"] >= memory["upper_peak_mb"] >= memory["predicted_peak_mb"]
    # YARN (the runs' backend, no cluster to ask): Spark's overhead, the default 1024 MB step
    assert memory["executor_overhead_mb"] >= 384 and memory["container_mb"] % 1024 == 0
    per = {c["scale_out"]: c["executor_memory_mb"] for c in plan_["candidates"]}
    assert per[1] > per[8]  # more executors, less input each
    table = cobell(*args)
    assert "memory MB" in table.stdout and "container MB" in table.stdout
    assert "memory: " in table.stdout and "MB overhead = " in table.stdout


def test_a_job_without_measured_peaks_is_not_sized_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    runs = [{k: v for k, v in r.items() if k != "peak_memory_mb"} for r in _runs()]
    with History.open(path) as history:
        history.insert_runs(runs)
    result = cobell("--db", path, "predict", "-j", "etl", "-t", "200", "--cluster", "none")
    assert result.exit_code == 0, result.stderr
    assert "memory: not sized" in result.stdout and "memory MB" not in result.stdout


def test_minimize_memory_mb_seconds_prefers_the_cheaper_containers() -> None:
    """Runtime falls as 1/x, the need per executor falls faster than the executors grow: by
    memory-MB-seconds a larger scale-out is cheaper than the smallest that meets the target."""
    # recorded at a 16 GB reservation: a heap peak is never above the heap it had
    history = [{**r, "peak_memory_mb": 300 + 60 * r["input_bytes"] / MB / r["scale_out"],
                "executor_memory_mb": 16384} for r in _runs()]
    request = MemoryRequest(ContainerRules("yarn", 1024), input_bytes=400 * MB)
    common = dict(job="etl", history=history, now=2e9, target_s=200.0, min_scale_out=1,
                  max_scale_out=8, input_bytes=400 * MB, input_tolerance=10.0,
                  memory=request, memory_runs=history)
    smallest = plan(**common)
    cheapest = plan(**common, minimize="memory-mb-seconds")
    assert cheapest.minimize == "memory-mb-seconds" and smallest.minimize == "executor-seconds"
    meeting = [c for c in cheapest.candidates if c.meets_target]
    best = min(meeting, key=lambda c: (c.memory_mb_seconds, c.scale_out))
    assert cheapest.scale_out == best.scale_out > smallest.scale_out
    assert smallest.scale_out == min(c.scale_out for c in meeting)


def test_minimize_takes_only_its_two_choices(db: Path) -> None:
    result = cobell("--db", db, "predict", "-j", "etl", "-t", "200", "--minimize", "dollars")
    assert result.exit_code == 2
    assert "executor-seconds, memory-mb-seconds" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 2


# --- submit with a stand-in spark-submit ---------------------------------------------------

FAKE_SPARK = """#!/bin/sh
# A spark-submit stand-in: "runs out of memory" below NEED MB of --executor-memory.
need={need}
mem=0
while [ $# -gt 0 ]; do
  case "$1" in --executor-memory) mem=$(echo "$2" | tr -d m); shift;; esac
  shift
done
echo "$mem" >> "{calls}"
if [ "$mem" -lt "$need" ]; then
  echo "ERROR Executor: Exception in task 0.0: java.lang.OutOfMemoryError: Java heap space" >&2
  exit 1
fi
echo done
"""


def _fake_spark(tmp_path: Path, need: int) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    script = tmp_path / "bin" / "spark-submit"
    script.parent.mkdir()
    script.write_text(FAKE_SPARK.format(need=need, calls=calls))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, calls


def _submit(db: Path, script: Path, *extra: str) -> tuple[int, list[dict], str]:
    proc = cobell_process(
        "--db", db, "submit", "-j", "etl", "-t", "600", "--cluster", "none", "--json",
        "--input-size", "300M", "--max-scale-out", "4", "--event-log-dir", "off", *extra, "--",
        script, "--master", "spark://127.0.0.1:7077", "--executor-memory", "512m", "app.py",
        env={"COBELL_MODEL_CACHE": "off"},
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    return proc.returncode, [json.loads(lines[-1])] if lines else [], proc.stderr


def test_a_memory_failure_is_recorded_and_retried_at_a_larger_memory(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    script, calls = _fake_spark(tmp_path, need=1000)
    code, (summary,), err = _submit(db, script, "--retry-on-oom", "3")
    assert code == 0, err
    tried = [int(v) for v in calls.read_text().split()]
    assert tried[0] == 512 and tried[-1] >= 1000 and tried == sorted(set(tried))
    assert [a["executor_memory_mb"] for a in summary["attempts"]] == tried
    assert [a["failure_reason"] for a in summary["attempts"]] == [
        "memory"] * (len(tried) - 1) + [None]
    with History.open(db) as history:
        runs = sorted(history.runs(), key=lambda r: r["id"])
    assert [(r["status"], r["failure_reason"], r["executor_memory_mb"]) for r in runs] == [
        (a["status"], a["failure_reason"], a["executor_memory_mb"]) for a in summary["attempts"]]
    assert "failed for memory at 512 MB" in err


def test_without_retries_a_memory_failure_ends_with_the_jobs_exit_code(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    script, calls = _fake_spark(tmp_path, need=1000)
    code, (summary,), _ = _submit(db, script)
    assert code == 1 and summary["failure_reason"] == "memory" and "attempts" not in summary
    assert calls.read_text().split() == ["512"]


def test_an_unreadable_executor_memory_stops_before_anything_starts(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    script, calls = _fake_spark(tmp_path, need=1)
    proc = cobell_process(
        "--db", db, "submit", "-j", "etl", "-t", "60", "--cluster", "none", "--",
        script, "--master", "spark://127.0.0.1:7077", "--executor-memory", "4gigs", "app.py",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "4gigs" in proc.stderr and "512m" in proc.stderr and "Traceback" not in proc.stderr
    assert not calls.exists() and not (db.exists() and History.open(db).runs())


def test_flink_says_its_memory_is_not_sized(tmp_path: Path) -> None:
    result = cobell("--db", tmp_path / "h.db", "submit", "-j", "f", "-t", "60", "--cluster",
                    "none", "--dry-run", "--", "flink", "run", "job.jar")
    assert result.exit_code == 0, result.stderr
    assert "not sized for Flink" in result.stderr


if os.name != "posix":  # the stand-in is a shell script
    pytestmark = pytest.mark.skip(reason="needs /bin/sh")


def test_the_memory_line_adds_up_the_terms_yarn_grants(db: Path) -> None:
    """Issue 36 item 5: a kept 512m on YARN (the default 1024 MB step) is 512 MB heap + 384 MB
    overhead + 128 MB rounding = 1024 MB container, in text and --json; a heap cobell sizes
    takes the rounding itself, and the terms still add up."""
    args = ("--db", db, "submit", "-j", "etl", "-t", "200", "--cluster", "none",
            "--input-size", "300M", "--dry-run")
    kept = ("--", "spark-submit", "--master", "yarn", "--executor-memory", "512m", "app.py")
    text = cobell(*args, *kept)
    assert text.exit_code == 0, text.stderr
    assert ("memory: 512 MB heap + 384 MB overhead + 128 MB rounding = 1024 MB container"
            in text.stdout)
    memory = json.loads(cobell(*args, "--json", *kept).stdout)["memory"]
    assert (memory["executor_memory_mb"], memory["executor_overhead_mb"],
            memory["rounding_mb"], memory["container_mb"]) == (512, 384, 128, 1024)
    sized = json.loads(cobell(*args, "--json", "--", "spark-submit", "--master", "yarn",
                              "app.py").stdout)["memory"]
    assert sized["executor_overhead_mb"] >= 384 and sized["rounding_mb"] == 0
    assert (sized["executor_memory_mb"] + sized["executor_overhead_mb"]
            == sized["container_mb"])


def test_a_job_that_never_gives_an_input_size_is_sized_from_its_peaks(tmp_path: Path) -> None:
    """Issue 36 item 3: runs with a measured peak and no --input-size are not invisible:
    `model show` names the constant of their peaks, predict sizes from it (and says so), and
    `model plot --memory` draws the peaks in run order."""
    path = tmp_path / "h.db"
    runs = [{k: v for k, v in r.items() if k != "input_bytes"} for r in _runs()]
    with History.open(path) as history:
        history.insert_runs(runs)
    shown = cobell("--db", path, "model", "show", "-j", "etl")
    assert shown.exit_code == 0, shown.stderr
    assert "constant:" in shown.stdout and "16 runs without an input size" in shown.stdout
    described = json.loads(cobell("--db", path, "model", "show", "-j", "etl", "--json").stdout)
    assert described["memory"]["input_free"] and described["memory"]["runs"] == 16
    predicted = cobell("--db", path, "predict", "-j", "etl", "-t", "200", "--cluster", "none",
                       "--json")
    memory = json.loads(predicted.stdout)["memory"]
    peaks = sorted(r["peak_memory_mb"] for r in runs)
    assert memory["source"] == "model" and memory["model"] == "constant"
    assert "no input size" in memory["note"]
    assert peaks[0] < memory["predicted_peak_mb"] < peaks[-1]
    assert memory["executor_memory_mb"] >= memory["upper_peak_mb"] > memory["predicted_peak_mb"]
    plot = cobell("--db", path, "model", "plot", "-j", "etl", "--memory", "-o",
                  tmp_path / "m.png")
    assert plot.exit_code == 0, plot.stderr
    assert (tmp_path / "m.png").stat().st_size > 1000


def test_the_reason_memory_is_not_sized_names_what_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    runs = [{k: v for k, v in r.items() if k != "peak_memory_mb"} for r in _runs()]
    with History.open(path) as history:
        history.insert_runs(runs)
    result = cobell("--db", path, "predict", "-j", "etl", "-t", "200", "--cluster", "none")
    assert "memory: not sized (no run with a measured executor memory peak" in result.stdout
    shown = cobell("--db", path, "model", "show", "-j", "etl")
    assert "no run with a measured executor memory peak" in shown.stdout
    plot = cobell("--db", path, "model", "plot", "-j", "etl", "--memory", "-o",
                  tmp_path / "m.png")
    assert plot.exit_code == 2 and "measured executor memory peak" in plot.stderr
    assert "Traceback" not in plot.stderr


def test_a_memory_confidence_the_history_cannot_support_says_so(db: Path) -> None:
    """Issue 36: a level given holds out as many runs as it needs, but the fixture (16 runs at
    4 input sizes) has only 8 to hold out: above 8/9 the bound is their largest x 1.05 at any
    P, so --memory-confidence 0.99 sizes as 0.9 does, and says so (a warning naming 0.888;
    exit 2 under --strict); at 0.857 or below it acts."""
    args = ("--db", db, "predict", "-j", "etl", "-t", "200", "--cluster", "none",
            "--input-size", "500M", "--max-scale-out", "8", "--json")
    at = {p: cobell(*args, "--memory-confidence", p) for p in ("0.99", "0.9", "0.857", "0.6")}
    assert all(r.exit_code == 0 for r in at.values()), [r.stderr for r in at.values()]
    plans = {p: json.loads(r.stdout) for p, r in at.items()}
    upper = {p: plan_["memory"]["upper_peak_mb"] for p, plan_ in plans.items()}
    assert upper["0.99"] == upper["0.9"] > upper["0.857"] >= upper["0.6"]
    assert plans["0.99"]["memory"]["held_out_ratios"] == 8
    shown = json.loads(cobell("--db", db, "model", "show", "-j", "etl", "--json").stdout)
    assert shown["memory"]["bound"]["largest_confidence_that_acts"] == 0.888  # what 0.99 met
    assert plans["0.6"]["memory"]["held_out_ratios"] == 6  # 6 runs are enough for 0.6
    said = [w for w in plans["0.99"]["warnings"] if w.startswith("--memory-confidence")]
    assert len(said) == 1 and "0.99 cannot act" in said[0]
    assert "8 held-out ratios support at most P 0.888" in said[0]
    assert "up to 99: P 0.99" in said[0]  # what would raise it
    assert "--memory-confidence 0.99 cannot act" in at["0.99"].stderr
    # a field a script (and --strict) can read, not only a warning's words
    assert plans["0.99"]["memory"]["confidence_cannot_act"] == said[0]
    for p in ("0.857", "0.6"):
        assert not [w for w in plans[p]["warnings"] if w.startswith("--memory-confidence")]
        assert "confidence_cannot_act" not in plans[p]["memory"]
    default = json.loads(cobell(*args).stdout)  # the default level is not the user's ask
    assert not [w for w in default["warnings"] if w.startswith("--memory-confidence")]
    assert default["memory"]["held_out_ratios"] == 6  # the default rule's six
    strict = cobell(*args, "--memory-confidence", "0.99", "--strict")
    assert strict.exit_code == 2 and "at most P 0.888" in strict.stderr
    assert "Traceback" not in strict.stderr and len(strict.stderr.strip().splitlines()) <= 2
    assert cobell(*args, "--memory-confidence", "0.857", "--strict").exit_code == 0


def test_a_memory_confidence_given_holds_out_the_runs_it_needs_to_act(tmp_path: Path) -> None:
    """Issue 36: without the option the bound is the largest of 6 held-out ratios x 1.05 at
    any level; --memory-confidence 0.95 on a 40-run history holds out 19 runs and acts (no
    warning, --strict passes), and 0.99 holds out every run it can (38 here) and says it needs
    99. Each run's need varies by its own factor, so the levels' bounds differ."""
    path = tmp_path / "h.db"
    wobble = [1.00, 1.08, 0.95, 1.15, 0.90, 1.03, 1.21, 0.97, 1.11, 0.93]
    runs = [{"id": i + 1, "job": "etl", "status": "succeeded", "scale_out": 4,
             "input_bytes": (100 + 25 * i) * MB, "runtime_s": 200.0,
             "submitted_at": 1e9 + 100 * i, "executor_memory_mb": 8192, "backend": "yarn",
             "peak_memory_mb": (400 + 3 * (100 + 25 * i) / 4) * wobble[i % 10]}
            for i in range(40)]
    with History.open(path) as history:
        history.insert_runs(runs)
    args = ("--db", path, "predict", "-j", "etl", "-t", "300", "--cluster", "none",
            "--input-size", "1200M", "--min-scale-out", "4", "--max-scale-out", "4", "--json")
    default = json.loads(cobell(*args).stdout)["memory"]
    asked = {p: cobell(*args, "--memory-confidence", p, "--strict") for p in ("0.95", "0.99")}
    assert asked["0.95"].exit_code == 0, asked["0.95"].stderr
    at95 = json.loads(asked["0.95"].stdout)["memory"]
    assert default["held_out_ratios"] == 6 and at95["held_out_ratios"] == 19
    assert "confidence_cannot_act" not in at95
    assert at95["upper_peak_mb"] != default["upper_peak_mb"]
    assert asked["0.99"].exit_code == 2  # 38 ratios support P 0.974 at most: --strict stops
    assert "38 held-out ratios support at most P 0.974" in asked["0.99"].stderr
    assert "up to 99: P 0.99" in asked["0.99"].stderr
    # model show says how far the option reaches on these runs, and the default bound's factor
    bound = json.loads(cobell("--db", path, "model", "show", "-j", "etl", "--json").stdout)[
        "memory"]["bound"]
    assert bound["held_out_ratios"] == 6 and bound["largest_confidence_that_acts"] == 0.974
    assert bound["factor"] == pytest.approx(default["upper_peak_mb"]
                                            / default["predicted_peak_mb"], abs=0.002)
    shown = cobell("--db", path, "model", "show", "-j", "etl").stdout
    assert f"bound {bound['factor']:.2f}x the prediction at P 0.95 (6 held-out ratios)" in shown
    assert "--memory-confidence acts up to P 0.974 on these runs" in shown


def test_a_memory_confidence_with_nothing_to_size_says_so(tmp_path: Path) -> None:
    """No run with a measured peak: no level acts; submit --strict stops before starting."""
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs([{k: v for k, v in r.items() if k != "peak_memory_mb"}
                             for r in _runs()])
    args = ("--db", path, "submit", "-j", "etl", "-t", "200", "--cluster", "none", "--dry-run",
            "--memory-confidence", "0.9")
    spark = ("--", "spark-submit", "--master", "yarn", "app.py")
    warned = cobell(*args, *spark)
    assert warned.exit_code == 0, warned.stderr
    assert "--memory-confidence 0.9 cannot act: nothing is sized" in warned.stderr
    strict = cobell(*args, "--strict", *spark)
    assert strict.exit_code == 2 and "nothing is sized" in strict.stderr
    assert "Traceback" not in strict.stderr
