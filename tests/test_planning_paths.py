"""Memory is sized in every planning path: each combination of --deadline, --node-label,
--minimize and --retry-on-oom, through the real CLI (predict, and submit --dry-run) on a real
SQLite history, sizes executor memory exactly as the plain path does, and says why when it
cannot (issue 36, item 4 and measurements 2 and 4). Node labels against the stand-in RM with
labels (tests/test_node_labels_yarn.py); without them, no cluster (--cluster none).

The history: job `etl` at 4 input sizes and 4 scale-outs, runtime 30 + 600/x s, heap need
400 + 3 MB per MB of input per executor (tests/test_memory_cli.py), on the default partition,
and the same runs twice as fast on node label `fast`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.test_memory_cli import _runs
from tests.test_node_labels_yarn import LabelledRM
from tests.yarn_standin import serving

ENV = {"COBELL_MODEL_CACHE": "off"}
COMMON = ("--input-size", "500M", "--input-tolerance", "10", "--max-scale-out", "8")


def _history(path: Path, peaks: bool = True) -> Path:
    runs = []
    for label, speed in (("", 1.0), ("fast", 0.5)):
        for r in _runs():
            run = {k: v for k, v in r.items() if k != "id" and (peaks or k != "peak_memory_mb")}
            runs.append({**run, "runtime_s": r["runtime_s"] * speed, "node_label": label or None,
                         "submitted_at": r["submitted_at"] + (1e5 if label else 0)})
    with History.open(path) as history:
        history.insert_runs(runs, keep_ids=False)
    return path


@pytest.fixture(scope="module")
def sized_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _history(tmp_path_factory.mktemp("paths") / "h.db")


@pytest.fixture(scope="module")
def unsized_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _history(tmp_path_factory.mktemp("paths") / "h.db", peaks=False)


@pytest.fixture(scope="module")
def rm() -> Iterator[LabelledRM]:
    import time

    with serving(LabelledRM(now_s=time.time())) as rm:
        yield rm


def _cluster(rm: LabelledRM, label: bool) -> tuple[str, ...]:
    if not label:
        return ("--cluster", "none")
    return ("--cluster", "yarn", "--rm-url", rm.url, "--node-label", "auto")


def _run(db: Path, command: str, options: tuple[str, ...], *extra: str) -> Any:
    if command == "predict":
        return cobell("--db", db, "predict", "-j", "etl", *options, *COMMON, *extra, "--json",
                      env=ENV)
    return cobell("--db", db, "submit", "-j", "etl", *options, *COMMON, *extra, "--dry-run",
                  "--json", "--", "spark-submit", "--master", "yarn", "app.py", env=ENV)


def _doc(result: Any) -> dict[str, Any]:
    """The plan: predict's --json, or submit --dry-run's (with the command it would run)."""
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _plan(doc: dict[str, Any]) -> dict[str, Any]:
    return doc


def _injected_memory(doc: dict[str, Any]) -> str | None:
    argv = doc["command"]
    return argv[argv.index("--executor-memory") + 1] if "--executor-memory" in argv else None


COMBINATIONS = [
    pytest.param(command, deadline, label, minimize, retry,
                 id=f"{command}-{'deadline' if deadline else 'target'}-"
                    f"{'label' if label else 'nolabel'}-{minimize}{'-retry' if retry else ''}")
    for command, deadline, label, minimize, retry in itertools.product(
        ("predict", "submit"), (False, True), (False, True),
        ("executor-seconds", "memory-mb-seconds"), (False, True))
    if not (retry and command == "predict")  # --retry-on-oom is submit's
]


def _options(deadline: bool, minimize: str, retry: bool) -> tuple[str, ...]:
    timing = ("--deadline", "+2h", "--start-now") if deadline else ("-t", "200")
    return (*timing, "--minimize", minimize, *(("--retry-on-oom", "2") if retry else ()))


@pytest.mark.parametrize(("command", "deadline", "label", "minimize", "retry"), COMBINATIONS)
def test_every_path_sizes_memory(sized_db: Path, rm: LabelledRM, command: str,
                                 deadline: bool, label: bool, minimize: str,
                                 retry: bool) -> None:
    options = (*_options(deadline, minimize, retry), *_cluster(rm, label))
    doc = _doc(_run(sized_db, command, options))
    plan = _plan(doc)
    memory = plan["memory"]
    assert memory is not None and memory["source"] == "model", memory
    x = plan["scale_out"]
    assert memory["scale_out"] == x  # sized at the scale-out that runs (the start's too)
    chosen = next(c for c in plan["candidates"] if c["scale_out"] == x)
    assert memory["executor_memory_mb"] == chosen["executor_memory_mb"] is not None
    assert memory["executor_memory_mb"] >= memory["upper_peak_mb"] >= 400 + 3 * 500 / x - 1
    assert plan["minimize"] == minimize
    assert "minimize_cannot_act" not in plan  # it acted
    if command == "submit":
        assert _injected_memory(doc) == f"{memory['executor_memory_mb']}m", doc
    if label:
        assert plan["node_label"] in ("", "fast") and plan["labels"]


@pytest.mark.parametrize(("command", "deadline", "label", "minimize", "retry"), [
    c for c in COMBINATIONS if c.values[3] == "memory-mb-seconds"])
def test_minimize_memory_without_a_memory_model_says_so(
        unsized_db: Path, rm: LabelledRM, command: str, deadline: bool, label: bool,
        minimize: str, retry: bool) -> None:
    options = (*_options(deadline, minimize, retry), *_cluster(rm, label))
    result = _run(unsized_db, command, options)
    plan = _plan(_doc(result))
    assert plan["minimize"] == "executor-seconds"  # what it did, not what was asked
    assert plan["memory"]["executor_memory_mb"] is None
    assert "--minimize memory-mb-seconds cannot act: no run with a measured executor memory" \
        in result.stderr
    said = plan["minimize_cannot_act"]  # the same sentence, a field for scripts
    assert said.startswith("--minimize memory-mb-seconds cannot act: no run with") \
        and f"cobell: warning: {said}; minimised executor-seconds instead" in result.stderr
    if deadline:
        assert plan["start_reason"] and "memory-mb-seconds" not in json.dumps(
            {k: v for k, v in plan.items() if k in ("minimize", "options")})
    strict = _run(unsized_db, command, options, "--strict")
    assert strict.exit_code == 2, strict.stderr
    lines = strict.stderr.strip().splitlines()
    assert lines[-1] == (f"cobell: error: {said}; nothing was started; drop --strict, or "
                         "--minimize executor-seconds")
    assert "nothing was started" in lines[-1] and "Traceback" not in strict.stderr
    assert strict.stdout == ""


@pytest.mark.parametrize("deadline", [False, True], ids=["target", "deadline"])
def test_an_unsized_job_says_why_in_every_path(unsized_db: Path, deadline: bool) -> None:
    """Without --minimize memory-mb-seconds nothing warns, but the memory line says why."""
    timing = ("--deadline", "+2h") if deadline else ("-t", "200")
    result = cobell("--db", unsized_db, "predict", "-j", "etl", *timing, *COMMON,
                    "--cluster", "none", env=ENV)
    assert result.exit_code == 0, result.stderr
    assert ("memory: not sized (no run with a measured executor memory peak or a memory "
            "failure yet") in result.stdout
    assert "cannot act" not in result.stderr
