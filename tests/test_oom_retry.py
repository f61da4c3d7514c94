"""Memory failures as YARN and Spark report them, and the memory a retry runs at (issue 36,
item 5): the pure classification of each kind of diagnostics, the memory ladder, and
`submit --retry-on-oom` with a stand-in spark-submit for YARN. (The real YARN:
tests/test_real_yarn_oom.py.)"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from cobell_cli.core.memory.failures import failure_reason, memory_failure_kind
from cobell_cli.core.memory.retry import SPARK_DEFAULT_HEAP_MB, retry_memory
from cobell_cli.core.memory.sizing import ContainerRules
from cobell_cli.store.history import History
from tests.cli_support import cobell_process

# As the local YARN's RM reports them (Spark 4.3, Hadoop 3.5) and as Spark's YarnAllocator
# words an executor's exit (ExecutorExitCode.explainExitCode).
OOM_HOOK = (
    "Container from a bad node: container_1795898005933_0001_01_000002 on host: localhost. "
    "Exit status: 143. Possible causes: Unknown executor exit code (143) (died from signal "
    "15?) Diagnostics: [2026-11-28 20:33:48.078]Container killed on request. Exit code is 143\n"
    "[2026-11-28 20:33:48.078]Container exited with a non-zero exit code 143. \n"
    "[2026-11-28 20:33:48.079]Killed by external signal\n."
)
EXIT_52 = (
    "Container from a bad node: container_1_0001_01_000002 on host: n1. Exit status: 52. "
    "Possible causes: OutOfMemoryError Diagnostics: Container exited with a non-zero exit "
    "code 52. Error file: prelaunch.err."
)
PHYSICAL = (
    "Application application_1_0001 failed 1 times due to AM Container for "
    "appattempt_1_0001_000001 exited with  exitCode: -104\nFailing this attempt.Diagnostics: "
    "Container [pid=4242,containerID=container_1_0001_01_000001] is running 362807296B beyond "
    "the 'PHYSICAL' memory limit. Current usage: 618.0 MB of 256 MB physical memory used"
)
PHYSICAL_HADOOP2 = (
    "Container [pid=1,containerID=c] is running beyond physical memory limits. Current usage: "
    "2.1 GB of 2 GB physical memory used; Container killed on request. Exit code is 143"
)
EXIT_MINUS_104 = "Container from a bad node: c on host: n1. Exit status: -104. Diagnostics: x"
# The exit status alone: each marker must classify by itself (lines are read one at a time,
# and YARN cuts long diagnostics short).
EXIT_52_BARE = "Container from a bad node: c on host: n1. Exit status: 52. Diagnostics: "


@pytest.mark.parametrize(("text", "kind"), [
    (OOM_HOOK, "oom-hook"),
    (EXIT_52, "heap"),
    (EXIT_52_BARE, "heap"),
    ("Possible causes: OutOfMemoryError", "heap"),
    ("ExceptionFailure java.lang.OutOfMemoryError Java heap space", "heap"),
    (PHYSICAL, "physical"),
    (PHYSICAL_HADOOP2, "physical"),
    (EXIT_MINUS_104, "physical"),
    ("Container killed by YARN for exceeding physical memory limits. 4.5 GB of 4.4 GB used.",
     "physical"),
])
def test_each_kind_of_memory_diagnostics(text: str, kind: str) -> None:
    assert memory_failure_kind(text) == kind
    # an executor's own SIGTERM reads like one from outside: memory only with its log
    # (tests/test_oom_hook_logs.py), never from the RM's diagnostics or the driver's output
    expected = None if kind == "oom-hook" else "memory"
    assert failure_reason(["User application exited with status 1", text]) == expected


@pytest.mark.parametrize("text", [
    # the driver asked for it (dynamic allocation, a stop): not the executor's own JVM
    "Container container_1_0001_01_000002 exited from explicit termination request.",
    "Container killed on request. Exit code is 143\nContainer exited with a non-zero exit "
    "code 143.",
    "Max number of executor failures (3) reached",
    "User application exited with status 1",
    "Container preempted by scheduler. Exit status: -102.",
    "",
])
def test_other_diagnostics_are_not_memory(text: str) -> None:
    assert memory_failure_kind(text) is None
    assert failure_reason([text]) is None


LOCAL_YARN = ContainerRules("yarn", allocation_mb=128, maximum_mb=4096)


def test_the_retry_runs_above_every_failed_heap_within_the_largest_container() -> None:
    first = retry_memory([512], LOCAL_YARN)
    assert first.reservation is not None and first.why_not is None
    grant = first.reservation
    assert (grant.executor_memory_mb, grant.executor_overhead_mb, grant.container_mb) == (
        768, 384, 1152)
    # every failed attempt counts, in any order; the largest decides
    again = retry_memory([768, 512], LOCAL_YARN).reservation
    assert again is not None and again.executor_memory_mb > 768
    assert again.container_mb <= 4096
    # near the top: the largest container YARN grants, not more
    top = retry_memory([3000], LOCAL_YARN).reservation
    assert top is not None and top.container_mb == 4096 and top.executor_memory_mb > 3000


def test_an_attempt_without_a_heap_ran_at_sparks_default() -> None:
    grant = retry_memory([None], LOCAL_YARN).reservation
    assert grant is not None and grant.executor_memory_mb > SPARK_DEFAULT_HEAP_MB == 1024


def test_the_memory_models_bound_wins_when_larger() -> None:
    grant = retry_memory([512], LOCAL_YARN, planned_heap_mb=1603).reservation
    assert grant is not None and grant.executor_memory_mb >= 1603


def test_a_users_overhead_is_kept_with_the_larger_heap() -> None:
    grant = retry_memory([512], LOCAL_YARN, overhead_mb=1024).reservation
    assert grant is not None and grant.executor_overhead_mb == 1024
    assert grant.executor_memory_mb > 512 and grant.container_mb == 768 + 1024


def test_when_the_largest_container_failed_nothing_is_retried() -> None:
    top = retry_memory([3000], LOCAL_YARN).reservation
    assert top is not None
    stop = retry_memory([3000, top.executor_memory_mb], LOCAL_YARN)
    assert stop.reservation is None
    assert stop.why_not is not None and "4096 MB" in stop.why_not
    assert len(stop.why_not.splitlines()) == 1


def test_a_standalone_worker_grants_the_heap_alone() -> None:
    grant = retry_memory([512], ContainerRules("standalone")).reservation
    assert grant is not None and grant.executor_overhead_mb == 0
    assert grant.executor_memory_mb == grant.container_mb == 768


# --- submit --retry-on-oom with a stand-in spark-submit for YARN ----------------------------

FAKE_YARN_SPARK = """#!/bin/sh
# A spark-submit stand-in for YARN whose executor runs out of heap below NEED MB; Spark's
# default heap when the command gives none.
mem={default}
while [ $# -gt 0 ]; do
  case "$1" in --executor-memory) mem=$(echo "$2" | tr -d m); shift;; esac
  shift
