"""The configuration of the local YARN (run/local_yarn.py): pure, from its shape and paths.

The files a real cluster's administrator would write: yarn-site.xml (every RM address on
127.0.0.1, port 0 until the JVM writes the bound ones; NodeManager resources; YARN's memory
check), capacity-scheduler.xml (queues and the labelled partition), core-site.xml (no HDFS),
and for Spark's client spark-defaults.conf and log4j2.properties. The module doc of
run/local_yarn.py says what the cluster is and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from cobell_cli.core.words import count
from cobell_cli.errors import UsageError

HOST = "127.0.0.1"
QUEUES = ("default", "batch")
# how long a NodeManager keeps a finished app's logs and work dirs (the default log retention)
KEEP_APP_DIRS_S = 3 * 3600
LOG_HOLD_S = 30  # a finished app's container logs, served by its NodeManager (below)
RM_ADDRESS_KEYS = (
    "yarn.resourcemanager.address",
    "yarn.resourcemanager.scheduler.address",
    "yarn.resourcemanager.resource-tracker.address",
    "yarn.resourcemanager.admin.address",
    "yarn.resourcemanager.webapp.address",
)


@dataclass(frozen=True)
class YarnShape:
    node_managers: int = 2
    labeled_node_managers: int = 2
    node_label: str = "fast"
    memory_mb_per_node: int = 4096
    vcores_per_node: int = 4

    def labels(self) -> list[str]:
        """One entry per NodeManager: "" is the default partition."""
        return [""] * self.node_managers + [self.node_label] * self.labeled_node_managers


def yarn_site(shape: YarnShape, base_dir: Path) -> dict[str, str]:
    """yarn-site.xml before start: every RM port 0 (the JVM writes the bound ones)."""
    props = {key: f"{HOST}:0" for key in RM_ADDRESS_KEYS}
    props.update({
        "yarn.resourcemanager.hostname": HOST,
        "yarn.resourcemanager.scheduler.class": (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
        ),
        "yarn.resourcemanager.am.max-attempts": "1",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": "500",
        # an AM or client of a stopped cluster gives up in 20 s, not 15 min
        "yarn.resourcemanager.connect.max-wait.ms": "20000",
        "yarn.resourcemanager.connect.retry-interval.ms": "1000",
        # several NodeManagers on one host are several nodes
        "yarn.scheduler.include-port-in-node-name": "true",
        "yarn.scheduler.minimum-allocation-mb": "128",
        "yarn.scheduler.maximum-allocation-mb": str(shape.memory_mb_per_node),
        "yarn.scheduler.maximum-allocation-vcores": str(shape.vcores_per_node),
        "yarn.nodemanager.resource.memory-mb": str(shape.memory_mb_per_node),
        "yarn.nodemanager.resource.cpu-vcores": str(shape.vcores_per_node),
        "yarn.nodemanager.resource.detect-hardware-capabilities": "false",
        "yarn.nodemanager.pmem-check-enabled": "true",
        # the NodeManager's own polling check: "enforced" (the default) leaves it to cgroups'
        # OOM killer, which a NodeManager without the LinuxContainerExecutor does not have
        "yarn.nodemanager.resource.memory.enforced": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.container-monitor.interval-ms": "1000",
        # a killed container gets SIGKILL at once, not SIGTERM and SIGKILL 250 ms later: with
        # one AM attempt, Spark's AM unregisters from its SIGTERM hook, and an AM that
        # unregisters while the RM kills its app turns it FINISHED instead of KILLED (RMAppImpl:
        # KILLING + ATTEMPT_UNREGISTERED), a race the loaded test machine lost
        "yarn.nodemanager.sleep-delay-before-sigkill.ms": "0",
        # A NodeManager holds a finished app until its log handler lets go of it, by default
        # 3 h later (log.retain-seconds 10800); its stop waits while it holds any app (6 s:
        # process-kill-wait + 1 s) and for a pending log deleter (10 s): ~16 s per node that
        # ran a container, the slow `local-cluster stop --yarn` after jobs. A short hold hands
        # the logs to the DeletionService soon and frees the app, yet serves a finished app's
        # container logs over HTTP while cobell reads them after its run (an executor killed
        # by SIGTERM: its OOM, or a kill from outside? run/event_capture.py); only a stop
        # within LOG_HOLD_S of a job's end waits. The DeletionService then waits
        # debug-delay-sec before deleting and drops what is pending when the NodeManager stops,
        # so a finished app's container logs (nm-<i>/logs) stay 3 h on disk as with the
        # default, and its work dirs too, until the next start clears nm-<i>. The RM's record
        # of the app and the event logs are untouched. (process-kill-wait stays 5 s: it is
        # also how long a kill waits for a just-launched container's pid.)
        "yarn.nodemanager.log.retain-seconds": str(LOG_HOLD_S),
        "yarn.nodemanager.delete.debug-delay-sec": str(KEEP_APP_DIRS_S),
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
        "yarn.node-labels.enabled": "true",
        "yarn.node-labels.fs-store.root-dir": (base_dir / "node-labels").as_uri(),
    })  # fmt: skip
    return props


def capacity_scheduler(shape: YarnShape) -> dict[str, str]:
    """Two queues; `default` may use the labelled partition, `batch` is small and capped."""
    q = "yarn.scheduler.capacity.root"
    props = {
        f"{q}.queues": ",".join(QUEUES),
        f"{q}.default.capacity": "70",
        f"{q}.default.maximum-capacity": "100",
        # One user (a laptop's, a test's) may grow to the maximum: at the default factor 1 it
        # stops at the 70 % capacity, and apps that hold containers while another waits for
        # its last one deadlock (a cluster-mode job stuck at 2 of 3 beside hog and victim).
        f"{q}.default.user-limit-factor": "2",
        f"{q}.batch.capacity": "30",
        f"{q}.batch.maximum-capacity": "30",
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.6",
        "yarn.scheduler.capacity.node-locality-delay": "-1",
    }
    if shape.labeled_node_managers:
        label = shape.node_label
        props.update({
            f"{q}.accessible-node-labels.{label}.capacity": "100",
            f"{q}.default.accessible-node-labels": label,
            f"{q}.default.accessible-node-labels.{label}.capacity": "100",
            f"{q}.default.accessible-node-labels.{label}.maximum-capacity": "100",
            f"{q}.batch.accessible-node-labels": " ",
        })  # fmt: skip
    return props


def core_site(base_dir: Path) -> dict[str, str]:
    return {"fs.defaultFS": "file:///", "hadoop.tmp.dir": str(base_dir / "tmp")}


def spark_defaults(spark_home: Path, python: str, base_dir: Path) -> dict[str, str]:
    """What spark-submit needs for this cluster; a user's --conf still wins."""
    return {
        "spark.yarn.jars": f"local:{spark_home / 'jars'}/*",
        "spark.yarn.stagingDir": (base_dir / "staging").as_uri(),
        "spark.pyspark.python": python,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": HOST,
        "spark.executorEnv.SPARK_LOCAL_IP": HOST,
        "spark.executor.memory": "512m",
        "spark.driver.memory": "512m",
        "spark.yarn.am.memory": "512m",
        "spark.ui.showConsoleProgress": "false",
    }


