"""`cobell model whatif` on real event logs (recorded on the local Spark cluster), and the
one-line errors for logs it cannot replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cobell_cli.sources.eventlog import iter_events
from tests.cli_support import cobell, cobell_process

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
BENCH_LOGS = Path(__file__).parents[1] / "bench" / "data" / "whatif"
SINGLE = LOGS / "app-20261122233927-0000.zstd"  # etl: 2 executors, two jobs
ROLLING = next(LOGS.glob("eventlog_v2_*"))
CRASHED = next(LOGS.glob("*.inprogress"))


def whatif(tmp_path: Path, *args: str):
    return cobell("--db", tmp_path / "none.db", "model", "whatif", *args)


def test_json_is_one_object_with_the_promised_fields(tmp_path: Path) -> None:
    r = whatif(tmp_path, "--event-log", SINGLE, "--scale-out", "4", "-x", "1", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"app_id", "observed_scale_out", "observed_runtime_s", "predictions"}
    assert out["app_id"] == "app-20261122233927-0000"
    assert out["observed_scale_out"] == 2
    assert out["observed_runtime_s"] == pytest.approx(54.88, abs=0.01)
    assert [p["scale_out"] for p in out["predictions"]] == [1, 4]
    one, four = (p["runtime_s"] for p in out["predictions"])
    for p in out["predictions"]:
        assert p["lower_s"] < p["runtime_s"] < p["upper_s"]
    # the interval widens with the distance from the observed 2 executors (1 and 4: alike)
    widths = [p["upper_s"] / p["lower_s"] for p in out["predictions"]]
    near = json.loads(whatif(tmp_path, "--event-log", SINGLE, "-x", "2", "--json").stdout)
    assert near["predictions"][0]["upper_s"] / near["predictions"][0]["lower_s"] < min(widths)
    # a tiny job: its 24 s start-up and 14 s cold tasks on one host dominate, and both grow
    # with the executors sharing the host, so more executors do not help
    assert one > 0 and four > out["observed_runtime_s"]


def test_default_range_and_the_table(tmp_path: Path) -> None:
    r = whatif(tmp_path, "--event-log", ROLLING)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].split() == ["scale_out", "runtime_s", "vs_observed"]
    counts = [int(line.split()[0]) for line in lines[2:]]
    assert counts == [1, 2, 4, 8]  # observed 2: powers of two up to max(8, 4 x 2)
    assert " executors x " in r.stderr


def test_the_replay_at_the_observed_count_is_the_observed_runtime(tmp_path: Path) -> None:
    r = whatif(tmp_path, "--event-log", BENCH_LOGS / "wide-x2-r1.zstd", "-x", "2", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["predictions"][0]["runtime_s"] == pytest.approx(out["observed_runtime_s"])


def _rewrite(src: Path, dest: Path, keep) -> Path:
    """A plain log holding the real events of `src` that `keep` accepts."""
    with dest.open("w") as fh:
        for event in iter_events(src):
            if keep(event):
                fh.write(json.dumps(event) + "\n")
    return dest


@pytest.mark.parametrize("case", ["truncated", "corrupt", "codec", "no end", "no tasks",
                                  "missing"])
def test_bad_logs_are_one_line_errors_with_exit_2(tmp_path: Path, case: str) -> None:
    if case == "truncated":
        log = tmp_path / "app.zstd"
        log.write_bytes(SINGLE.read_bytes()[: SINGLE.stat().st_size // 2])
    elif case == "corrupt":
        log = tmp_path / "app.zstd"
        data = bytearray(SINGLE.read_bytes())
        data[100:400] = b"\x00" * 300
        log.write_bytes(bytes(data))
    elif case == "codec":
        log = tmp_path / "app.lzf"
        shutil.copy(SINGLE, log)
    elif case == "no end":
        log = CRASHED
    elif case == "no tasks":  # the real run's start, executors and end; no job ran
        log = _rewrite(SINGLE, tmp_path / "app", lambda e: "Job" not in e["Event"]
                       and "Stage" not in e["Event"] and "Task" not in e["Event"])
    else:
        log = tmp_path / "nothing-here.zstd"
    r = whatif(tmp_path, "--event-log", log)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(log) in err
    expected = {"truncated": "truncated", "corrupt": "corrupt", "codec": "lzf",
                "no end": "no end event", "no tasks": "no tasks",
                "missing": "No such file"}
    assert expected[case] in err


def test_a_bad_scale_out_is_a_usage_error(tmp_path: Path) -> None:
    r = whatif(tmp_path, "--event-log", SINGLE, "-x", "0")
    assert r.exit_code == 2 and "Traceback" not in r.stderr


def test_other_jobs_profiles_in_the_history_leave_a_logs_whatif_alone(tmp_path: Path) -> None:
    from cobell_cli.sources.eventlog_profile import summarize
    from cobell_cli.store.history import History

    db = tmp_path / "h.db"
    with History.open(db) as history:
        for k, log in enumerate(sorted(BENCH_LOGS.glob("straggler-*.zstd"))):
            p = summarize(log)
            history.insert_runs([{"job": "straggler", "status": "succeeded",
                                  "scale_out": p.scale_out, "runtime_s": p.runtime_s,
                                  "started_at": float(k)}], keep_ids=False)
            run_id = history.runs(job="straggler")[0]["id"]
            with history.transaction():
                history.conn.execute("INSERT INTO run_profiles VALUES (?, 1, ?)",
                                     (run_id, json.dumps(p.to_dict())))
    args = ("model", "whatif", "--event-log", BENCH_LOGS / "wide-x1-r1.zstd", "-x", "4")
    r = cobell_process("--db", db, *args)
    empty = cobell_process("--db", tmp_path / "none.db", *args)
    assert r.returncode == empty.returncode == 0, r.stderr
    assert "scaled by the executors per host" in r.stderr
    assert r.stdout == empty.stdout
