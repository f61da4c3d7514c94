"""The stand-in ResourceManager against a real one: its documents have the real shapes.

tests/data/yarn/real/ holds a real ResourceManager's answers (Hadoop 3.5.0, recorded by
tests/data/yarn/record_real.py on the local YARN); here the stand-in's answers for the same
situations are compared with them key by key and type by type, and cobell's readers are run on
the real ones. The same check against the live RM is in tests/test_real_yarn_cluster.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cobell_cli.cluster.progress import parse_progress
from cobell_cli.cluster.yarn import parse_apps
from cobell_cli.sources.yarn_apps import parse_finished
from tests.yarn_standin import StandinRM

REAL = Path(__file__).parent / "data" / "yarn" / "real"


def real(name: str) -> Any:
    return json.loads((REAL / f"{name}.json").read_text())


def standin_app(final_state: str | None, **kw: Any) -> dict[str, Any]:
    """The stand-in's document of a Spark app with 2 executors: running (None) or ended."""
    rm = StandinRM(url="http://127.0.0.1:8088")
    app_id = rm.add_app("recorded", tags="cobell,cobell-job:recorded", executors=2,
                        duration_s=None, **kw)  # fmt: skip
    rm.advance(60)
    if final_state is not None:
        rm.finish(app_id, final_state)
        rm.advance(1)
    doc = rm.render(rm.apps[app_id])
    assert doc is not None
    return doc


def kinds(doc: dict[str, Any]) -> dict[str, str]:
    """key -> JSON type ('number' for int and float alike: Jackson writes 0.0 and 0 by field)."""
    def kind(value: Any) -> str:
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int | float):
            return "number"
        return type(value).__name__

    return {key: kind(value) for key, value in doc.items()}


# Documented fields a real RM (Hadoop 3.5) leaves out while they are unset; the stand-in keeps
# serving them, as Hadoop's documentation shows them (tests/test_yarn.py).
DOCUMENTED_UNSET = {"appNodeLabelExpression"}


def same_shape(standin: dict[str, Any], real_doc: dict[str, Any]) -> None:
    missing = sorted(set(real_doc) - set(standin))
    extra = sorted(set(standin) - set(real_doc) - DOCUMENTED_UNSET)
    assert (missing, extra) == ([], []), "keys the stand-in lacks / adds"
    theirs, ours = kinds(real_doc), kinds(standin)
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k] and
              theirs[k] != "NoneType"}  # fmt: skip
    assert differ == {}, "keys whose JSON type differs (stand-in, real)"


@pytest.mark.parametrize(
    ("recorded", "final_state"),
    [("app-running", None), ("app-finished", "FINISHED"), ("app-killed", "KILLED"),
     ("app-failed", "FAILED")],
)  # fmt: skip
def test_the_standins_app_document_has_the_real_shape(recorded: str, final_state: str) -> None:
    real_doc = real(recorded)["app"]
    same_shape(standin_app(final_state), real_doc)


@pytest.mark.parametrize("recorded", ["app-finished", "app-killed", "app-failed"])
def test_finished_apps_follow_the_real_conventions(recorded: str) -> None:
    real_doc = real(recorded)["app"]
    ours = standin_app(real_doc["state"])
    for key in ("state", "finalStatus", "trackingUI", "allocatedMB", "allocatedVCores",
                "runningContainers"):  # fmt: skip
        assert ours[key] == real_doc[key], key
    if recorded == "app-killed":
        # a killed app's progress is where its AM got to: two recordings of the same kill read
        # 100.0 (AM launched) and 0.0 (launchTime 0); the stand-in says 100.0
        assert real_doc["progress"] in (0.0, 100.0) and ours["progress"] == 100.0
    else:
        assert ours["progress"] == real_doc["progress"]
    assert real_doc["finishedTime"] > real_doc["startedTime"] > 0
    assert real_doc["elapsedTime"] == real_doc["finishedTime"] - real_doc["startedTime"]


