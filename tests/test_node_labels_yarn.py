"""Node labels against a stand-in ResourceManager (real HTTP on loopback, the documented
shapes of get-node-labels, nodes and the capacity scheduler): labels read, an unsatisfiable
label a one-line error before anything starts, the label expression injected, co-runners
counted in their own partition only."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cobell_cli.cluster.node_labels import partitions
from cobell_cli.errors import UsageError
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.yarn_standin import Reply, StandinRM, _json, serving


@dataclass
class LabelledRM(StandinRM):
    """The stand-in with node labels: `fast` (two nodes), `gpu` (no active node), and
    queues `default` (may use fast) and `batch` (default partition only)."""

    labels: list[dict[str, Any]] = field(default_factory=lambda: [
        {"name": "fast", "exclusivity": True}, {"name": "gpu", "exclusivity": True}])
    nodes: list[dict[str, Any]] = field(default_factory=lambda: [
        {"id": "n1:1", "state": "RUNNING", "nodeLabels": ["fast"],
         "totalResource": {"memory": 8192, "vCores": 8}},
        {"id": "n2:1", "state": "RUNNING", "nodeLabels": ["fast"],
         "totalResource": {"memory": 8192, "vCores": 8}},
        {"id": "n3:1", "state": "RUNNING", "totalResource": {"memory": 4096, "vCores": 4}},
        {"id": "n4:1", "state": "LOST", "nodeLabels": ["gpu"],
         "totalResource": {"memory": 4096, "vCores": 4}}])

    def _answer(self, method: str, path: str, query: dict[str, list[str]],
                body: bytes = b"") -> Reply:
        path = path.rstrip("/")
        if path == "/ws/v1/cluster/get-node-labels":
            return _json(200, {"nodeLabelInfo": self.labels})
        if path == "/ws/v1/cluster/nodes":
            return _json(200, {"nodes": {"node": self.nodes}})
        if path == "/ws/v1/cluster/scheduler":
            queues = [{"queueName": "default", "nodeLabels": ["fast", "gpu"]},
                      {"queueName": "batch", "nodeLabels": []}]
            return _json(200, {"scheduler": {"schedulerInfo": {
                "type": "capacityScheduler", "queueName": "root",
                "queues": {"queue": queues}}}})
        return super()._answer(method, path, query, body)


@pytest.fixture
def rm() -> Iterator[LabelledRM]:
    import time

    with serving(LabelledRM(now_s=time.time())) as rm:
        yield rm


def test_partitions_come_from_the_documented_documents() -> None:
    rm = LabelledRM()
    docs = [json.loads(rm._answer("GET", f"/ws/v1/cluster/{p}", {})[2])
            for p in ("get-node-labels", "nodes", "scheduler")]
    parts = partitions(*docs)
    assert parts.partitions["fast"].active_nodes == 2 and parts.partitions["fast"].vcores == 16
    assert parts.partitions[""].active_nodes == 1 and parts.partitions["gpu"].active_nodes == 0
    assert parts.usable("default") == ["", "fast"] and parts.usable("batch") == [""]
    assert parts.check(["auto"], "default") == ["", "fast"]
    with pytest.raises(UsageError, match="'gpu' has no active node"):
        parts.check(["fast", "gpu"], "default")
    with pytest.raises(UsageError, match="queue 'batch' may not use node label 'fast'"):
        parts.check(["fast"], "batch")
    with pytest.raises(UsageError, match="'ssd' does not exist"):
        parts.check(["ssd"], "default")


def test_older_rms_list_labels_as_names_and_a_single_label_as_an_object() -> None:
    from cobell_cli.cluster.node_labels import parse_labels

    assert parse_labels({"nodeLabels": ["a", "b"]}) == {"a": True, "b": True}
    assert parse_labels({"nodeLabelInfo": {"name": "x", "exclusivity": False}}) == {"x": False}


def _history(db: Path) -> None:
    """Runs of `etl` on the default partition and on `fast` (faster), all alone."""
    runs = []
    for label, speed in (("", 1.0), ("fast", 0.5)):
        for x in (2, 4, 8, 2, 4, 8, 2, 4, 8):
            runs.append({"job": "etl", "status": "succeeded", "scale_out": x,
                         "runtime_s": speed * (400.0 / x + 20.0),
                         "started_at": 1000.0 * len(runs), "node_label": label or None})
    with History.open(db) as history:
        history.insert_runs(runs, keep_ids=False)


def _predict(db: Path, rm: LabelledRM, *args: str) -> Any:
    return cobell("--db", db, "predict", "-j", "etl", "-t", "62", "--max-scale-out", "16",
                  "--cluster", "yarn", "--rm-url", rm.url, "--confidence", "point", *args)


def test_predict_chooses_the_cheapest_label_and_says_so(tmp_path: Path, rm: LabelledRM) -> None:
    db = tmp_path / "h.db"
    _history(db)
    out = _predict(db, rm, "--node-label", "auto", "--label-price", "fast=1.5", "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    by = {o["node_label"]: o for o in doc["labels"]}
    assert set(by) == {"", "fast"}
    # 62 s: 400/x + 20 <= 62 needs 10 executors on the default partition, 4 on fast
    assert by[""]["scale_out"] == 10 and by["fast"]["scale_out"] == 4
    assert doc["node_label"] == "fast" and doc["scale_out"] == 4
    assert by["fast"]["cost"] < by[""]["cost"]
    assert all(c["node_label"] == "fast" for c in doc["candidates"])
    assert doc["predicted_s"] == pytest.approx(0.5 * (400 / 4 + 20), rel=0.05)
    text = _predict(db, rm, "--node-label", "default,fast", "--label-price", "fast=5")
    assert text.exit_code == 0, text.stderr
    assert "node label: default" in text.stdout  # at 5x the price the default is cheaper


def test_an_unsatisfiable_label_is_one_line_before_anything_starts(
        tmp_path: Path, rm: LabelledRM) -> None:
    db = tmp_path / "h.db"
    _history(db)
    out = _predict(db, rm, "--node-label", "fast,gpu")
    assert out.exit_code == 2
    assert out.stderr.strip().count("\n") == 0 and "'gpu' has no active node" in out.stderr
    marker = tmp_path / "started"
    bin_dir = tmp_path / "bin"  # a spark-submit that would leave the marker if it ran
    bin_dir.mkdir()
    (bin_dir / "spark-submit").write_text('#!/bin/sh\nfor a; do last="$a"; done; touch "$last"\n')
    (bin_dir / "spark-submit").chmod(0o755)
    run = cobell("--db", db, "submit", "-j", "etl", "-t", "60", "--cluster", "yarn",
                 "--rm-url", rm.url, "--node-label", "fast", "--", "spark-submit", "--master",
                 "yarn", "--queue", "batch", "app.py", str(marker),
                 env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert run.exit_code == 2 and "queue 'batch' may not use node label 'fast'" in run.stderr
    assert not marker.exists()
    with History.open(db, read_only=True) as history:
        assert len(history.runs()) == 18  # no run was recorded


def test_submit_injects_the_chosen_label(tmp_path: Path, rm: LabelledRM) -> None:
    db = tmp_path / "h.db"
    _history(db)
    out = cobell("--db", db, "submit", "-j", "etl", "-t", "60", "--max-scale-out", "16",
                 "--cluster", "yarn", "--rm-url", rm.url, "--confidence", "point",
                 "--node-label", "default,fast", "--dry-run", "--", "spark-submit",
                 "--master", "yarn", "app.py")
    assert out.exit_code == 0, out.stderr
    assert "spark.yarn.executor.nodeLabelExpression=fast" in out.stdout
    assert "cobell-label:fast" in out.stdout


def test_standalone_cannot_place_executors_by_label(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    _history(db)
    out = cobell("--db", db, "predict", "-j", "etl", "-t", "60", "--cluster", "standalone",
                 "--standalone-url", "http://127.0.0.1:1", "--node-label", "fast")
    assert out.exit_code == 2 and "Spark standalone cannot place executors" in out.stderr


def test_co_runners_count_only_in_their_own_partition(tmp_path: Path, rm: LabelledRM) -> None:
    db = tmp_path / "h.db"
    _history(db)
    rm.add_app("other", tags="cobell,cobell-job:big,cobell-label:fast", executors=8)
    rm.add_app("default-app", tags="cobell,cobell-job:small", executors=2)
    from cobell_cli import api, config
    from cobell_cli.cluster.yarn import parse_app

    apps = [parse_app(rm.render(a)) for a in rm.apps.values()]
    assert [a.node_label for a in apps] == ["fast", None]
    settings = config.load({"db": str(db), "cluster": "yarn", "rm_url": rm.url,
                            "node_labels": "default,fast", "confidence": "point",
                            "max_scale_out": 16})
    from cobell_cli.cluster import connect

    with History.open(db, read_only=True) as history:
        cluster = connect(settings, history.job_names())
        result = api.predict(history, cluster, settings, job="etl", target_s=60, now=rm.now_s)
    assert {o["node_label"] for o in result.label_options} == {"", "fast"}
    counted = {v.app_id for v in result.plan.co_runners}
    fast_app, default_app = list(rm.apps)
    assert result.node_label == "fast" and counted == {fast_app}
    assert default_app not in counted


def test_an_imported_yarn_app_keeps_the_partition_it_ran_in() -> None:
    from cobell_cli.sources.record import run_record
    from cobell_cli.sources.yarn_apps import parse_finished

    rm = LabelledRM()
    app_id = rm.add_app("etl", tags="cobell,cobell-job:etl,cobell-label:fast", duration_s=60,
                        start_s=rm.now_s - 100)
    plain = rm.add_app("mr", duration_s=60, start_s=rm.now_s - 100, app_type="MAPREDUCE")
    docs = {a: rm.render(rm.apps[a]) for a in (app_id, plain)}
    docs[plain]["appNodeLabelExpression"] = "gpu"
    labelled, mapreduce = (parse_finished(docs[a]) for a in (app_id, plain))
    assert labelled.node_label == "fast" and mapreduce.node_label == "gpu"
    assert run_record(labelled, "yarn")["node_label"] == "fast"
    assert labelled.as_co_runner().node_label == "fast"
