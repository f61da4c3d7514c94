"""A run whose YARN app was killed on the cluster is recorded `killed` (the stand-in RM; the
real RM's kill is in tests/test_real_yarn_spark.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cobell_cli.store.history import History
from tests.cli_support import cobell_process
from tests.test_submit import live_rm  # noqa: F401  (fixture: the stand-in on the wall clock)
from tests.yarn_standin import StandinRM

FAKE = """\
#!{python}
# spark-submit whose app ends on the cluster as {state}: the job itself just fails (exit 1),
# as spark-submit does when YARN reports its app KILLED or FAILED.
import json, sys, urllib.request
rm = {rm!r}
post = lambda path, body: json.load(urllib.request.urlopen(urllib.request.Request(
    rm + path, method="POST", data=json.dumps(body).encode(),
    headers={{"Content-Type": "application/json"}})))
app_id = post("/_standin/apps", {{"name": "etl.py", "executors": 2, "duration_s": None}})["id"]
print(f"INFO YarnClientImpl: Submitted application {{app_id}}", file=sys.stderr, flush=True)
post(f"/_standin/apps/{{app_id}}/finish", {{"state": {state!r}}})
print(f"Exception: Application {{app_id}} finished with status {state}", file=sys.stderr)
sys.exit(1)
"""


@pytest.mark.parametrize(("state", "status"), [("KILLED", "killed"), ("FAILED", "failed")])
def test_the_clusters_verdict_on_the_app_decides_killed(
    tmp_path: Path,
    live_rm: StandinRM,  # noqa: F811  (the fixture imported above)
    state: str,
    status: str,
) -> None:
    fake = tmp_path / "spark-submit"
    fake.write_text(FAKE.format(python=sys.executable, rm=live_rm.url, state=state))
    fake.chmod(0o755)
    db = tmp_path / "h.db"
    proc = cobell_process(
        "--db", db, "submit", "-j", "etl", "-t", "60", "--max-scale-out", "4",
        "--rm-url", live_rm.url, "--json", "--",
        str(fake), "--master", "yarn", "--deploy-mode", "cluster", "etl.py",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # the job's own exit code, whatever the verdict
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["status"] == status
    with History.open(db) as history:
        (run,) = history.runs(job="etl")
    assert (run["status"], run["exit_code"]) == (status, 1)
    assert run["app_id"] == summary["app_id"]
