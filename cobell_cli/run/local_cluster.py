"""A real Spark standalone cluster on loopback from the pyspark wheel, so anyone can try cobell.

A master and N workers run as detached `spark-class` processes (each in its own session, so
they outlive the cobell command that started them and a terminal's Ctrl-C does not reach
them), bound to 127.0.0.1. Everything lives under one directory, by default
`$XDG_DATA_HOME/cobell/local-cluster`:

    cluster.json        how it was started (ports, workers, cores, memory)
    master.pid, worker-<i>.pid
    logs/master.out, logs/worker-<i>.out   (what spark-class printed)
    work/worker-<i>/    executors' work dirs (their stdout/stderr per app)
    conf/               an empty SPARK_CONF_DIR: the user's Spark config never leaks in

API (the CLI and the test fixture use the same code)::

    lc = LocalCluster()                    # or LocalCluster(tmp_dir)
    status = lc.start(workers=2, cores_per_worker=4, port=7077, webui_port=8080)
    lc.master_url, lc.webui_url            # spark://127.0.0.1:7077, http://127.0.0.1:8080
    lc.status().running; lc.master_json()  # the master's own /json/ view
    lc.stop()

`start` is idempotent: a running cluster is reused (missing workers are restarted); asking
for a different shape than the running one is a UsageError. Stale pid files (process gone,
or the pid now belongs to something that is not a Spark daemon) are ignored and removed.
Workers may offer more cores than the machine has: Spark only counts them, which is what a
scale-out demo on a laptop needs. Executors default to 1g, so memory_per_worker bounds how
many executors fit on a worker.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cobell_cli.core.words import count
from cobell_cli.errors import ClusterError, CobellError, UsageError
from cobell_cli.run.local_found import HOST, MASTER_CLASS, STANDALONE_DIR
from cobell_cli.threads import user_environ

DEFAULT_WORKERS = 2
DEFAULT_CORES_PER_WORKER = 4
DEFAULT_MEMORY_PER_WORKER = "4g"
DEFAULT_PORT = 7077
DEFAULT_WEBUI_PORT = 8080
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

# Popen objects of daemons this process started: lets `stop` reap them (no zombies that look
# alive to kill(pid, 0)) and keeps CPython from warning that they are "still running".
_SPAWNED: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ClusterShape:
    workers: int = DEFAULT_WORKERS
    cores_per_worker: int = DEFAULT_CORES_PER_WORKER
    memory_per_worker: str = DEFAULT_MEMORY_PER_WORKER
    port: int = DEFAULT_PORT
    webui_port: int = DEFAULT_WEBUI_PORT


@dataclass(frozen=True)
class DaemonState:
    role: str  # "master" or "worker-<i>"
    pid: int | None
    alive: bool
    log: str


@dataclass
class LocalClusterStatus:
    running: bool  # master up, its /json/ answers, every worker ALIVE there
    base_dir: str
    master_url: str | None
    webui_url: str | None
    shape: dict[str, Any] | None
    daemons: list[DaemonState] = field(default_factory=list)
    alive_workers: int | None = None  # from the master's /json/; None when it does not answer
    cores: int | None = None
    cores_used: int | None = None
    active_apps: int | None = None
    completed_apps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_java() -> str:
    """The java binary spark-class will use (JAVA_HOME first, as spark-class does)."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if not found:
        raise CobellError(
            "Java was not found (Spark needs Java 17 or newer)",
            hint="install it with `sudo apt-get install openjdk-17-jre-headless`, or set JAVA_HOME",
        )
    return found


def find_spark_home() -> Path:
    """The Spark distribution inside the pyspark wheel (has bin/spark-class and jars/)."""
    spec = importlib.util.find_spec("pyspark")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        home = Path(location)
        if (home / "bin" / "spark-class").is_file() and (home / "jars").is_dir():
            return home
    raise CobellError(
        "pyspark is not installed (the local cluster runs Spark from the pyspark wheel)",
        hint="install it with `pip install 'cobell[spark]'`",
    )


def spark_submit_path() -> Path:
    """bin/spark-submit of the same Spark, for submitting to the local cluster."""
    return find_spark_home() / "bin" / "spark-submit"


def _port_free(port: int) -> bool:
    """Can the master listen on `port`? Bound as the JVM binds (SO_REUSEADDR), so the
    connections a just-stopped master left in TIME_WAIT do not count, only a listener."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _is_spark_daemon(pid: int) -> bool | None:
    """Is pid a Spark master/worker? None where /proc cannot tell (not Linux)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False if Path("/proc/self").exists() else None
    except OSError:
        return None
    if not cmdline:
        return None  # mid-exec (spark-class execs java) or a zombie: cannot tell from here
    return b"org.apache.spark.deploy." in cmdline


