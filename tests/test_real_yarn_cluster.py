"""The real YARN itself: what cobell and the capability issues rely on, without Spark.

RM discovery and `cobell cluster check` from the generated yarn-site.xml; the nodes and their
exclusive partition; the queues (an app that waits ACCEPTED in the capped queue); YARN's own
memory enforcement; a kill through the REST API. The apps here are cheap: an
ApplicationMaster that is just a shell command (tests/yarn_support.py, `submit_shell`).
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from cobell_cli.cluster.http import JsonClient
from cobell_cli.cluster.yarn import YarnCluster, parse_app
from cobell_cli.core.schedule.queue import queue_wait_s
from tests.cli_support import cobell, cobell_process
from tests.yarn_support import LABEL, SHAPE, RealYarn

pytestmark = pytest.mark.yarn

# Fills 600 MB (written, not just reserved: the NodeManager measures resident memory), then
# waits. No double quotes: the NodeManager's launch script wraps the command in them.
HOG_600MB = "python3 -c 'import time; b = bytes(range(256)) * (600 << 12); time.sleep(120)'"


def _am_started(real_yarn: RealYarn, app_id: str) -> bool:
    """The app holds its ApplicationMaster's container. (A shell AM never registers, so its
    app stays ACCEPTED: RUNNING means a registered AM.)"""
    return real_yarn.app(app_id)["runningContainers"] >= 1


def _running_nodes(real_yarn: RealYarn) -> list[dict]:
    nodes = real_yarn.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
    return [n for n in nodes if n["state"] == "RUNNING"]


def _cobells_view(real_yarn: RealYarn) -> YarnCluster:
    return YarnCluster([real_yarn.rm_url], JsonClient(what="YARN RM", timeout_s=10, retries=0))


def test_the_container_step_is_read_from_the_rms_own_conf(real_yarn: RealYarn) -> None:
    """`/conf?format=json` (the RM's ConfServlet): memory sizing rounds containers to it."""
    allocation = _cobells_view(real_yarn).allocation()
    assert allocation.source == "resourcemanager"  # not yarn-site.xml's fallback
    assert allocation.step_mb == 128
    assert allocation.maximum_mb == SHAPE.memory_mb_per_node


def test_cluster_check_finds_the_rm_through_the_generated_yarn_site(
    real_yarn: RealYarn, tmp_path: Path
) -> None:
    env = real_yarn.env()
    done = cobell_process("--db", tmp_path / "h.db", "cluster", "check", "--json", env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backend"] == "yarn"
    assert report["url"] == real_yarn.rm_url
    assert report["ha_state"] == "ACTIVE"
    assert report["rm_state"] == "STARTED"
    assert report["rm_version"].startswith("3.")
    assert str(real_yarn.conf_dir / "yarn-site.xml") in report["source"]


def test_one_user_may_use_the_default_queues_maximum(real_yarn: RealYarn) -> None:
    """The RM applied the user-limit factor: every test runs as one user, and the scenario's
    apps (tests/test_real_yarn_spark.py) need more than the default queue's 70 % at once."""
    queues = real_yarn.rest("/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]["queues"]
    (default,) = [q for q in queues["queue"] if q["queueName"] == "default"]
    reach = default["absoluteCapacity"] * default["userLimitFactor"]
    assert reach >= default["absoluteMaxCapacity"] == 100


def test_the_nodes_have_the_exclusive_partition(real_yarn: RealYarn) -> None:
    nodes = _running_nodes(real_yarn)
    assert len(nodes) == SHAPE.node_managers + SHAPE.labeled_node_managers
    labelled = [n for n in nodes if LABEL in (n.get("nodeLabels") or [])]
    assert len(labelled) == SHAPE.labeled_node_managers
    assert {n["id"] for n in nodes} == {n["id"] for n in nodes if n["id"].count(":") == 1}
    labels = real_yarn.rest("/ws/v1/cluster/get-node-labels")["nodeLabelInfo"]
    labels = labels if isinstance(labels, list) else [labels]
    assert [(x["name"], x["exclusivity"]) for x in labels] == [(LABEL, True)]
    partition = real_yarn.rest(f"/ws/v1/cluster/label-mappings?labels={LABEL}")
    assert partition  # the RM knows which nodes carry the label


def test_an_app_asking_for_the_label_runs_on_a_labelled_node(real_yarn: RealYarn) -> None:
    app_id = real_yarn.submit_shell("sleep 300", name="labelled", node_label=LABEL)
    try:
        attempt = real_yarn.wait_for(
            "the labelled app's AM container",
            lambda: [
                a for a in real_yarn.rest(f"/ws/v1/cluster/apps/{app_id}/appattempts")[
                    "appAttempts"]["appAttempt"] if a.get("nodeId")
            ],
        )[0]
        labelled = {
            n["id"] for n in _running_nodes(real_yarn) if LABEL in (n.get("nodeLabels") or [])
        }
        assert attempt["nodeId"] in labelled
        assert real_yarn.app(app_id)["amNodeLabelExpression"] == LABEL
    finally:
        real_yarn.kill(app_id)


def test_a_second_app_waits_accepted_in_the_capped_queue(real_yarn: RealYarn) -> None:
    """`batch` may hold one 1 GB ApplicationMaster at a time: the next one waits in its queue."""
    first = real_yarn.submit_shell("sleep 300", name="batch-1", queue="batch", memory_mb=1024)
    second = None
    try:
        real_yarn.wait_for("the first batch app's AM", lambda: _am_started(real_yarn, first))
        second = real_yarn.submit_shell("sleep 300", name="batch-2", queue="batch",
                                        memory_mb=1024)  # fmt: skip
        waiting = real_yarn.wait_for(
            "the second batch app waiting for the queue's AM share",
            lambda: "AM resource limit" in (a := real_yarn.app(second))["diagnostics"] and a,
        )
        assert waiting["state"] == "ACCEPTED" and waiting["runningContainers"] == 0
        # what a deadline's queue wait counts (api/deadlines.py): cobell's own reader
        accepted = {a.app_id: a for a in _cobells_view(real_yarn).accepted_apps()}
        assert accepted[second].queue == "root.batch" and accepted[second].state == "ACCEPTED"
        assert second not in {a.app_id for a in _cobells_view(real_yarn).running_apps()}
        wait_s, note = queue_wait_s("batch", list(accepted.values()), [], {}, time.time())
        assert wait_s > 0 and "wait in YARN queue 'batch'" in (note or "")  # `--queue batch`
        time.sleep(3)  # the scheduler has had heartbeats to place it, and did not
        assert not _am_started(real_yarn, second)
        real_yarn.kill(first)
        real_yarn.wait_for("the waiting app to start once the queue has room",
                           lambda: _am_started(real_yarn, second))  # fmt: skip
    finally:
        real_yarn.kill(first)
        if second is not None:
            real_yarn.kill(second)


def test_yarn_kills_a_container_that_exceeds_its_memory(real_yarn: RealYarn) -> None:
    """The NodeManager's physical-memory check: the OOM case of the memory issue."""
    app_id = real_yarn.submit_shell(HOG_600MB, name="memory-hog", memory_mb=256)
    app = real_yarn.wait_for(
        "the memory hog ended",
        lambda: (a := real_yarn.app(app_id))["state"] in {"FAILED", "FINISHED", "KILLED"} and a,
        timeout_s=120,
    )
    assert app["state"] == "FAILED"
    assert "beyond the 'PHYSICAL' memory limit" in app["diagnostics"]
    assert "Killing container" in app["diagnostics"]


def test_a_kill_through_rest_is_what_cobell_reads(real_yarn: RealYarn) -> None:
    app_id = real_yarn.submit_shell("sleep 300", name="rest-kill", tags=("cobell-job:rest-kill",))
    try:
        real_yarn.wait_for("the app's AM container", lambda: _am_started(real_yarn, app_id))
    finally:
        real_yarn.kill(app_id)
    raw = real_yarn.wait_for(
        "the app KILLED", lambda: (a := real_yarn.app(app_id))["state"] == "KILLED" and a
    )
    assert raw["finalStatus"] == "KILLED"
    parsed = parse_app(raw)
    assert parsed is not None
    assert (parsed.state, parsed.job) == ("KILLED", "rest-kill")
    # a finished app carries the executors its vcore-seconds imply (issue 35), at least one
    assert parsed.scale_out is not None and parsed.scale_out >= 1
    assert parsed.finished_at is not None and parsed.finished_at >= (parsed.started_at or 0)

    cluster = _cobells_view(real_yarn)
    assert cluster.app(app_id).state == "KILLED"
    assert app_id not in {a.app_id for a in cluster.running_apps()}


def _node_apps(http_address: str) -> list[dict]:
    """The apps a NodeManager still holds (its context: what its stop waits for)."""
    with urllib.request.urlopen(f"http://{http_address}/ws/v1/node/apps", timeout=10) as resp:
        doc = json.loads(resp.read().decode("utf-8"))
    return ((doc or {}).get("apps") or {}).get("app") or []


def test_a_finished_app_leaves_its_node_manager_and_keeps_its_logs(real_yarn: RealYarn) -> None:
    """What keeps `local-cluster stop --yarn` quick after jobs ran: a NodeManager's stop waits
    6 s while it still holds an app and 10 s more while that app's log deleter is pending, so
    the generated yarn-site has it let go of a finished app soon (log.retain-seconds 30),
    while the deletion itself waits (delete.debug-delay-sec): the container's log stays on
    disk and the RM keeps the app's record. (With YARN's defaults it holds the app 3 h.)"""
    app_id = real_yarn.submit_shell("echo kept 1><LOG_DIR>/stdout", name="finishes")
    app = real_yarn.wait_for(
        "the app ended",
        lambda: (a := real_yarn.app(app_id))["state"] in {"FAILED", "FINISHED", "KILLED"} and a,
        timeout_s=180,
    )
    node = app["amHostHttpAddress"]
    real_yarn.wait_for(
        f"the NodeManager at {node} letting go of {app_id}",
        lambda: app_id not in {a["id"] for a in _node_apps(node)},
        timeout_s=120,
    )
    assert real_yarn.app(app_id)["state"] == app["state"]  # the RM's record stays
    logs = list(real_yarn.cluster.base_dir.glob(f"nm-*/logs/{app_id}/container_*/stdout"))
    assert [p.read_text() for p in logs] == ["kept\n"]


def test_local_cluster_status_and_start_see_the_running_yarn(
    real_yarn: RealYarn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cobell local-cluster ... --yarn` on the session's cluster (it lives where the CLI
    keeps its own): status reads it, start reuses it, another shape is refused."""
    assert real_yarn.xdg_data_home is not None
    monkeypatch.setenv("XDG_DATA_HOME", str(real_yarn.xdg_data_home))
    status = cobell("local-cluster", "status", "--yarn", "--json")
    assert status.exit_code == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["running"] and doc["rm_url"] == real_yarn.rm_url
    assert sorted(n["label"] for n in doc["nodes"]) == ["", "", LABEL, LABEL]
    text = cobell("local-cluster", "status", "--yarn").stdout
    assert f"ResourceManager  {real_yarn.rm_url}" in text
    assert f"NodeManagers     4 running, 2 labelled {LABEL}" in text
    again = cobell("local-cluster", "start", "--yarn", "--json")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["pid"] == doc["pid"]  # the same JVM, not a second one
    other = cobell("local-cluster", "start", "--yarn", "--node-managers", "3")
    assert other.exit_code == 2
    assert "already runs with 2 NodeManagers in" in other.stderr
    assert "cobell local-cluster stop --yarn" in other.stderr


def test_a_running_local_yarn_is_found_without_hadoop_conf_dir(
    real_yarn: RealYarn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After `cobell local-cluster start --yarn` (the session's cluster lives where the CLI
    keeps its own), `cluster check` and `predict --cluster yarn` find it with nothing
    configured (issue 35), and `cluster check` says where its address came from."""
    assert real_yarn.xdg_data_home is not None
    monkeypatch.setenv("XDG_DATA_HOME", str(real_yarn.xdg_data_home))
    site = real_yarn.conf_dir / "yarn-site.xml"
    for kind in ("yarn", "auto"):
        checked = cobell("cluster", "check", "--cluster", kind, "--json")
        assert checked.exit_code == 0, checked.stderr
        report = json.loads(checked.stdout)
        assert report["backend"] == "yarn" and report["url"] == real_yarn.rm_url
        assert report["source"] == (
            f"the local YARN of `cobell local-cluster start --yarn` ({site})")
    text = cobell("cluster", "check", "--cluster", "yarn").stdout
    assert f"from:     the local YARN of `cobell local-cluster start --yarn` ({site})" in text
    db = tmp_path / "h.db"
    example = Path(__file__).resolve().parents[1] / "history" / "example.csv"
    assert cobell("--db", db, "history", "import", example).exit_code == 0
    planned = cobell("--db", db, "predict", "-j", "sgd", "-t", "300", "--cluster", "yarn",
                     "--json")
    assert planned.exit_code == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["cluster_ok"] and real_yarn.rm_url in plan["cluster"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    missing = cobell("cluster", "check", "--cluster", "yarn")
    assert missing.exit_code == 2 and "cobell local-cluster start --yarn" in missing.stderr
