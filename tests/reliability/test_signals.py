"""Signals never lose a run, never get one fitted, never replace the job's exit code (issue 15,
items 3-5): real `cobell` processes, real jobs, real signals, and a real terminal (a pty) that
is closed under a running submit."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cobell_cli.core.plan import plan
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.reliability.faults import (
    PY,
    as_from_a_terminal,
    job,
    start_submit,
    submit_argv,
    wait_for,
)

TRAPPING_JOB = """
import pathlib, signal, sys, time
def bye(signum, frame):
    pathlib.Path({got!r}).write_text(signal.Signals(signum).name)
    sys.exit(0)  # a job that handles the signal and exits 0
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, bye)
pathlib.Path({started!r}).touch()
for _ in range(1200):  # short sleeps: a signal just before one long sleep would wait for its end
    time.sleep(0.05)
"""


def runs(db: Path) -> list[dict]:
    with History.open(db, read_only=True) as history:
        return history.runs(newest_first=False)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=str)
def test_a_job_that_exits_0_after_a_forwarded_signal_is_killed_and_never_fitted(
    tmp_path: Path, sig: signal.Signals
) -> None:
    db, started, got = tmp_path / "h.db", tmp_path / "started", tmp_path / "got"
    proc = start_submit(db, job(TRAPPING_JOB.format(got=str(got), started=str(started))), "--json")
    wait_for(started.exists, what="the job started")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert got.read_text() == sig.name  # forwarded to the job, which handled it
    assert proc.returncode == 0, err  # the job's own exit code
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "killed" and summary["exit_code"] == 0
    (run,) = runs(db)
    assert run["status"] == "killed" and run["runtime_s"] < 30
    with History.open(db, read_only=True) as history:
        assert history.training_runs("toy") == []
        decision = plan(job="toy", history=history.runs(job="toy"), now=time.time(),
                        target_s=5, min_scale_out=1, max_scale_out=64)  # fmt: skip
    assert decision.phase == "bootstrap-search"  # the killed run taught the planner nothing
    assert "fitting the model" not in err


# -- SIGINT at any moment of a submit: never lost, never a traceback ---------------------------

# A shell job (a Python one would print its own traceback when a SIGINT hits its imports): it
# ends with 130 on SIGINT and stays alive a moment after `ended`, so a signal sent before that
# is forwarded to it.
SWEEP_JOB = (
    "trap 'touch {got}; exit 130' INT; touch {started}; sleep 0.4 & wait; touch {ended}; "
    "sleep 0.3 & wait"
)


def _history_with_a_model(db: Path) -> None:
    """600 runs of `toy`, so that planning imports numpy and scipy and fits a model (~1 s)."""
    rows = ["Nodes,Runtime"] + [f"{x},{(100 / x + 5) * 1000:.0f}" for x in range(1, 31)] * 20
    source = db.with_name("toy.csv")
    source.write_text("\n".join(rows) + "\n")
    assert cobell("--db", db, "history", "import", source, "--job", "toy").exit_code == 0


def _one_trial(db: Path, work: Path, delay_s: float | None) -> dict:
    """One submit, SIGINT after `delay_s` (None: no signal)."""
    names = ("started", "got", "ended")
    started, got, ended = (work / n for n in names)
    for marker in (started, got, ended):
        marker.unlink(missing_ok=True)
    script = SWEEP_JOB.format(got=str(got), started=str(started), ended=str(ended))
    launched_at = time.time()
    proc = start_submit(db, ["sh", "-c", script, "sh", "{scale_out}"], "--json")
    sent_at = None
    if delay_s is not None:
        time.sleep(delay_s)
        proc.send_signal(signal.SIGINT)
        sent_at = time.time()
    out, err = proc.communicate(timeout=120)
    time.sleep(0.5)  # a job started despite the signal would touch `started` by now
    return {
        "delay_s": delay_s,
        "code": proc.returncode,
        "err": err,
        "out": out,
        "started": started.exists(),
        "got": got.exists(),
        "ended_before_signal": _touched_before(ended, sent_at),
        "job_after_s": started.stat().st_mtime - launched_at if started.exists() else None,
    }


def _touched_before(marker: Path, moment: float | None) -> bool:
    """Whether the job touched `marker` before `moment` (wall clock), by the file's own time.

    Checking `marker.exists()` just before sending the signal raced under load: a test
    process descheduled for > 0.3 s between the check and the send let the job end in between
    (its trap no longer runs), and a correct code 0 looked like an unforwarded signal."""
    return moment is not None and marker.exists() and marker.stat().st_mtime <= moment


def test_a_signal_after_the_job_ended_on_its_own_leaves_its_run_succeeded(
    tmp_path: Path,
) -> None:
    """The job exits 0 by itself, but a process it started keeps its output open, so cobell
    is still draining it when SIGINT comes: the signal found the job already over. The run
    was recorded `killed` with exit code 0 when a sweep hit that moment by chance."""
    db, ended = tmp_path / "h.db", tmp_path / "ended"
    script = f"""
        import pathlib, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])  # holds stdout
        pathlib.Path({str(ended)!r}).touch()
    """
    proc = start_submit(db, job(script), "--json")
    wait_for(ended.exists, what="the job ended")
    time.sleep(1.0)  # cobell has seen the job's exit (it polls every 0.1 s) and is draining
    assert proc.poll() is None, "the grandchild should keep cobell draining the output"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "succeeded" and summary["exit_code"] == 0, (summary, err)
    assert proc.returncode == 0
    (run,) = runs(db)
    assert run["status"] == "succeeded"


def test_sigint_at_any_moment_of_a_submit_is_honoured(tmp_path: Path) -> None:
    """SIGINT swept over a whole submit (imports, planning with a model fit, the job, after):
    before the job starts it ends cobell with 130 and one line and the job never starts; while
    the job runs it reaches the job; after the job it changes nothing; never a traceback from
    cobell's code. A signal in the interpreter's own start (site, runpy: before any cobell
    code) ends it with Python's traceback, out of cobell's reach (the imports' sweep below);
    on a fast host the first delay landed there (82 ms), so such a trial is told apart and
    does not count as one that reached the planning."""
    db = tmp_path / "h.db"
    _history_with_a_model(db)
    _one_trial(db, tmp_path, None)  # a warm-up: the first submit writes bytecode caches
    t0 = time.monotonic()
    reference = _one_trial(db, tmp_path, None)  # how long a whole submit takes here
    assert reference["code"] == 0 and reference["started"], reference
    whole_s = time.monotonic() - t0 - 0.5
    trials = [_one_trial(db, tmp_path, whole_s * k / 16) for k in range(1, 17)]
    # The sweep's share before the job depends on this machine's speed and load (CI once put
    # only 2 of 16 there, and top-ups timed by one loaded reference submit landed after the
    # job too): top up inside the fastest pre-job time seen so far until 3 have landed.
    for fraction in (0.5, 0.4, 0.6, 0.3, 0.5, 0.4, 0.6, 0.3, 0.5, 0.4, 0.6, 0.5):
        if sum(_ended_cobell_before_the_job(t) for t in trials) >= 3:
            break
        fastest_s = min(t["job_after_s"] for t in (reference, *trials) if t["job_after_s"])
        trials.append(_one_trial(db, tmp_path, fastest_s * fraction))
    for trial in trials:
        where = f"{trial}"
        assert not _traceback_from_cobell(trial["err"]), where
        assert "internal error" not in trial["err"], where
        if _in_the_interpreters_start(trial):  # nothing of cobell ran, nor the job
            assert not trial["started"] and not trial["out"].strip(), where
            continue
        summary = json.loads(trial["out"].splitlines()[-1]) if trial["out"].strip() else None
        if summary is None:  # cobell ended before starting the job
            assert not trial["started"] and trial["code"] == 130, where
            assert trial["err"].strip().splitlines()[-1] == "cobell: interrupted by SIGINT", where
        elif trial["got"] or summary["status"] == "killed":  # forwarded: the run is killed
            assert summary["status"] == "killed", where
            # The job's trap exits 130. A signal that reached its shell while the shell was
            # already exiting on its own (after `ended`, its trap no longer runs, not yet a
            # zombie) was forwarded all the same, and the job's own exit code, 0, stands.
            late = trial["ended_before_signal"] and not trial["got"]
            assert trial["code"] in ((0, 130) if late else (130,)), where
        else:  # only a signal sent once the job was over may leave it alone
            assert trial["ended_before_signal"] and trial["code"] == 0, where
            assert summary["status"] == "succeeded", where
    timings = [(round(t["delay_s"], 3), t["job_after_s"] and round(t["job_after_s"], 3),
                _ended_cobell_before_the_job(t)) for t in trials]
    # the sweep did cover the planning: (delay, the job's start, ended before it) per trial
    assert sum(_ended_cobell_before_the_job(t) for t in trials) >= 3, timings
    with History.open(db, read_only=True) as history:
        statuses = [r["status"] for r in history.runs(job="toy") if r["source"] == "cobell"]
    assert "running" not in statuses and "lost" not in statuses


def _in_the_interpreters_start(trial: dict) -> bool:
    """The signal came before any cobell code ran: before Python set its SIGINT handler (the
    process dies of the signal, silent), or after it, in site or runpy (Python's own
    KeyboardInterrupt traceback, through no cobell frame)."""
    err = trial["err"].strip()
    if trial["code"] == -signal.SIGINT:
        return not err
    return (trial["code"] == 1 and err.endswith("KeyboardInterrupt")
            and not _traceback_from_cobell(err))


def _ended_cobell_before_the_job(trial: dict) -> bool:
    """The signal reached cobell's code before the job started (no summary printed)."""
    return not trial["out"].strip() and not _in_the_interpreters_start(trial)


RUNPY_INTERRUPTED = """Could not import runpy module
Traceback (most recent call last):
  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load
  File "<frozen runpy>", line 14, in <module>
  File "<frozen importlib._bootstrap_external>", line 147, in _path_stat
KeyboardInterrupt
"""  # what CI's sweep met at 82 ms (frames shortened)


def test_the_sweep_tells_the_interpreters_start_from_cobells_code() -> None:
    start = {"code": 1, "err": RUNPY_INTERRUPTED, "out": ""}
    assert _in_the_interpreters_start(start) and not _ended_cobell_before_the_job(start)
    silent = {"code": -signal.SIGINT, "err": "", "out": ""}  # before Python's own handler
    assert _in_the_interpreters_start(silent)
    ours = {"code": 1, "out": "", "err": RUNPY_INTERRUPTED.replace(
        '"<frozen runpy>"', '"/x/cobell_cli/api/planning.py"')}
    assert not _in_the_interpreters_start(ours)
    ended = {"code": 130, "err": "cobell: interrupted by SIGINT\n", "out": ""}
    assert not _in_the_interpreters_start(ended) and _ended_cobell_before_the_job(ended)


class _SignalledWhileCollected:
    """An object whose finaliser receives SIGINT: Python cannot raise from a finaliser (nor
    from an import lock's weakref callback, where a sweep once landed), only report it."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between these bytecodes, inside __del__
            pass


def test_a_signal_python_cannot_raise_is_quiet_and_still_ends_the_command(capsys) -> None:
    from cobell_cli import interrupts

    went_on = False
    with pytest.raises(interrupts.Interrupted) as ended, interrupts.handled(), \
            interrupts.raising():
        collected = _SignalledWhileCollected()
        del collected  # finalised here
        went_on = True  # Python carried on past the swallowed exception
    assert went_on and ended.value.signum == signal.SIGINT
    assert "Traceback" not in capsys.readouterr().err  # nothing like 'Exception ignored in'


def _traceback_from_cobell(err: str) -> bool:
    """A traceback through cobell's code or the libraries its CLI loads; one raised while the
    interpreter itself starts (site, before any cobell code runs) is out of cobell's reach."""
    if "Traceback" not in err:
        return False
    frames = [line for line in err.splitlines() if line.strip().startswith("File ")]
    return any(
        part in frame for frame in frames for part in ("/cobell_cli/", "/typer/", "/click/")
    )


def _median_run_s(argv: list[str]) -> float:
    """How long the command takes here: the median of three runs after a warm-up (the first
    run may write bytecode caches and read cold files, and is not what the sweep meets)."""
    durations = []
    for _ in range(4):
        t0 = time.monotonic()
        assert subprocess.run(argv, capture_output=True, timeout=60).returncode == 0
        durations.append(time.monotonic() - t0)
    return sorted(durations[1:])[1]


def test_sigint_while_python_imports_is_one_line_and_130(tmp_path: Path) -> None:
    """SIGINT swept over a short command's whole life, most of which is Python importing."""
    with History.open(tmp_path / "h.db") as history:  # `history jobs` then prints to stdout
        history.start_run(job="sgd", status="succeeded", scale_out=4, runtime_s=9.0)
    argv = [str(Path(PY).with_name("cobell")), "--db", str(tmp_path / "h.db"), "history", "jobs"]
    whole_s = _median_run_s(argv)
    outcomes = []
    # The count of signals that landed during the imports is the sweep's premise, not the
    # verdict; a run slower or faster than the calibration moves it, so the sweep goes on, at
    # the same delays, until it has hit the imports ten times (a bounded number of rounds).
    for _round in range(4):
        for k in range(30):
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(whole_s * k / 30)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            outcomes.append((whole_s * k / 30, proc.returncode, err))
        if sum(code == 130 for _, code, _ in outcomes) >= 10:
            break
    for delay_s, code, err in outcomes:
        assert not _traceback_from_cobell(err), (delay_s, err)
        if "Traceback" not in err:
            assert code in (130, -signal.SIGINT, 0), (delay_s, code, err)
            assert err.strip() in ("", "cobell: interrupted by SIGINT"), (delay_s, err)
    assert sum(code == 130 for _, code, _ in outcomes) >= 10  # the sweep hit the imports


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=str)
def test_a_signal_during_the_model_warm_up_keeps_the_jobs_exit_code(
    tmp_path: Path, sig: signal.Signals
) -> None:
    db = tmp_path / "h.db"
    _history_with_a_model(db)
    proc = start_submit(db, job("print('job ok')"), env={"COBELL_MODEL_CACHE": "on"})
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("cobell: fitting the model"):
            proc.send_signal(sig)
            break
    out, err = proc.communicate(timeout=120)
    err = "".join(lines) + err
    assert proc.returncode == 0, err
    assert "job ok" in out and "Traceback" not in err
    (dropped,) = [x for x in err.splitlines() if sig.name in x]
    assert dropped == (
        f"cobell: warning: {sig.name} received after the job ended: cobell's own remaining "
        "work was dropped"
    )
    with History.open(db, read_only=True) as history:
        (run,) = history.runs(job="toy", limit=1)
    assert run["status"] == "succeeded" and run["source"] == "cobell"


