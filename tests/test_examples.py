"""The committed example history is exactly what its generator writes, and imports cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cobell_cli.store import interchange

HISTORY = Path(__file__).resolve().parents[1] / "history"


def test_example_csv_is_fresh(tmp_path: Path) -> None:
    out = tmp_path / "example.csv"
    subprocess.run([sys.executable, str(HISTORY / "make_examples.py"), str(out)], check=True)
    assert out.read_text() == (HISTORY / "example.csv").read_text(), (
        "history/example.csv is stale: run `python history/make_examples.py`"
    )


def test_example_csv_is_valid_and_has_co_runners() -> None:
    path = HISTORY / "example.csv"
    parsed = interchange.parse(path, path.read_text())
    assert parsed.problems == []
    assert {r["job"] for r in parsed.records} == {"sgd", "wordcount", "kmeans"}
    overlapped = [r for r in parsed.records if r["colocations"]]
    assert len(overlapped) >= 20
    assert any(r["status"] == "failed" for r in parsed.records)


def test_local_demo_history_is_valid_and_has_co_located_runs() -> None:
    path = HISTORY / "local-demo.csv"
    parsed = interchange.parse(path, path.read_text())
    assert parsed.problems == []
    jobs = {r["job"] for r in parsed.records}
    assert jobs == {"scaling-demo", "corunner-demo"}
    demo = [r for r in parsed.records if r["job"] == "scaling-demo"]
    assert len({r["scale_out"] for r in demo}) >= 4  # enough for the model phase
    assert any(c["co_runner_job"] == "corunner-demo" for r in demo for c in r["colocations"])


def test_the_co_runner_spins_until_its_file_exists_at_the_latest_its_task_s(
    tmp_path: Path,
) -> None:
    """corunner_job --until-file: what the real-YARN scenario holds its hog with."""
    import time

    from cobell_cli.examples.corunner_job import spin

    done = tmp_path / "done"
    started = time.perf_counter()
    assert spin(0.3, str(done)) > 0  # no file: the whole task_s
    assert 0.3 <= time.perf_counter() - started < 1.0
    done.touch()
    started = time.perf_counter()
    spin(30.0, str(done))  # the file: at once, not 30 s
    assert time.perf_counter() - started < 1.0