# spark-submit's and the driver's logs: warnings only, but for the line that names the YARN
# application (cobell reads the app id from the job's output as soon as it appears).
SPARK_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.submitted.name = org.apache.hadoop.yarn.client.api.impl.YarnClientImpl
logger.submitted.level = info
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""


def hadoop_xml(props: dict[str, str]) -> str:
    lines = [
        '<?xml version="1.0"?>',
        "<!-- written by cobell (local YARN); rewritten at each start -->",
        "<configuration>",
    ]
    for name, value in props.items():
        lines.append(
            f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>"
        )
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def log4j_properties(log_file: Path) -> str:
    """Hadoop's own logging (reload4j), into one file."""
    return (
        "log4j.rootLogger=INFO,F\n"
        "log4j.appender.F=org.apache.log4j.FileAppender\n"
        f"log4j.appender.F.File={log_file}\n"
        "log4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n\n"
    )


def check_shape(shape: YarnShape) -> None:
    """A UsageError for a shape the cluster cannot have, before anything starts."""
    if shape.node_managers < 1:
        raise UsageError(f"node-managers must be >= 1, got {shape.node_managers}")
    if shape.labeled_node_managers < 0:
        raise UsageError(
            f"labeled-node-managers must be >= 0, got {shape.labeled_node_managers}"
        )
    label = shape.node_label
    if not label or not all(c.isalnum() or c in "_-" for c in label) or not label[0].isalnum():
        raise UsageError(
            f"{label!r} is not a YARN node label",
            hint="use letters, digits, '-' and '_', starting with a letter or digit",
        )
    if shape.memory_mb_per_node < 1024:
        raise UsageError(f"memory per node must be >= 1024 MB, got {shape.memory_mb_per_node}")


def describe_shape(shape: YarnShape) -> str:
    return (
        f"{count(shape.node_managers, 'NodeManager')} in the default partition and "
        f"{shape.labeled_node_managers} labelled {shape.node_label}, "
        f"{shape.memory_mb_per_node} MB and {shape.vcores_per_node} vcores each"
    )
