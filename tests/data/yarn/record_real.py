"""Record what a real ResourceManager answers, for the stand-in's tests (tests/yarn_standin.py).

Starts cobell's local YARN (run/local_yarn.py: Hadoop's own RM and NodeManagers) in a temporary
directory, makes the apps whose documents cobell reads, and writes each answer verbatim as JSON
into tests/data/yarn/real/ (`<name>.json`; `index.json` says which request gave which file,
with its HTTP status):

- the cluster: `info`, `metrics`, `nodes`, `node-labels`, `scheduler`;
- a Spark app (PySpark, client mode, 2 executors, tags) while it runs: `apps-running`,
  `app-running`, and its driver's `/api/v1/applications/<id>/jobs` through the RM's web proxy
  (`proxy-jobs`, once the driver has a job); once it has finished and released its
  containers: `app-finished` (`app-finished-releasing` is the same app a moment earlier,
  FINISHED but still holding its AM container: kept from one recording, not rewritten);
- an app killed through the REST API (`app-killed`) and one whose AM exits 1 (`app-failed`);
- every finished app, `limit=2` (`apps-finished-limit2`), an empty answer (`apps-none`), an
  unknown app (`app-unknown`, 404).

Run (heavy: starts YARN and a Spark app; ~2-4 min):

    flock /work/.heavy.lock .venv/bin/python tests/data/yarn/record_real.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from cobell_cli.run.local_cluster import find_spark_home  # noqa: E402
from cobell_cli.run.local_yarn import LocalYarn  # noqa: E402
from tests.yarn_support import RealYarn  # noqa: E402

OUT = Path(__file__).parent / "real"
JOB = ROOT / "cobell_cli" / "examples" / "scaling_job.py"


class Recorder:
    """Writes each answer of the RM verbatim (with its status in the index)."""

    def __init__(self, yarn: RealYarn) -> None:
        self.yarn = yarn
        self.index: dict[str, dict[str, Any]] = {}

    def record(self, name: str, path: str) -> Any:
        try:
            with urllib.request.urlopen(f"{self.yarn.rm_url}{path}", timeout=30) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode()
        doc = json.loads(text) if text.strip() else None
        OUT.joinpath(f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        self.index[name] = {"request": f"GET {path}", "status": status}
        return doc

    def reach(self, app_id: str, state: str) -> None:
        self.yarn.wait_for(f"{app_id} {state}", lambda: self.yarn.app(app_id)["state"] == state,
                           timeout_s=600)  # fmt: skip

    def am_started(self, app_id: str) -> None:
        """Its AM container runs (a shell AM never registers: the app stays ACCEPTED)."""
        self.yarn.wait_for(f"{app_id}'s AM container",
                           lambda: self.yarn.app(app_id)["runningContainers"] >= 1)  # fmt: skip


def spark_app(cluster: LocalYarn, rm: Recorder) -> None:
    """A PySpark app recorded while it runs (and through the proxy) and once finished."""
    spark_submit = find_spark_home() / "bin" / "spark-submit"
    proc = subprocess.Popen(
        [str(spark_submit), "--master", "yarn", "--deploy-mode", "client", "--num-executors",
         "2", "--conf", "spark.dynamicAllocation.enabled=false",
         "--conf", "spark.yarn.tags=cobell,cobell-job:recorded", "--name", "recorded",
         str(JOB), "--tasks", "20", "--task-s", "2", "--cpu-fraction", "0.1"],
        env=cluster.client_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    app_id = None
    while app_id is None:
        running = rm.yarn.rest("/ws/v1/cluster/apps?states=RUNNING")["apps"] or {}
        apps = [a for a in running.get("app") or [] if a["runningContainers"] >= 3]
        app_id = apps[0]["id"] if apps else None
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("the Spark app did not get its executors")
        time.sleep(0.5)
    jobs = f"/proxy/{app_id}/api/v1/applications/{app_id}/jobs"
    rm.yarn.wait_for("its first job, through the proxy", lambda: rm.yarn.rest(jobs), timeout_s=120)
    rm.record("apps-running", "/ws/v1/cluster/apps?states=RUNNING")
    rm.record("app-running", f"/ws/v1/cluster/apps/{app_id}")
    rm.record("proxy-jobs", jobs)
    if proc.wait(timeout=600) != 0:
        raise SystemExit("the Spark app failed")
    rm.reach(app_id, "FINISHED")
    # For a moment after FINISHED the RM still counts the AM's container (allocatedMB 896,
    # runningContainers 1: app-finished-releasing.json, kept from the 2026-11-25 21:34
    # recording); what history import reads later is the app once it has released it.
    rm.yarn.wait_for(f"{app_id} releasing its containers",
                     lambda: rm.yarn.app(app_id)["runningContainers"] <= 0)  # fmt: skip
    rm.record("app-finished", f"/ws/v1/cluster/apps/{app_id}")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="record-yarn-") as tmp:
        cluster = LocalYarn(tmp)
        cluster.start(timeout_s=600)
        try:
            assert cluster.rm_url is not None
            yarn = RealYarn(cluster, cluster.rm_url, cluster.conf_dir,
                            find_spark_home() / "bin" / "spark-submit", 0.0)  # fmt: skip
            rm = Recorder(yarn)
            rm.record("info", "/ws/v1/cluster/info")
            rm.record("apps-none", "/ws/v1/cluster/apps?states=RUNNING")
            rm.record("app-unknown", "/ws/v1/cluster/apps/application_1700000000000_0001")
            spark_app(cluster, rm)
            killed = yarn.submit_shell("sleep 300", name="killed", tags=("cobell-job:killed",))
            rm.am_started(killed)
            yarn.kill(killed)
            rm.reach(killed, "KILLED")
            rm.record("app-killed", f"/ws/v1/cluster/apps/{killed}")
            failed = yarn.submit_shell("sleep 2; exit 1", name="failed")
            rm.reach(failed, "FAILED")
            rm.record("app-failed", f"/ws/v1/cluster/apps/{failed}")
            rm.record("apps-finished-limit2",
                      "/ws/v1/cluster/apps?states=FINISHED,FAILED,KILLED&limit=2")  # fmt: skip
            rm.record("metrics", "/ws/v1/cluster/metrics")
            rm.record("nodes", "/ws/v1/cluster/nodes")
            rm.record("node-labels", "/ws/v1/cluster/get-node-labels")
            rm.record("scheduler", "/ws/v1/cluster/scheduler")
        finally:
            cluster.stop()
    (OUT / "index.json").write_text(json.dumps(rm.index, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(rm.index)} answers into {OUT}")


if __name__ == "__main__":
    main()
