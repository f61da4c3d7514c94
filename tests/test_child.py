"""The child runner against real child processes: streaming, log file, app id, signals, codes."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from cobell_cli.run.child import CommandNotExecutable, CommandNotFound, run, shell_exit_code

PY = sys.executable


class Sink(io.RawIOBase):
    """A terminal stand-in that records what arrived and when, and can react to it."""

    def __init__(self, on_data: object = None) -> None:
        self.data = bytearray()
        self.on_data = on_data

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.data += b
        if callable(self.on_data):
            self.on_data(bytes(self.data))
        return len(b)


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def test_streams_both_outputs_in_order_to_terminal_and_log(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    out, err = Sink(), Sink()
    child = py(
        """
        import sys
        for i in range(200):
            print(f"out {i}", flush=True)
            print(f"err {i}", file=sys.stderr, flush=True)
        sys.stdout.write("no newline at the end")
        """
    )
    result = run(child, log_file=log, stdout=out, stderr=err)
    assert result.exit_code == 0
    out_lines = out.data.decode().splitlines()
    err_lines = err.data.decode().splitlines()
    assert out_lines == [f"out {i}" for i in range(200)] + ["no newline at the end"]
    assert err_lines == [f"err {i}" for i in range(200)]
    logged = log.read_text().splitlines()
    assert sorted(logged) == sorted(out_lines + err_lines)
    # order within each stream is kept in the log too, and lines are never torn
    assert [line for line in logged if line.startswith("out ")] == out_lines[:200]
    assert [line for line in logged if line.startswith("err ")] == err_lines
    assert result.finished_at >= result.started_at
    assert result.runtime_s == pytest.approx(result.finished_at - result.started_at)


def test_output_arrives_while_the_child_still_runs(tmp_path: Path) -> None:
    """The child waits for proof that its first line reached the terminal; no streaming = fail."""
    go = tmp_path / "go"

    def on_data(data: bytes) -> None:
        if b"first" in data:
            go.touch()

    out = Sink(on_data)
    child = py(
        f"""
        import os, sys, time
        print("first", flush=True)
        deadline = time.time() + 10
        while not os.path.exists({str(go)!r}):
            if time.time() > deadline:
                sys.exit(42)
            time.sleep(0.02)
        print("second", flush=True)
        """
    )
    result = run(child, stdout=out, stderr=Sink())
    assert result.exit_code == 0, "the first line was not streamed before the child ended"
    assert out.data.decode().split() == ["first", "second"]


def test_log_file_is_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("earlier run\n")
    run(py("print('later run')"), log_file=log, stdout=Sink(), stderr=Sink())
    assert log.read_text() == "earlier run\nlater run\n"


def test_app_id_from_stderr_first_match_wins_and_callback_once() -> None:
    seen: list[str] = []
    child = py(
        """
        import sys
        print("25/11/21 10:10:09 INFO SparkContext: Running Spark version 4.0.0")
        sys.stdout.flush()
        print("25/11/21 10:10:10 INFO YarnClientImpl: Submitted application "
              "application_1476912658570_0002", file=sys.stderr, flush=True)
        print("25/11/21 10:10:11 INFO Client: Application report for "
              "application_1476912658570_0003 (state: ACCEPTED)", file=sys.stderr, flush=True)
        """
    )
    result = run(child, on_app_id=seen.append, stdout=Sink(), stderr=Sink())
    assert result.app_id == "application_1476912658570_0002"
    assert seen == ["application_1476912658570_0002"]


def test_app_id_on_stdout_without_trailing_newline() -> None:
    child = py("import sys; sys.stdout.write('Connected to Spark cluster with app ID "
               "app-20261121101010-0003')")  # fmt: skip
    result = run(child, stdout=Sink(), stderr=Sink())
    assert result.app_id == "app-20261121101010-0003"


def test_no_app_id_when_none_printed() -> None:
    assert run(py("print('hello')"), stdout=Sink(), stderr=Sink()).app_id is None


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_code_is_the_childs(code: int) -> None:
    result = run(py(f"import sys; sys.exit({code})"), stdout=Sink(), stderr=Sink())
    assert result.exit_code == code
    assert not result.interrupted


def test_death_by_signal_is_128_plus_n() -> None:
    result = run(py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
                 stdout=Sink(), stderr=Sink())  # fmt: skip
    assert result.exit_code == 128 + signal.SIGKILL
    assert shell_exit_code(-15) == 143 and shell_exit_code(2) == 2


def test_missing_executable_is_127(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFound) as info:
        run([str(tmp_path / "no-such-spark-submit"), "--version"])
    assert info.value.exit_code == 127
    assert "no-such-spark-submit" in str(info.value)


def test_not_executable_is_126(tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(CommandNotExecutable) as info:
        run([str(script)])
    assert info.value.exit_code == 126


def test_never_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    out = Sink()
    run(["echo", f"a; touch {marker}", "$(id)"], stdout=out, stderr=Sink())
    assert out.data.decode() == f"a; touch {marker} $(id)\n"
    assert not marker.exists()


def test_on_start_and_ticks() -> None:
    started: list[tuple[int, float]] = []
    ticks: list[float] = []
    result = run(py("import time; time.sleep(1.2)"), on_start=lambda p, t: started.append((p, t)),
                 on_tick=ticks.append, tick_s=0.2, stdout=Sink(), stderr=Sink())  # fmt: skip
    assert started == [(result.pid, result.started_at)]
    assert len(ticks) >= 3
    assert ticks == sorted(ticks)
    assert 0 < ticks[0] < ticks[-1] <= result.runtime_s + 0.01


def test_failing_callback_does_not_orphan_the_child() -> None:
    pids: list[int] = []

    def boom(elapsed_s: float) -> None:
        raise RuntimeError("tick failed")

    with pytest.raises(RuntimeError):
        run(py("import time; time.sleep(30)"), on_start=lambda p, t: pids.append(p),
            on_tick=boom, tick_s=0.1, stdout=Sink(), stderr=Sink())  # fmt: skip
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


@pytest.mark.parametrize("ended", [False, True], ids=["running", "exited, not yet reaped"])
def test_a_signal_counts_as_forwarded_only_while_the_jobs_process_lives(ended: bool) -> None:
    """cobell notices the job's exit at its next poll; a SIGINT in between found the job over
    and must not make a run that ended on its own `killed` (a sweep hit that by chance)."""
    from cobell_cli import interrupts

    # short sleeps: a SIGINT landing just before one long sleep would be handled at its end
    code = "pass" if ended else "import time\nfor _ in range(600): time.sleep(0.05)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.monotonic() + 30
    while ended and os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)
    try:
        with interrupts.forwarding() as signals:
            signals.started(proc.pid)
            os.kill(os.getpid(), signal.SIGINT)  # handled here, in the main thread
            forwarded, deferred = signals.forwarded, interrupts.deferred()
    finally:
        proc.wait(timeout=30)
    assert forwarded == ([] if ended else [signal.SIGINT])
    assert deferred == (signal.SIGINT if ended else None)
    assert proc.returncode == (0 if ended else -signal.SIGINT)  # the live one got it


# --- signal forwarding: cobell's runner in a real process, signalled from here ----------------

TRAP_CHILD = """
import signal, sys, time
got = []
def handler(signum, frame):
    got.append(signum)
    print(f"child got {signal.Signals(signum).name}", flush=True)
