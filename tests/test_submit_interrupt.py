"""Ctrl-C (or cron's SIGTERM) on a `cobell submit` of a YARN job never leaves its application
running unsaid: where cobell cannot kill it through the ResourceManager it names the app and
the command that does. The faults a real RM will not produce here (a 403, an RM that does not
answer, a standby) on the stand-in RM; the kill itself on the real YARN
(tests/test_real_yarn_interrupt.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cobell_cli.cluster.http import JsonClient
from cobell_cli.cluster.yarn import YarnCluster
from cobell_cli.store.history import History
from tests.reliability.faults import as_from_a_terminal, wait_for
from tests.test_submit import live_rm  # noqa: F401  (fixture: the stand-in on the wall clock)
from tests.yarn_standin import StandinRM, serving

# spark-submit in cluster deploy mode: it registers its app with the (stand-in) RM, prints the
# YARN client's line, and on SIGINT or SIGTERM exits as spark-submit does, leaving the app
# running on the cluster. Without an RM URL it prints no application id (the signal came first).
FAKE = """\
#!{python}
import json, pathlib, signal, sys, time, urllib.request
rm = {rm!r}
def bye(signum, frame):
    sys.exit(128 + signum)
signal.signal(signal.SIGINT, bye)
signal.signal(signal.SIGTERM, bye)
if rm:
    req = urllib.request.Request(rm + "/_standin/apps", method="POST", headers={{
        "Content-Type": "application/json"}}, data=json.dumps({{"name": "etl.py",
        "executors": 2, "duration_s": None}}).encode())
    app_id = json.load(urllib.request.urlopen(req))["id"]
    print(f"INFO YarnClientImpl: Submitted application {{app_id}}", file=sys.stderr, flush=True)
pathlib.Path({started!r}).touch()
for _ in range(1200):
    time.sleep(0.05)
"""


def fake_spark_submit(tmp_path: Path, rm_url: str | None) -> tuple[Path, Path]:
    started = tmp_path / "started"
    fake = tmp_path / "bin" / "spark-submit"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE.format(python=sys.executable, rm=rm_url or "", started=str(started)))
    fake.chmod(0o755)
    return fake, started


def interrupted_submit(
    db: Path, fake: Path, started: Path, sig: int, *where: str, app_id_printed: bool = True
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """`cobell submit --json` of the fake in cluster mode, `sig` once the job runs (and, when
    the fake prints one, once cobell has recorded the app id its output named)."""
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "etl", "-t",
            "60", "--max-scale-out", "4", *where, "--json", "--", str(fake), "--master", "yarn",
            "--deploy-mode", "cluster", "etl.py"]  # fmt: skip
    env = {**os.environ, "COBELL_MODEL_CACHE": "off", "COBELL_RETRIES": "0",
           "COBELL_CLUSTER_BUDGET_S": "3"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=as_from_a_terminal)
    try:
        wait_for(started.exists, what="the job started")
        if app_id_printed:
            wait_for(lambda: recorded_app_id(db), what="cobell recording the app id")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return done, json.loads(out.strip().splitlines()[-1])


def recorded_app_id(db: Path) -> str | None:
    """The app id on the submit's row as cobell records it while the job runs (its
    recorder writes it in the background once the job's output names it)."""
    with History.open(db, read_only=True) as history:
        runs = history.runs(job="etl")
    return runs[0]["app_id"] if runs else None


def the_run(db: Path) -> dict:
    with History.open(db, read_only=True) as history:
        (run,) = history.runs(job="etl")
    return run


