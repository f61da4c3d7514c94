"""`cobell demo`'s own parts without Spark: its own history, how it shows a background step,
and the summary it ends with (the demo itself is the README's main command)."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from cobell_cli.cli import demo
from cobell_cli.cli.common import state
from cobell_cli.store.history import History


def _ctx(db: str | None) -> typer.Context:
    import click

    ctx = typer.Context(click.Command("demo"))
    state(ctx).db = db
    return ctx


def test_the_demo_writes_a_history_of_its_own(tmp_path: Path, monkeypatch) -> None:
    """It wrote into the user's real default history."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert demo.demo_db(_ctx(None)) == tmp_path / "data" / "cobell" / "demo.db"
    assert demo.demo_db(_ctx(str(tmp_path / "mine.db"))) == tmp_path / "mine.db"
    monkeypatch.setenv("COBELL_DB", str(tmp_path / "env.db"))
    assert demo.demo_db(_ctx(None)) == tmp_path / "env.db"


def test_a_background_step_is_shown_as_a_shell_would_take_it(capsys) -> None:
    """The co-runner's command was echoed with a literal '&'."""
    demo._show(["cobell", "submit", "-j", "x", "--", "a b"], background=True)
    assert capsys.readouterr().err.strip() == "+ cobell submit -j x -- 'a b' &"