done
echo "$mem" >> "{calls}"
if [ "$mem" -lt "{need}" ]; then
  echo "ERROR Executor: Exception in task 0.0: java.lang.OutOfMemoryError: Java heap space" >&2
  exit 1
fi
echo done
"""


def _submit_on_yarn(tmp_path: Path, need: int, maximum_mb: int) -> tuple[int, dict, str, list]:
    """`submit --retry-on-oom 10` of the stand-in, in a command that sets no executor memory,
    against a yarn-site.xml whose largest container is `maximum_mb`; (exit code, --json
    summary, stderr, the heaps the stand-in was given)."""
    calls = tmp_path / "calls"
    script = tmp_path / "bin" / "spark-submit"
    script.parent.mkdir()
    script.write_text(FAKE_YARN_SPARK.format(need=need, calls=calls,
                                             default=SPARK_DEFAULT_HEAP_MB))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "yarn-site.xml").write_text(
        "<configuration>"
        "<property><name>yarn.scheduler.minimum-allocation-mb</name><value>128</value></property>"
        f"<property><name>yarn.scheduler.maximum-allocation-mb</name><value>{maximum_mb}</value>"
        "</property></configuration>")
    proc = cobell_process(
        "--db", tmp_path / "h.db", "submit", "-j", "etl", "-t", "600", "--cluster", "none",
        "--json", "--max-scale-out", "2", "--event-log-dir", "off", "--retry-on-oom", "10",
        "--", script, "--master", "yarn", "app.py",
        env={"HADOOP_CONF_DIR": str(conf), "SPARK_CONF_DIR": str(conf),
             "COBELL_MODEL_CACHE": "off"},
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    tried = [int(v) for v in calls.read_text().split()] if calls.exists() else []
    return proc.returncode, json.loads(lines[-1]) if lines else {}, proc.stderr, tried


def test_a_failure_at_sparks_default_heap_is_retried_above_it(tmp_path: Path) -> None:
    """The command sets no heap: the failed attempt ran at Spark's 1024 MB, and the retry runs
    above it (it used to run again at the same heap, cobell knowing of none)."""
    code, summary, err, tried = _submit_on_yarn(tmp_path, need=1200, maximum_mb=8192)
    assert code == 0, err
    assert tried[0] == SPARK_DEFAULT_HEAP_MB and len(tried) == 2 and tried[1] >= 1200
    attempts = summary["attempts"]
    assert [a["failure_reason"] for a in attempts] == ["memory", None]
    assert attempts[1]["executor_memory_mb"] == tried[1]
    assert "failed for memory at 1024 MB of heap" in err


def test_a_retry_stops_with_one_line_when_no_container_is_larger(tmp_path: Path) -> None:
    code, summary, err, tried = _submit_on_yarn(tmp_path, need=100_000, maximum_mb=2048)
    assert code == 1 and summary["status"] == "failed"
    assert tried == sorted(set(tried)) and len(tried) < 11
    with History.open(tmp_path / "h.db") as history:
        runs = sorted(history.runs(), key=lambda r: r["id"])
    # the first set none (None: not known to cobell, Spark's default to the ladder)
    assert [r["executor_memory_mb"] for r in runs] == [None, *tried[1:]]
    assert all(r["failure_reason"] == "memory" for r in runs)
    (line,) = [ln for ln in err.splitlines() if "not retried" in ln]
    assert "largest container YARN grants (2048 MB)" in line
    assert "Traceback" not in err


# --- a YARN on this host: cluster-mode drivers write cobell's event log -----------------------


def test_a_yarn_on_loopback_gets_the_event_log_in_cluster_mode_too(tmp_path: Path) -> None:
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.cluster.yarn import YarnCluster
    from cobell_cli.run.event_capture import prepare
    from cobell_cli.run.launch import inject, spark_confs

    def cluster(url: str) -> YarnCluster:
        return YarnCluster([url], JsonClient(what="YARN RM", timeout_s=1))

    assert cluster("http://127.0.0.1:8088").on_this_host()
    assert cluster("http://localhost:8088").on_this_host()
    assert not cluster("http://rm.example.com:8088").on_this_host()
    command = ["spark-submit", "--master", "yarn", "--deploy-mode", "cluster", "a.py"]
    here = prepare(inject(command, 2, "etl"), tmp_path / "logs", cluster_here=True)
    assert spark_confs(here.argv)["spark.eventLog.dir"] == (tmp_path / "logs").as_uri()
    assert not here.warnings and (tmp_path / "logs").is_dir()
    elsewhere = prepare(inject(command, 2, "etl"), tmp_path / "other")
    assert "spark.eventLog.dir" not in spark_confs(elsewhere.argv)
    assert "event log not captured" in elsewhere.warnings[0]
