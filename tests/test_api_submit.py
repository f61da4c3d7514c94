"""Submitting through the Python API (cobell_cli/api/submit.py): the example docs/python-api.md
shows, the callbacks in the order the steps happen, a cancel from another thread, and a dry
run that starts and writes nothing; real child processes and real SQLite files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cobell_cli import api
from cobell_cli.store.history import History

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def doc_example(marker: str = "python-api-submit") -> str:
    """The ```python block right after `<!-- marker -->` in docs/python-api.md."""
    found = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"no python block after <!-- {marker} --> in {DOC}"
    return found.group(1)


def runs(db: Path) -> list[dict]:
    with History.open(db, read_only=True) as history:
        return history.runs(newest_first=False)


def test_the_documented_example_runs_and_records_its_run(tmp_path: Path) -> None:
    code = doc_example()
    assert len(code.strip().splitlines()) <= 12  # the ~10 lines the page promises
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COBELL_MODEL_CACHE": "off"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "planned scale-out 32"  # a new job's first bootstrap run: the midpoint
    assert lines[1] == "launched run 1"
    assert lines[2] == "32"  # the job's own output, through to this process's stdout
    assert lines[3] == "finished: succeeded"
    assert re.fullmatch(r"exit 0 in 0\.\d s", lines[4]), lines
    (run,) = runs(tmp_path / "runs.db")
    assert (run["job"], run["status"], run["scale_out"]) == ("nightly", "succeeded", 32)
    assert json.loads(run["command"]) == ["sh", "-c", "sleep 0.1; echo 32"]


APP_JOB = """
import sys, time
print("INFO YarnClientImpl: Submitted application application_1700000000000_0042",
      file=sys.stderr, flush=True)
time.sleep(1.6)
print("done", sys.argv[1])
"""


def test_the_callbacks_follow_the_steps(tmp_path: Path) -> None:
    events: list[tuple[str, object]] = []
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        submit = api.Submit(
            api.load_settings(db=str(tmp_path / "h.db"), cluster="none", model_cache="off"),
            job="etl", target_s=30, command=[sys.executable, "-c", APP_JOB, "{scale_out}"],
            stdout=stdout, stderr=stderr,
            on_planned=lambda p: events.append(("planned", p.prediction.plan.scale_out)),
            on_launched=lambda r: events.append(("launched", (r.run_id, r.app_id))),
            on_progress=lambda p: events.append(("progress", round(p.elapsed_s))),
            on_finished=lambda o: events.append(("finished", o.status)),
            on_warning=lambda line: events.append(("warning", line)))
        result = submit.run()
    kinds = [kind for kind, _ in events]
    assert kinds.index("planned") < kinds.index("launched") < kinds.index("progress")
    assert kinds[-1] == "finished" and events[-1] == ("finished", "succeeded")
    launched = [value for kind, value in events if kind == "launched"]
    assert launched == [(1, None), (1, "application_1700000000000_0042")]
    assert [value for kind, value in events if kind == "progress"][:1] == [1]
    assert any(kind == "warning" and "NO CLUSTER INFORMATION" in str(v) for kind, v in events)
    assert out.read_text() == "done 32\n" and "application_1700000000000_0042" in err.read_text()
    assert result.exit_code == 0 and result.outcome.app_id == "application_1700000000000_0042"
    assert result.to_dict()["run_id"] == 1 and result.warnings == result.to_dict()["warnings"]
    (run,) = runs(tmp_path / "h.db")
    assert (run["status"], run["app_id"]) == ("succeeded", "application_1700000000000_0042")


def test_cancel_from_another_thread_ends_the_job_and_records_it_killed(tmp_path: Path) -> None:
    """An orchestrator's on_kill: the job gets SIGTERM, its run is `killed` (never fitted)."""
    started = threading.Event()
    submit = api.Submit(
        api.load_settings(db=str(tmp_path / "h.db"), cluster="none", model_cache="off"),
        job="etl", target_s=30, command=["sh", "-c", "sleep 30 # {scale_out}"],
        on_launched=lambda _run: started.set())
    threading.Thread(target=lambda: started.wait(30) and submit.cancel(), daemon=True).start()
    t0 = time.monotonic()
    result = submit.run()
    assert time.monotonic() - t0 < 20
    assert (result.outcome.status, result.exit_code) == ("killed", 143)
    (run,) = runs(tmp_path / "h.db")
    assert run["status"] == "killed"


def test_a_cancel_before_the_start_starts_nothing(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    submit = api.Submit(
        api.load_settings(db=str(tmp_path / "h.db"), cluster="none", model_cache="off"),
        job="etl", target_s=30, command=["touch", str(ran), "{scale_out}"],
        on_planned=lambda _plan: submit.cancel())
    with pytest.raises(api.Interrupted) as caught:
        submit.run()
    assert caught.value.exit_code == 143
    assert not ran.exists() and runs(tmp_path / "h.db") == []


def test_a_dry_run_plans_the_command_and_starts_writes_nothing(tmp_path: Path) -> None:
    db, logs = tmp_path / "h.db", tmp_path / "events"
    submit = api.Submit(
        api.load_settings(db=str(db), cluster="none", event_log_dir=str(logs)),
        job="etl", target_s=30,
        command=["spark-submit", "--master", "yarn", "--conf", "spark.x.password=s3cret",
                 "etl.py"])  # not on PATH: a dry run plans another machine's command
    plan = submit.plan(dry_run=True)
    assert plan.command.launcher == "spark-yarn"
    assert plan.command.argv[plan.command.argv.index("--num-executors") + 1] == "32"
    assert "spark.x.password=s3cret" not in " ".join(plan.command.shown)
    assert plan.to_dict()["command"] == plan.command.shown
    assert not logs.exists() and runs(db) == []


def test_bad_arguments_are_usage_errors_when_the_submit_is_made(tmp_path: Path) -> None:
    settings = api.load_settings(db=str(tmp_path / "h.db"), cluster="none")
    from cobell_cli.errors import UsageError

    for kwargs, needle in (
        ({"command": ["sh", "-c", "true"], "target_s": 5}, "cobell does not know how"),
        ({"command": ["sh", "-c", "{scale_out}"]}, "--target-runtime"),
        ({"command": ["sh", "-c", "{scale_out}"], "target_s": 5, "minimize": "cost"},
         "--minimize"),
        ({"command": ["sh", "-c", "{scale_out}"], "target_s": 5, "retry_on_oom": 11},
         "--retry-on-oom"),
    ):
        with pytest.raises(UsageError, match=re.escape(needle)):
            api.Submit(settings, job="etl", **kwargs)
    assert not (tmp_path / "h.db").exists()