# -- SIGHUP: a closed terminal ends the job as it would without cobell ------------------------


def _submit_on_a_terminal(db: Path, script: str) -> tuple[int, int]:
    """`cobell submit` as the session leader of a new pty (its controlling terminal)."""
    argv = submit_argv(db, job(script))
    pid, master = pty.fork()
    if pid == 0:  # the child: exec cobell with the pty as its terminal
        os.environ["COBELL_MODEL_CACHE"] = "off"
        as_from_a_terminal()
        os.execv(argv[0], argv)
    return pid, master


def _exit_code(pid: int, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("cobell did not end after its terminal closed")


def test_closing_the_terminal_ends_the_job_and_records_it_killed(tmp_path: Path) -> None:
    db, started, alive = tmp_path / "h.db", tmp_path / "started", tmp_path / "alive"
    script = f"""
        import os, pathlib, time
        pathlib.Path({str(started)!r}).write_text(str(os.getpid()))
        beat = pathlib.Path({str(alive)!r})
        for _ in range(600):  # dies of the SIGHUP it has no handler for
            # written whole (a rename): a job killed mid-write leaves the last beat, not ''
            beat.with_suffix(".new").write_text(str(time.time()))
            os.replace(beat.with_suffix(".new"), beat)
            time.sleep(0.1)
    """
    pid, master = _submit_on_a_terminal(db, script)
    try:
        wait_for(lambda: started.exists() and started.read_text(), what="the job started")
        # its first beat written: the premise "the beats stop" needs a beat to watch
        wait_for(alive.exists, what="the job's first beat")
        os.close(master)  # the terminal goes away: the kernel sends SIGHUP to cobell
        code = _exit_code(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):  # an orphaned job must not outlive us
            os.kill(int(started.read_text()), signal.SIGKILL)
    assert code == 128 + signal.SIGHUP  # the job's own end, as a shell reports it
    last_beat = float(alive.read_text())
    time.sleep(0.5)
    assert float(alive.read_text()) == last_beat  # the job is gone, not orphaned
    (run,) = runs(db)
    assert run["status"] == "killed" and run["exit_code"] == 129


def test_under_nohup_sighup_is_ignored_and_the_run_recorded(tmp_path: Path) -> None:
    db, started, go = tmp_path / "h.db", tmp_path / "started", tmp_path / "go"
    script = f"""
        import pathlib, time
        pathlib.Path({str(started)!r}).touch()
        while not pathlib.Path({str(go)!r}).exists():
            time.sleep(0.02)
    """
    proc = subprocess.Popen(
        submit_argv(db, job(script), "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COBELL_MODEL_CACHE": "off"},
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # what nohup does
    )
    wait_for(started.exists, what="the job started")
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["status"] == "succeeded"
    assert runs(db)[0]["status"] == "succeeded"