def test_a_running_app_follows_the_real_conventions() -> None:
    real_doc = real("app-running")["app"]
    ours = standin_app(None)
    assert (ours["state"], ours["finalStatus"], ours["trackingUI"]) == (
        real_doc["state"], real_doc["finalStatus"], real_doc["trackingUI"])  # fmt: skip
    assert real_doc["finishedTime"] == ours["finishedTime"] == 0
    assert real_doc["runningContainers"] == ours["runningContainers"] == 3  # AM + 2 executors
    assert real_doc["trackingUrl"].endswith(f"/proxy/{real_doc['id']}/")
    assert real_doc["applicationTags"] == ours["applicationTags"] == "cobell,cobell-job:recorded"


def test_the_lists_and_errors_have_the_real_shape() -> None:
    assert real("apps-none") == {"apps": {}}  # what the stand-in answers for no match
    unknown = real("app-unknown")
    index = real("index")
    assert index["app-unknown"]["status"] == 404
    assert set(unknown) == {"RemoteException"}
    assert {"exception", "message", "javaClassName"} <= set(unknown["RemoteException"])
    assert unknown["RemoteException"]["exception"] == "NotFoundException"
    running = real("apps-running")
    assert isinstance(running["apps"]["app"], list)


def test_cluster_info_and_metrics_have_the_real_keys() -> None:
    rm = StandinRM()
    assert set(rm.cluster_info()["clusterInfo"]) == set(real("info")["clusterInfo"])
    assert set(rm._metrics()["clusterMetrics"]) <= set(real("metrics")["clusterMetrics"])


# --- cobell's readers on the real documents ------------------------------------------------


def test_cobell_reads_the_real_running_app() -> None:
    (app,) = [a for a in parse_apps(real("apps-running")) if a.name == "recorded"]
    assert app.state == "RUNNING" and app.scale_out == 2
    assert app.job == "recorded" and set(app.tags) == {"cobell", "cobell-job:recorded"}
    assert app.ui_url is not None and "/proxy/" in app.ui_url
    assert app.progress is not None and 0 <= app.progress <= 1


@pytest.mark.parametrize(
    ("recorded", "status"),
    [("app-finished", "succeeded"), ("app-killed", "killed"), ("app-failed", "failed")],
)
def test_cobell_imports_the_real_finished_apps(recorded: str, status: str) -> None:
    raw = real(recorded)["app"]
    got = parse_finished(raw)
    assert not isinstance(got, str), got
    assert got.status == status and got.app_id == raw["id"]
    if recorded == "app-finished":
        assert got.job == "recorded" and got.scale_out is not None and got.scale_out <= 2


def test_the_real_drivers_answer_through_the_proxy_parses() -> None:
    # recorded while the app's one job (20 tasks in one stage, scaling_job.py) was running
    jobs = real("proxy-jobs")
    assert jobs, "recorded before the driver had a job: re-record (record_real.py waits for one)"
    progress = parse_progress(jobs, [])
    assert progress.jobs_known == 1 and progress.jobs_done == 0
    assert progress.stages_known == 1 and progress.tasks_known == 20
    assert 0 <= progress.tasks_done <= 20 and progress.first_job_at is not None


def test_a_finished_app_still_releasing_its_am_container_is_read_as_finished() -> None:
    """For a moment after FINISHED the real RM still counts the AM's container."""
    raw = real("app-finished-releasing")["app"]
    assert raw["state"] == "FINISHED" and raw["runningContainers"] == 1
    (app,) = parse_apps({"apps": {"app": [raw]}})
    # finished: its scale-out is the executors its vcore-seconds imply (issue 35: a finished
    # co-runner carries one), not a count of running containers
    assert app.state == "FINISHED" and app.scale_out is not None and app.scale_out >= 1
    got = parse_finished(raw)
    assert not isinstance(got, str), got
    assert got.status == "succeeded" and got.job == "recorded"
