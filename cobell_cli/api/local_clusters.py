"""Throw-away clusters on this machine, from Python: a Spark standalone master and workers
(`LocalCluster`), and a YARN ResourceManager with NodeManagers in one JVM (`LocalYarn`, shaped
by a `YarnShape`).

`cobell local-cluster` and `cobell demo` drive these same objects: `start(...)` waits until
every worker (NodeManager) is up and returns a status, `status()` says what runs now (its
`to_dict()` is the command's `--json`), `stop()` ends the daemons and keeps their logs. Each
keeps its state in a directory (by default below cobell's data directory), so a script can
run one of its own beside the user's. They live in `run/`; this module is where the API
names them, so that the names stay when the implementation moves. So are the small PySpark
jobs the demos submit to them (`example_path`) and the spark-submit that goes with them.
"""

from __future__ import annotations

from cobell_cli.examples import DEMO_JOB_ARGS, example_path
from cobell_cli.run.local_cluster import LocalCluster, LocalClusterStatus, spark_submit_path
from cobell_cli.run.local_yarn import LocalYarn, LocalYarnStatus
from cobell_cli.run.local_yarn_conf import YarnShape

__all__ = [
    "DEMO_JOB_ARGS",
    "LocalCluster",
    "LocalClusterStatus",
    "LocalYarn",
    "LocalYarnStatus",
    "YarnShape",
    "example_path",
    "spark_submit_path",
]