def test_the_summary_says_what_happened_at_a_glance(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = Path("demo.db")
    with History.open(db) as history:
        history.insert_runs([
            {"job": demo.CO_RUNNER_JOB, "status": "succeeded", "scale_out": 2, "runtime_s": 50},
            {"job": demo.DEMO_JOB, "status": "succeeded", "scale_out": 3, "runtime_s": 48.25,
             "predicted_s": 53.4, "target_s": 60,
             "colocations": [{"co_runner_job": demo.CO_RUNNER_JOB, "overlap_ratio": 0.85}]},
        ], keep_ids=False)
    lines = demo.summary(db, 60)
    assert len(lines) == 5 and all(len(line) <= 100 for line in lines)
    assert lines[0] == (f"demo: run 2 of {demo.DEMO_JOB} succeeded in 48 s at scale-out 3 "
                        "(prediction 53 s, target 60 s: met)")
    assert f"{demo.CO_RUNNER_JOB} 85% of the run" in lines[1]
    assert str(db) in lines[2] and f"--db {db} history show 2" in lines[3]
    assert demo.summary(Path("empty.db"), 60)[0].startswith("demo: no run of")


def test_paths_below_the_working_directory_are_shown_relative(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    assert demo.shown_path(tmp_path / "jobs") == Path("jobs")
    assert demo.shown_path(Path("/usr")) == Path("/usr")


FAKE_SPARK_SUBMIT = """#!{python}
import sys
print("INFO YarnClientImpl: Submitted application application_1700000000000_0001",
      file=sys.stderr)
"""


class FakeYarn:
    """The local YARN as the demo drives it, without a JVM: one 4096 MB NodeManager, and the
    co-runner holding its AM and two executors whenever the demo asks."""

    def __init__(self, conf_dir: Path) -> None:
        self.conf_dir = conf_dir

    def start(self):
        from types import SimpleNamespace

        return SimpleNamespace(nodes=[{"memory_mb": 4096, "state": "RUNNING", "label": ""}])

    def client_env(self) -> dict[str, str]:
        import os

        return {**os.environ, "HADOOP_CONF_DIR": str(self.conf_dir), "COBELL_MODEL_CACHE": "off"}

    def rm_json(self, path: str) -> dict:
        return {"apps": {"app": [{"runningContainers": 3}]}}


def test_the_yarn_demo_echoes_its_background_step_as_a_shell_line(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The co-runner's step was echoed ending in `'&'`, which no shell runs in the background.
    The demo's own steps run for real (cobell submit, a spark-submit that only prints its app
    id); the cluster is a stand-in that says the co-runner runs."""
    import sys

    from cobell_cli import api
    from cobell_cli.cli import demo_yarn
    from cobell_cli.run import local_cluster, local_yarn

    fake = tmp_path / "bin" / "spark-submit"
    fake.parent.mkdir()
    fake.write_text(FAKE_SPARK_SUBMIT.format(python=sys.executable))
    fake.chmod(0o755)
    (tmp_path / "conf").mkdir()
    for where in (api, local_yarn):  # where the demo finds the local YARN (the API names run/'s)
        monkeypatch.setattr(where, "LocalYarn", lambda: FakeYarn(tmp_path / "conf"),
                            raising=False)
    for where in (api, local_cluster):
        monkeypatch.setattr(where, "spark_submit_path", lambda: fake, raising=False)
    monkeypatch.setattr(demo_yarn.time, "sleep", lambda _s: None)  # the co-runner "runs" at once
    code = demo_yarn.run_yarn_demo(tmp_path / "demo.db", 150.0, tmp_path / "no-seed.csv", True,
                                   demo._show)
    assert code == 0
    err = capsys.readouterr().err
    (step,) = [line for line in err.splitlines() if f"-j {demo_yarn.CO_RUNNER_JOB} " in line]
    assert step.startswith("+ cobell --db ") and step.endswith(" --task-s 40 &")
    assert "'&'" not in err
    assert re.search(rf"demo: run \d+ of {demo_yarn.DEMO_JOB} succeeded", err), err


def test_the_summary_of_a_killed_or_failed_run_says_so(tmp_path: Path, monkeypatch) -> None:
    """A killed demo run read "target 60 s: missed"."""
    monkeypatch.chdir(tmp_path)
    db = Path("demo.db")
    with History.open(db) as history:
        history.insert_runs([
            {"job": demo.DEMO_JOB, "status": "killed", "scale_out": 3, "runtime_s": 12.4,
             "predicted_s": 53.4, "target_s": 60, "exit_code": 130},
        ], keep_ids=False)
    assert demo.summary(db, 60)[0] == (f"demo: run 1 of {demo.DEMO_JOB} killed after 12 s at "
                                       "scale-out 3 (prediction 53 s, target 60 s)")
    with History.open(db) as history:
        history.insert_runs([
            {"job": demo.DEMO_JOB, "status": "failed", "scale_out": 3, "runtime_s": 2.25,
             "target_s": 60, "exit_code": 1},
        ], keep_ids=False)
    assert demo.summary(db, 60)[0] == (f"demo: run 2 of {demo.DEMO_JOB} failed (exit 1) after "
                                       "2.25 s at scale-out 3 (target 60 s)")


def test_the_deadline_step_decides_to_wait_for_the_co_runner_and_says_why(
    tmp_path: Path, yarn_rm, capsys,
) -> None:
    """Issue 35: the demo never showed a decision to wait. Its seed history, the co-runner
    just started (the stand-in RM: the step's cluster is whatever its options name), and the
    demo's deadline: waiting for the co-runner and running alone costs fewer
    executor-seconds than starting now beside it."""
    import subprocess
    import sys
    import time

    from cobell_cli.cli.demo_deadline import DEMO_DEADLINE, deadline_step

    db = tmp_path / "demo.db"
    cli = [sys.executable, "-m", "cobell_cli", "--db", str(db)]
    seed = Path(__file__).resolve().parents[1] / demo.DEFAULT_SEED
    subprocess.run([*cli, "history", "import", str(seed), "--new-ids"], check=True,
                   capture_output=True)
    yarn_rm.now_s = time.time()
    yarn_rm.add_app(f"cobell:{demo.CO_RUNNER_JOB}", executors=2, duration_s=None,
                    tags=f"cobell,cobell-job:{demo.CO_RUNNER_JOB}", start_s=yarn_rm.now_s - 5,
                    app_id="application_1699990000000_0007")
    options = ["--min-scale-out", "1", "--max-scale-out", "6", "--cluster", "yarn",
               "--rm-url", yarn_rm.url]
    lines = deadline_step(cli, demo.DEMO_JOB, options, demo._show)
    shown = capsys.readouterr().err
    assert f"predict -j {demo.DEMO_JOB} --deadline {DEMO_DEADLINE}" in shown
    assert "--json" not in shown  # the user's command, not the demo's plumbing
    head, why = lines
    assert re.fullmatch(rf"deadline decision: wait \d+ s for {demo.CO_RUNNER_JOB}, then \d+ "
                        r"executors?; P\(meet the deadline\) \d+%", head), head
    assert why.startswith(f"  why: waiting for {demo.CO_RUNNER_JOB} ")
    assert "fewer executor-seconds than starting now" in why
    assert all(len(line) <= 160 for line in lines)


def test_a_deadline_decision_to_start_now_and_a_long_reason_stay_short() -> None:
    from cobell_cli.cli.demo_deadline import decision_lines

    head, why = decision_lines({"scale_out": 2, "meet_probability": 0.991, "waits_for": None,
                                "start_in_s": 0.0, "start_reason": "starting now: " + "x" * 300})
    assert head == "deadline decision: start now on 2 executors; P(meet the deadline) 99%"
    assert len(why) == 160 and why.endswith("...")
    gathering, _ = decision_lines({"scale_out": 1, "waits_for": "submits arriving with it",
                                   "start_in_s": 10.0, "start_reason": "submits arriving"})
    assert gathering.startswith("deadline decision: start now on 1 executor")
    from cobell_cli.cli.demo_deadline import GATHERING
    from cobell_cli.core.schedule.decision import GATHERING as SPELLED

    assert GATHERING == SPELLED
