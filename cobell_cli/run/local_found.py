"""Whether this machine's `cobell local-cluster` clusters run, from their files alone: how
`--cluster yarn`, `standalone` and `auto` find them when nothing is configured.

Light on purpose: a predict with no cluster configured asks this, and run/local_yarn.py and
run/local_cluster.py import urllib and subprocess (~90 ms, most of a cached predict). The
files are the ones those modules write under `$XDG_DATA_HOME/cobell`: the local YARN's
`ready.json` (written once its RM answers, removed at stop), its launcher's pid and the
yarn-site.xml of its conf directory; the standalone cluster's `cluster.json` (its shape, with
the web UI's port) and the master's pid. A pid counts only while /proc says it is that
cluster's process (a recycled pid is not). Reads only: a stale pid file stays for `status`.
"""

from __future__ import annotations

import json
from pathlib import Path

YARN_DIR = "local-yarn"  # run/local_yarn.py: LocalYarn's default base directory
YARN_LAUNCHER = "LocalYarn.java"  # run/local_yarn.py LAUNCHER_MARK: in its JVM's command line
STANDALONE_DIR = "local-cluster"  # run/local_cluster.py: LocalCluster's default base directory
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
HOST = "127.0.0.1"


def running_yarn_site(data_dir: Path) -> Path | None:
    """The local YARN's yarn-site.xml while it runs, else None."""
    base = (data_dir / YARN_DIR).absolute()
    site = base / "conf" / "yarn-site.xml"
    if not ((base / "ready.json").is_file() and site.is_file()):
        return None
    marks = (YARN_LAUNCHER, str(base))
    return site if _runs(base / "yarn.pid", marks) else None


def running_master_webui(data_dir: Path) -> str | None:
    """The local standalone master's web UI while the master runs, else None."""
    base = data_dir / STANDALONE_DIR
    try:
        port = int(json.loads((base / "cluster.json").read_text())["shape"]["webui_port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return f"http://{HOST}:{port}" if _runs(base / "master.pid", (MASTER_CLASS,)) else None


def _runs(pid_file: Path, marks: tuple[str, ...]) -> bool:
    """The pid in `pid_file` is a running process whose command line holds every mark."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    return all(mark.encode() in cmdline for mark in marks)
