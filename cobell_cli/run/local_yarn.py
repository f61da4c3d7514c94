"""A real YARN on loopback: one ResourceManager and a few NodeManagers, from Hadoop's own jars.

`cobell local-cluster start --yarn` and the integration tests' fixture use this code. One JVM
(`yarn_launcher/LocalYarn.java`, run by `java` from source, no build step) holds the
ResourceManager with the CapacityScheduler and the NodeManagers, all bound to 127.0.0.1; the
jars come from `yarn_jars` (Maven Central, cached). Everything lives under one directory, by
default `$XDG_DATA_HOME/cobell/local-yarn`:

    cluster.json      the shape it was started with
    yarn.pid          the JVM (detached, in its own session: it outlives the command)
    conf/             HADOOP_CONF_DIR and SPARK_CONF_DIR for clients: yarn-site.xml (with the
                      ports the RM really bound, written by the JVM once it is ready),
                      core-site.xml (fs.defaultFS=file:/// : no HDFS on one machine),
                      capacity-scheduler.xml, spark-defaults.conf, spark-env.sh,
                      log4j2.properties (Spark's own logs at WARN)
    ready.json        written by the JVM when every NodeManager runs and is labelled
    logs/yarn.out, logs/yarn.log, nm-<i>/logs/   (container logs per NodeManager)

The cluster (its files: run/local_yarn_conf.py):

- NodeManagers of `memory_mb_per_node` MB and `vcores_per_node` vcores: `node_managers` in
  the default partition and `labeled_node_managers` in an exclusive partition `node_label`
  (node-label-aware placement: `spark.yarn.executor.nodeLabelExpression`);
- queues `default` (70 %, may grow to 100 %, one user too, may use the labelled partition)
  and `batch` (30 %, capped at 30 %, 60 % of it for ApplicationMasters: a second 1 GB app
  there waits ACCEPTED);
- YARN's memory enforcement on: a container whose process tree's RSS exceeds its size is
  killed by the NodeManager ("running beyond physical memory limits"), checked every second;
  the virtual-memory check is off (a JVM's reservations are not its use);
- one attempt per application, so a failure or a kill ends the app at once.

Spark submits from the pyspark wheel with `HADOOP_CONF_DIR=conf SPARK_CONF_DIR=conf`: the
wheel's jars are on every node already (`spark.yarn.jars=local:...`, nothing uploaded per
submit), executors and drivers run this Python, and stay on loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cobell_cli.errors import ClusterError, UsageError
from cobell_cli.run.local_cluster import find_java, find_spark_home, group_exists
from cobell_cli.run.local_found import YARN_DIR, YARN_LAUNCHER
from cobell_cli.run.local_yarn_conf import (
    HOST,
    SPARK_LOG4J2,
    YarnShape,
    capacity_scheduler,
    check_shape,
    core_site,
    describe_shape,
    hadoop_xml,
    log4j_properties,
    spark_defaults,
    yarn_site,
)
from cobell_cli.run.yarn_jars import hadoop_version, is_complete, jar_dir
from cobell_cli.threads import user_environ

LAUNCHER = Path(__file__).with_name("yarn_launcher") / "LocalYarn.java"
LAUNCHER_MARK = YARN_LAUNCHER  # in the JVM's command line: how a pid is recognised
JVM_OPTIONS = ("-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


@dataclass
class LocalYarnStatus:
    running: bool  # the JVM runs, the RM answers, every NodeManager is RUNNING
    base_dir: str
    rm_url: str | None
    conf_dir: str
    shape: dict[str, Any] | None
    pid: int | None
    alive: bool
    log: str
    nodes: list[dict[str, Any]] = field(default_factory=list)  # id, state, label, memory
    apps_running: int | None = None
    apps_pending: int | None = None
    apps_completed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- processes ------------------------------------------------------------------------------


def _cmdline(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def _is_launcher(pid: int, base_dir: Path) -> bool:
    """Is pid the launcher JVM of the cluster in base_dir (not a recycled pid, not another
    cluster's JVM)?"""
    cmdline = _cmdline(pid)
    if cmdline is None:
        return False
    args = cmdline.split(b"\0")
    return any(a.endswith(LAUNCHER_MARK.encode()) for a in args) and str(base_dir).encode() in args


def _container_pids(base_dir: Path) -> list[int]:
    """Processes working under the cluster's NodeManager dirs: its containers."""
    root = str(base_dir.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(entry / "cwd")
            if cwd.startswith(root + os.sep) and "/nm-" in cwd[len(root) :]:
                found.append(int(entry.name))
    return found


class LocalYarn:
    """One local YARN rooted at base_dir; see the module docstring."""

    def __init__(self, base_dir: str | Path | None = None) -> None:
        if base_dir is None:
            from cobell_cli.config import data_dir

            base_dir = data_dir() / YARN_DIR
        self.base_dir = Path(base_dir).absolute()
        self._proc: subprocess.Popen[bytes] | None = None

    # --- where things are ---------------------------------------------------------------

    @property
    def conf_dir(self) -> Path:
        return self.base_dir / "conf"

    @property
    def state_file(self) -> Path:
        return self.base_dir / "cluster.json"

    @property
    def pid_file(self) -> Path:
        return self.base_dir / "yarn.pid"

    @property
    def ready_file(self) -> Path:
        return self.base_dir / "ready.json"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "logs" / "yarn.out"

    def shape(self) -> YarnShape | None:
        try:
            return YarnShape(**json.loads(self.state_file.read_text())["shape"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def ready(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.ready_file.read_text())
        except (OSError, ValueError):
            return None

    @property
    def rm_url(self) -> str | None:
        doc = self.ready()
        return f"http://{doc['webapp']}" if doc and doc.get("webapp") else None

    def client_env(self, env: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for spark-submit and cobell against this cluster."""
        env = dict(os.environ if env is None else env)
        for key in ("YARN_CONF_DIR", "PYSPARK_SUBMIT_ARGS", "COBELL_RM_URL"):
            env.pop(key, None)
        env.update(HADOOP_CONF_DIR=str(self.conf_dir), SPARK_CONF_DIR=str(self.conf_dir))
        env["SPARK_LOCAL_IP"] = HOST
        return env

    # --- the JVM ------------------------------------------------------------------------

    def pid(self) -> int | None:
        """The JVM's pid if it runs; a stale pid file is removed."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if self._proc is not None and self._proc.pid == pid:
            if self._proc.poll() is None:
                return pid
        elif _is_launcher(pid, self.base_dir):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def _write_conf(self, shape: YarnShape, spark_home: Path) -> None:
        conf = self.conf_dir
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "yarn-site.xml").write_text(hadoop_xml(yarn_site(shape, self.base_dir)))
        (conf / "core-site.xml").write_text(hadoop_xml(core_site(self.base_dir)))
        (conf / "capacity-scheduler.xml").write_text(hadoop_xml(capacity_scheduler(shape)))
        defaults = spark_defaults(spark_home, sys.executable, self.base_dir)
        (conf / "spark-defaults.conf").write_text(
            "".join(f"{k} {v}\n" for k, v in defaults.items())
        )
        (conf / "log4j2.properties").write_text(SPARK_LOG4J2)
        (conf / "spark-env.sh").write_text(
            f"export SPARK_LOCAL_IP={HOST}\nexport HADOOP_CONF_DIR={conf}\n"
        )
        (self.base_dir / "log4j.properties").write_text(
            log4j_properties(self.base_dir / "logs" / "yarn.log")
        )

    def _spawn(self, shape: YarnShape, java: str, jars: Path, parent_pid: int | None) -> None:
        props = [f"-Dlog4j.configuration={(self.base_dir / 'log4j.properties').as_uri()}"]
        if parent_pid is not None:
            props.append(f"-Dcobell.parent.pid={parent_pid}")
        argv = [
            java, *JVM_OPTIONS, *props, "-cp", f"{self.conf_dir}{os.pathsep}{jars}/*",
            str(LAUNCHER), str(self.base_dir), *[label or "-" for label in shape.labels()],
        ]  # fmt: skip
        env = user_environ()
        for key in ("HADOOP_HOME", "YARN_CONF_DIR", "HADOOP_CLASSPATH", "CLASSPATH"):
            env.pop(key, None)
        env.update(JAVA_HOME=str(Path(java).resolve().parents[1]),
                   HADOOP_CONF_DIR=str(self.conf_dir))  # fmt: skip
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as out:
            out.write(f"--- cobell local-cluster --yarn: starting at {time.ctime()}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.base_dir,
                start_new_session=True,
            )
        self.pid_file.write_text(f"{self._proc.pid}\n")

    # --- commands -----------------------------------------------------------------------

    def start(
        self,
        shape: YarnShape | None = None,
        *,
        timeout_s: float = 180.0,
        parent_pid: int | None = None,
        jars: Path | None = None,
    ) -> LocalYarnStatus:
        """Start (or reuse) the cluster and wait until every NodeManager runs.

        `parent_pid`: the JVM stops by itself when that process is gone (test fixtures);
        `jars`: the jar directory (default: yarn_jars' cache, fetched if missing).
        """
        running = self.pid() is not None and self.ready() is not None
        current = self.shape() if running else None
        if current is not None:
            if shape is not None and shape != current:
                raise UsageError(
                    f"the local YARN already runs with {describe_shape(current)}",
                    hint="run `cobell local-cluster stop --yarn` first to change its shape",
                )
            return self.status()
        shape = shape or YarnShape()
        check_shape(shape)
        java = find_java()
        spark_home = find_spark_home()
        version = hadoop_version(spark_home)
        jars = jars or jar_dir(version)
        if not is_complete(jars):
            from cobell_cli.run.yarn_jars import fetch

            fetch(version, jars)
        self.stop()  # leftovers of a crashed cluster
        self._clean()
        self._write_conf(shape, spark_home)
        self.state_file.write_text(json.dumps({"shape": asdict(shape)}, indent=2) + "\n")
        self._spawn(shape, java, jars, parent_pid)
        self._wait_ready(timeout_s)
        return self.status()

    def _clean(self) -> None:
        import shutil

        for sub in ("node-labels", "staging", "tmp"):
            shutil.rmtree(self.base_dir / sub, ignore_errors=True)
        for old in self.base_dir.glob("nm-*"):
            shutil.rmtree(old, ignore_errors=True)
        self.ready_file.unlink(missing_ok=True)
        self.base_dir.mkdir(parents=True, exist_ok=True)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.ready() is None:
            if self.pid() is None:
                raise ClusterError(
                    "the local YARN exited during start-up",
                    hint=f"see {self.log_file} and {self.log_file.with_name('yarn.log')}",
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ClusterError(
                    f"the local YARN was not ready within {timeout_s:g} s",
                    hint=f"see {self.log_file}; raise --timeout on a busy machine",
                )
            time.sleep(0.25)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the JVM (its NodeManagers kill their containers), then any container left."""
        pid = self.pid()
        if pid is not None:
            for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
                end = time.monotonic() + wait_s
                while group_exists(pid) and time.monotonic() < end:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, sig)
                    if self._proc is not None:
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            self._proc.wait(timeout=0.2)
                    else:
                        time.sleep(0.2)
        for orphan in _container_pids(self.base_dir):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(orphan, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        self.ready_file.unlink(missing_ok=True)
        self.state_file.unlink(missing_ok=True)
        self._proc = None
        return pid is not None

    def rm_json(self, path: str, timeout_s: float = 5.0) -> Any:
        """GET a path of the RM's REST API; None when it does not answer."""
        url = self.rm_url
        if url is None:
            return None
        try:
            with urllib.request.urlopen(f"{url}{path}", timeout=timeout_s) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def status(self) -> LocalYarnStatus:
        shape = self.shape()
        pid = self.pid()
        st = LocalYarnStatus(
            running=False,
            base_dir=str(self.base_dir),
            rm_url=self.rm_url if pid else None,
            conf_dir=str(self.conf_dir),
            shape=asdict(shape) if shape else None,
            pid=pid,
            alive=pid is not None,
            log=str(self.log_file),
        )
        if pid is None or st.rm_url is None:
            return st
        nodes = self.rm_json("/ws/v1/cluster/nodes")
        metrics = self.rm_json("/ws/v1/cluster/metrics")
        for node in ((nodes or {}).get("nodes") or {}).get("node") or []:
            st.nodes.append({
                "id": node.get("id"),
                "state": node.get("state"),
                "label": ",".join(node.get("nodeLabels") or []),
                "memory_mb": node.get("availMemoryMB", 0) + node.get("usedMemoryMB", 0),
                "vcores": node.get("availableVirtualCores", 0)
                + node.get("usedVirtualCores", 0),
            })  # fmt: skip
        if metrics and isinstance(metrics.get("clusterMetrics"), dict):
            m = metrics["clusterMetrics"]
            st.apps_running, st.apps_pending = m.get("appsRunning"), m.get("appsPending")
            st.apps_completed = m.get("appsCompleted")
        want = len(shape.labels()) if shape else 0
        st.running = want > 0 and sum(n["state"] == "RUNNING" for n in st.nodes) >= want
        return st
