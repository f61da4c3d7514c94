"""A deadline submit killed at any moment (SIGKILL: nothing of cobell runs after it) leaves the
history consistent: no run it did not start, and its waiting row removed by the next command
that writes the history, as a `running` run becomes `lost`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cobell_cli.store.history import History
from tests.test_deadline_cli import _runs
from tests.yarn_standin import StandinRM

PY = sys.executable


def test_sigkill_swept_over_planning_deciding_and_waiting(tmp_path: Path,
                                                          yarn_rm: StandinRM) -> None:
    db = tmp_path / "history.db"
    with History.open(db) as history:
        history.insert_runs(_runs(time.time()), keep_ids=False)
    yarn_rm.now_s = time.time()
    yarn_rm.add_app("etl", tags="cobell,cobell-job:etl", executors=2, duration_s=None,
                    start_s=yarn_rm.now_s - 100)
    argv = [PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "report", "--cluster",
            "yarn", "--rm-url", yarn_rm.url, "--max-scale-out", "32", "--deadline", "+15min",
            "--", "echo", "{scale_out}"]
    outcomes = []
    # from the interpreter's start to well into the wait; a loaded machine plans slower, so
    # the sweep goes on (longer each time, up to a minute) until it has reached the wait
    delays = [0.5 * k for k in range(1, 13)]
    while delays:
        delay = delays.pop(0)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        outcomes.append("waiting until" in err)
        with History.open(db) as history:  # the next writer: reaps what the kill left
            left = history.conn.execute("SELECT count(*) FROM waiting").fetchone()[0]
            started = history.conn.execute(
                "SELECT count(*) FROM runs WHERE deadline_at IS NOT NULL").fetchone()[0]
        assert left == 0, f"killed after {delay} s: its waiting row is left"
        assert started == 0, f"killed after {delay} s: a run it never started"
        if not delays and not any(outcomes) and delay < 60:
            delays.append(delay * 1.5)
    assert any(outcomes), "the sweep never reached the wait"
    assert not all(outcomes), "the sweep never hit the planning"