def _pid_exists(pid: int) -> bool:
    """Is there a live (not zombie) process with this pid? Reaps our own exited daemons."""
    proc = _SPAWNED.get(pid)
    if proc is not None and proc.poll() is not None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    with contextlib.suppress(OSError, IndexError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _alive(pid: int) -> bool:
    """Is pid one of our Spark daemons, still running (not a recycled pid)?"""
    proc = _SPAWNED.get(pid)
    if proc is not None:  # started by this process: its own handle cannot be a recycled pid
        return proc.poll() is None
    return _pid_exists(pid) and _is_spark_daemon(pid) is not False


def group_exists(pgid: int) -> bool:
    """Does process group pgid still have a member (our own exited leader reaped first)?"""
    leader = _SPAWNED.get(pgid)
    if leader is not None:
        leader.poll()  # reap our own leader so its zombie does not keep the group alive
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalCluster:
    """One local standalone cluster rooted at base_dir; see the module docstring."""

    def __init__(self, base_dir: str | Path | None = None) -> None:
        if base_dir is None:
            from cobell_cli.config import data_dir

            base_dir = data_dir() / STANDALONE_DIR
        self.base_dir = Path(base_dir)

    # --- where things are -----------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.base_dir / "cluster.json"

    @property
    def log_dir(self) -> Path:
        return self.base_dir / "logs"

    def pid_file(self, role: str) -> Path:
        return self.base_dir / f"{role}.pid"

    def log_file(self, role: str) -> Path:
        return self.log_dir / f"{role}.out"

    def shape(self) -> ClusterShape | None:
        """The shape recorded by the last start, or None."""
        try:
            data = json.loads(self.state_file.read_text())
            return ClusterShape(**data["shape"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def master_url(self) -> str:
        shape = self.shape() or ClusterShape()
        return f"spark://{HOST}:{shape.port}"

    @property
    def webui_url(self) -> str:
        shape = self.shape() or ClusterShape()
        return f"http://{HOST}:{shape.webui_port}"

    # --- processes --------------------------------------------------------------------------

    def _read_pid(self, role: str) -> int | None:
        try:
            return int(self.pid_file(role).read_text().strip())
        except (OSError, ValueError):
            return None

    def _live_pid(self, role: str) -> int | None:
        """The daemon's pid if it runs; a stale pid file is removed."""
        pid = self._read_pid(role)
        if pid is None:
            return None
        if _alive(pid):
            return pid
        self.pid_file(role).unlink(missing_ok=True)
        return None

    def _roles(self) -> list[str]:
        workers = sorted(
            (p.stem for p in self.base_dir.glob("worker-*.pid")),
            key=lambda r: int(r.split("-")[1]) if r.split("-")[1].isdigit() else 0,
        )
        return ["master", *workers]

    def _env(self, spark_home: Path) -> dict[str, str]:
        env = user_environ()
        for key in ("SPARK_MASTER_HOST", "SPARK_MASTER_PORT", "SPARK_WORKER_CORES"):
            env.pop(key, None)
        env.update(
            SPARK_HOME=str(spark_home),
            SPARK_LOCAL_IP=HOST,
            SPARK_CONF_DIR=str(self.base_dir / "conf"),
            SPARK_LOG_DIR=str(self.log_dir),
            SPARK_WORKER_DIR=str(self.base_dir / "work"),
            SPARK_LOCAL_DIRS=str(self.base_dir / "tmp"),
            SPARK_PID_DIR=str(self.base_dir),
            # fail instead of silently binding port+1 when the port is taken; no REST
            # submission server: its fixed port 6066 collides between two local clusters and,
            # when it cannot bind, the master never becomes ALIVE (stays STANDBY)
            SPARK_MASTER_OPTS="-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false",
        )
        return env

    def _spawn(self, role: str, args: list[str], spark_home: Path) -> int:
        log = self.log_file(role)
        with log.open("ab") as out:
            out.write(f"--- cobell local-cluster: starting {role} at {time.ctime()}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                [str(spark_home / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self._env(spark_home),
                cwd=self.base_dir,
                start_new_session=True,
            )
        _SPAWNED[proc.pid] = proc
        self.pid_file(role).write_text(f"{proc.pid}\n")
        return proc.pid

    # --- the master's view --------------------------------------------------------------------

    def master_json(self, timeout_s: float = 2.0) -> dict[str, Any] | None:
        """The master's /json/ document, or None when it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=timeout_s) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    # --- commands -----------------------------------------------------------------------------

    def start(
        self,
        workers: int | None = None,
        cores_per_worker: int | None = None,
        memory_per_worker: str | None = None,
        port: int | None = None,
        webui_port: int | None = None,
        timeout_s: float = 120.0,
    ) -> LocalClusterStatus:
        """Start (or reuse) the cluster and wait until every worker is ALIVE at the master.

        None means "as the running cluster has it, else the default".
        """
        asked = {
            "workers": workers,
            "cores_per_worker": cores_per_worker,
            "memory_per_worker": memory_per_worker,
            "port": port,
            "webui_port": webui_port,
        }
        for key in ("workers", "cores_per_worker"):
            if asked[key] is not None and asked[key] < 1:
                raise UsageError(f"{key.replace('_', '-')} must be >= 1, got {asked[key]}")
        running = self._live_pid("master") is not None
        current = self.shape() if running else None
        if current is not None:
            differs = {
                k: (getattr(current, k), v)
                for k, v in asked.items()
                if v is not None and getattr(current, k) != v
            }
            if differs:
                what = ", ".join(f"{k} {old} (asked {new})" for k, (old, new) in differs.items())
                raise UsageError(
                    f"the local cluster already runs with {what}",
                    hint="run `cobell local-cluster stop` first to change its shape",
                )
            shape = current
        else:
            base = ClusterShape()
            shape = ClusterShape(**{k: (v if v is not None else getattr(base, k))
                                    for k, v in asked.items()})  # fmt: skip

        find_java()  # a clear error now rather than "JAVA_HOME is not set" in a log
        spark_home = find_spark_home()
        for sub in ("logs", "conf", "work", "tmp"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)

        if not running:
            for role in self._roles():  # leftovers of a crashed cluster: stop them first
                self._kill(role, timeout_s=5)
            for p, what in ((shape.port, "--port"), (shape.webui_port, "--webui-port")):
                if not _port_free(p):
                    raise ClusterError(
                        f"port {p} on {HOST} is in use, so the master cannot bind it",
                        hint=f"pick another with `cobell local-cluster start {what} N`",
                    )
            self.state_file.write_text(json.dumps({"shape": asdict(shape)}, indent=2) + "\n")
            self._spawn(
                "master",
                [MASTER_CLASS, "--host", HOST, "--port", str(shape.port),
                 "--webui-port", str(shape.webui_port)],
                spark_home,
            )  # fmt: skip

        deadline = time.monotonic() + timeout_s
        self._wait(lambda doc: doc is not None, "master", deadline)

        for i in range(1, shape.workers + 1):
            role = f"worker-{i}"
            if self._live_pid(role) is not None:
                continue
            work = self.base_dir / "work" / role
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(
                role,
                [WORKER_CLASS, "--host", HOST, "--cores", str(shape.cores_per_worker),
                 "--memory", shape.memory_per_worker, "--webui-port", "0",
                 "--work-dir", str(work), self.master_url],
                spark_home,
            )  # fmt: skip

        self._wait(
            lambda doc: doc is not None and _alive_workers(doc) >= shape.workers,
            count(shape.workers, "worker"),
            deadline,
        )
        return self.status()

    def _wait(self, ready: Any, what: str, deadline: float) -> None:
        while True:
            doc = self.master_json(timeout_s=1.0)
            if ready(doc):
                return
            for role in self._roles():
                if self._read_pid(role) is not None and self._live_pid(role) is None:
                    raise ClusterError(
                        f"the local Spark {role} exited during start-up",
                        hint=f"see {self.log_file(role)}",
                    )
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the local Spark cluster did not report {what} ALIVE in time",
                    hint=f"see the logs in {self.log_dir}",
                )
            time.sleep(0.5)

    def _kill(self, role: str, timeout_s: float) -> bool:
        """Stop a daemon's whole process group (it includes the executors a worker started).

        The group is signalled until it is empty, because a worker may still launch executors
        after the first SIGTERM. A pid that now belongs to something else is left alone; a
        dead leader whose group still has members (orphaned executors) is cleaned up, since a
        group id cannot be reused while the group exists.
        """
        pid = self._read_pid(role)
        if pid is None:
            return False
        if _pid_exists(pid) and _is_spark_daemon(pid) is False:
            self.pid_file(role).unlink(missing_ok=True)  # recycled pid: not ours
            return False
        was_running = _alive(pid)
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
            end = time.monotonic() + wait_s
            while group_exists(pid) and time.monotonic() < end:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)
                time.sleep(0.2)
        _SPAWNED.pop(pid, None)
        self.pid_file(role).unlink(missing_ok=True)
        return was_running

    def stop(self, timeout_s: float = 15.0) -> list[str]:
        """Stop the master first (no new executors get scheduled), then the workers."""
        stopped = [role for role in self._roles() if self._kill(role, timeout_s)]
        self.state_file.unlink(missing_ok=True)
        return stopped

    def status(self) -> LocalClusterStatus:
        shape = self.shape()
        daemons = []
        for role in self._roles():
            pid = self._read_pid(role)
            live = self._live_pid(role) if pid is not None else None
            if pid is None and role != "master":
                continue
            daemons.append(DaemonState(role, pid, live is not None, str(self.log_file(role))))
        master_up = bool(daemons) and daemons[0].alive
        doc = self.master_json() if master_up else None
        st = LocalClusterStatus(
            running=False,
            base_dir=str(self.base_dir),
            master_url=self.master_url if shape else None,
            webui_url=self.webui_url if shape else None,
            shape=asdict(shape) if shape else None,
            daemons=daemons,
        )
        if doc is not None:
            st.alive_workers = _alive_workers(doc)
            st.cores = doc.get("cores")
            st.cores_used = doc.get("coresused")
            st.active_apps = len(doc.get("activeapps") or [])
            st.completed_apps = len(doc.get("completedapps") or [])
            st.running = shape is not None and st.alive_workers >= shape.workers
        return st


def _alive_workers(doc: dict[str, Any]) -> int:
    return sum(1 for w in doc.get("workers") or [] if w.get("state") == "ALIVE")