signal.signal(signal.SIGINT, handler)
signal.signal(signal.SIGTERM, handler)
print("ready", flush=True)
deadline = time.time() + 20
while not got and time.time() < deadline:
    time.sleep(0.05)
time.sleep(0.5)  # a second forwarded copy would show up here
print(f"child exits after {len(got)} signal(s)", flush=True)
sys.exit(3 if got else 0)
"""

RUNNER = """
import json, sys
from cobell_cli.run.child import run
result = run([sys.executable, "-c", sys.argv[1]])
print("RESULT " + json.dumps({"exit_code": result.exit_code, "interrupted": result.interrupted,
                              "signal": result.signal_received}), flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_reaches_the_child_once_and_cobell_waits(sig: signal.Signals) -> None:
    runner = subprocess.Popen(
        [PY, "-c", RUNNER, TRAP_CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert runner.stdout is not None
    lines: list[str] = []
    try:
        line = runner.stdout.readline()
        assert line.strip() == "ready", line + runner.stderr.read()  # type: ignore[union-attr]
        runner.send_signal(sig)
        timer = threading.Timer(20, runner.kill)
        timer.start()
        lines = runner.stdout.read().splitlines()
        timer.cancel()
    finally:
        runner.wait(10)
    assert lines[0] == f"child got {sig.name}"
    assert lines[1] == "child exits after 1 signal(s)"
    result = json.loads(lines[2].removeprefix("RESULT "))
    assert result == {"exit_code": 3, "interrupted": True, "signal": int(sig)}
    assert runner.returncode == 0


def test_child_killed_by_forwarded_sigterm_reports_143() -> None:
    """A child without handlers dies of the forwarded signal; cobell reports 128+15."""
    child = "import time; print('ready', flush=True); time.sleep(30)"
    runner = subprocess.Popen([PY, "-c", RUNNER, child], stdout=subprocess.PIPE, text=True)
    assert runner.stdout is not None
    assert runner.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    out = runner.stdout.read()
    runner.wait(10)
    assert time.monotonic() - t0 < 10
    result = json.loads(out.strip().removeprefix("RESULT "))
    assert result == {"exit_code": 143, "interrupted": True, "signal": int(signal.SIGTERM)}


def test_app_id_reaches_the_caller_thread_while_the_job_runs(tmp_path: Path) -> None:
    """The lead records the app id at once, with a SQLite connection of the calling thread."""
    go = tmp_path / "recorded"
    calls: list[tuple[str, bool]] = []

    def record(app_id: str) -> None:
        calls.append((app_id, threading.current_thread() is threading.main_thread()))
        go.touch()

    child = py(
        f"""
        import os, sys, time
        print("INFO YarnClientImpl: Submitted application application_17_0001", file=sys.stderr,
              flush=True)
        deadline = time.time() + 10
        while not os.path.exists({str(go)!r}):
            if time.time() > deadline:
                sys.exit(42)
            time.sleep(0.02)
        """
    )
    result = run(child, on_app_id=record, stdout=Sink(), stderr=Sink())
    assert result.exit_code == 0, "on_app_id was not called while the child ran"
    assert calls == [("application_17_0001", True)]
