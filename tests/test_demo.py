"""`cobell demo`'s own parts without Spark: its own history, how it shows a background step,
and the summary it ends with (the demo itself is the README's main command)."""

from __future__ import annotations

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
    assert lines[0] == (f"demo: run 2 of {demo.DEMO_JOB} succeeded in 48.2 s at scale-out 3 "
                        "(prediction 53 s, target 60 s: met)")
    assert f"{demo.CO_RUNNER_JOB} 85% of the run" in lines[1]
    assert str(db) in lines[2] and f"--db {db} history show 2" in lines[3]
    assert demo.summary(Path("empty.db"), 60)[0].startswith("demo: no run of")


def test_paths_below_the_working_directory_are_shown_relative(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    assert demo.shown_path(tmp_path / "jobs") == Path("jobs")
    assert demo.shown_path(Path("/usr")) == Path("/usr")