def one_warning(err: str) -> str:
    lines = [line for line in err.splitlines() if "may still be running" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("cobell: warning: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=str)
def test_a_kill_the_rm_refuses_is_one_warning_naming_the_app_and_the_command(
    tmp_path: Path,
    live_rm: StandinRM,  # noqa: F811  (the fixture imported above)
    sig: int,
) -> None:
    live_rm.kill_status = 403
    fake, started = fake_spark_submit(tmp_path, live_rm.url)
    db = tmp_path / "h.db"
    proc, summary = interrupted_submit(db, fake, started, sig, "--rm-url", live_rm.url)
    assert proc.returncode == 128 + sig, proc.stderr  # the job's own code
    (app_id,) = live_rm.apps
    line = one_warning(proc.stderr)
    assert f"YARN application {app_id} may still be running" in line
    assert "refused access (HTTP 403)" in line
    assert line.endswith(f"end it with `yarn application -kill {app_id}`")
    assert live_rm.render(live_rm.apps[app_id])["state"] == "RUNNING" and live_rm.kills == []
    run = the_run(db)
    assert (run["status"], run["app_id"], run["app_state"]) == ("killed", app_id, "RUNNING")
    assert summary["app_state"] == "RUNNING" and line.removeprefix(
        "cobell: warning: ") in summary["warnings"]


def test_an_rm_that_does_not_answer_costs_one_warning_not_the_run(
    tmp_path: Path,
    live_rm: StandinRM,  # noqa: F811
    dead_rm_url: str,
) -> None:
    """The job's app is on a cluster whose RM cobell cannot reach (it planned without it)."""
    fake, started = fake_spark_submit(tmp_path, live_rm.url)
    db = tmp_path / "h.db"
    proc, summary = interrupted_submit(db, fake, started, signal.SIGINT, "--rm-url",
                                       dead_rm_url, "--allow-no-cluster")
    assert proc.returncode == 130, proc.stderr
    (app_id,) = live_rm.apps
    line = one_warning(proc.stderr)
    assert f"YARN application {app_id} may still be running (cannot get an answer" in line
    assert line.endswith(f"end it with `yarn application -kill {app_id}`")
    run = the_run(db)
    assert (run["status"], run["app_id"], run["app_state"]) == ("killed", app_id, None)
    assert summary["status"] == "killed" and summary["app_state"] is None


def test_cobell_killed_while_it_asks_the_rm_leaves_the_run_recorded(
    tmp_path: Path,
    live_rm: StandinRM,  # noqa: F811
) -> None:
    """SIGKILL while cobell waits on a hanging RM for the app's state: the run is already
    recorded killed, with its exit code and app id (the completion never waits on the RM);
    only the RM's word is missing. Before, the row stayed `running` and read as lost."""
    fake, started = fake_spark_submit(tmp_path, live_rm.url)
    db = tmp_path / "h.db"
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "etl", "-t",
            "60", "--max-scale-out", "4", "--rm-url", live_rm.url, "--json", "--", str(fake),
            "--master", "yarn", "--deploy-mode", "cluster", "etl.py"]  # fmt: skip
    env = {**os.environ, "COBELL_MODEL_CACHE": "off", "COBELL_RETRIES": "0",
           "COBELL_CLUSTER_BUDGET_S": "60"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=as_from_a_terminal)
    try:
        wait_for(started.exists, what="the job started")
        wait_for(lambda: recorded_app_id(db), what="cobell recording the app id")
        (app_id,) = live_rm.apps
        live_rm.hang = True
        proc.send_signal(signal.SIGINT)
        wait_for(lambda: any(r["path"].endswith(f"/{app_id}/state") for r in live_rm.requests),
                 what="cobell asking the RM about its app")
        time.sleep(0.3)
        assert proc.poll() is None, proc.communicate()  # still waiting on the RM
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        live_rm.release()
    run = the_run(db)
    assert (run["status"], run["exit_code"], run["app_id"], run["app_state"]) == (
        "killed", 130, app_id, None)
    assert run["finished_at"] is not None and live_rm.kills == []


def test_no_rm_configured_and_no_app_id_are_said_too(tmp_path: Path) -> None:
    """--cluster none and no yarn-site.xml: the app id is known, the RM is not; and a job
    interrupted before it printed its app id: the command that finds it by cobell's tag."""
    with serving(StandinRM()) as rm:
        rm.now_s = time.time()
        fake, started = fake_spark_submit(tmp_path, rm.url)
        proc, _ = interrupted_submit(tmp_path / "h.db", fake, started, signal.SIGINT,
                                     "--cluster", "none")
        (app_id,) = rm.apps
    assert proc.returncode == 130, proc.stderr
    assert f"{app_id} may still be running (no YARN ResourceManager is configured" in one_warning(
        proc.stderr)
    started.unlink()
    fake, started = fake_spark_submit(tmp_path, None)
    proc, _ = interrupted_submit(tmp_path / "h2.db", fake, started, signal.SIGINT,
                                 "--cluster", "none", app_id_printed=False)
    assert proc.returncode == 130, proc.stderr
    line = one_warning(proc.stderr)
    assert "before its YARN application id appeared in its output" in line
    assert "yarn application -list -appTags cobell-job:etl" in line


def test_the_kill_reaches_the_active_rm_through_a_standbys_redirect(
    yarn_rm_factory,
) -> None:
    """HA: a PUT sent to a standby is redirected (307) with its method and body to the active
    RM, which kills the app; the state is then asked of the RM that answered."""
    active = yarn_rm_factory()
    standby = yarn_rm_factory(ha_state="STANDBY", redirect_to=active.url)
    app_id = active.add_app("etl.py", duration_s=None)
    client = JsonClient(what="YARN RM", auth="simple", user="alice", retries=0, budget_s=10)
    assert YarnCluster([standby.url], client).kill(app_id) == "KILLED"
    assert active.kills == [app_id]
    puts = [r for r in standby.requests + active.requests if r["path"].endswith("/state")]
    assert [(r["method"], r["query"].get("user.name")) for r in puts][:2] == [
        ("PUT", ["alice"]), ("PUT", ["alice"])]  # the standby's, then the active's
    again = YarnCluster([standby.url, active.url], client)  # the active one found first
    assert again.kill(app_id) == "KILLED" and active.kills == [app_id]  # already ended


def test_an_unknown_app_is_none_and_a_bad_id_a_usage_error(yarn_rm: StandinRM) -> None:
    from cobell_cli.errors import UsageError

    cluster = YarnCluster([yarn_rm.url], JsonClient(what="YARN RM", retries=0))
    assert cluster.kill("application_1_0001") is None
    assert cluster.app_state("application_1_0001") is None
    with pytest.raises(UsageError):
        cluster.kill("app-20261128-0001")


def test_no_running_rm_needed_for_runs_that_end_by_themselves(tmp_path: Path) -> None:
    """Only an interrupted run asks the RM: an ordinary one with --cluster none never does
    (no warning, nothing recorded)."""
    fake = tmp_path / "spark-submit"
    fake.write_text(f"#!{sys.executable}\nprint('Submitted application application_1_0001')\n")
    fake.chmod(0o755)
    db = tmp_path / "h.db"
    proc = subprocess.run(
        [sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "etl", "-t", "60",
         "--cluster", "none", "--json", "--", str(fake), "--master", "yarn", "x.py"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "COBELL_MODEL_CACHE": "off"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "may still be running" not in proc.stderr and "ResourceManager" not in proc.stderr
    assert the_run(db)["app_state"] is None
