"""The jars the local YARN runs from, fetched once from Maven Central into cobell's cache.

A real ResourceManager and NodeManagers come from `hadoop-client-minicluster` (plus Bouncy
Castle and Hadoop's logging backend; `yarn_launcher/pom.xml` lists them). Its Hadoop version
is the one of the Hadoop client inside the installed pyspark wheel
(`pyspark/jars/hadoop-client-api-<version>.jar`), so spark-submit and the cluster speak the same
Hadoop. Maven resolves them (`mvn dependency:copy-dependencies`, its own ~/.m2 cache included)
into `$XDG_CACHE_HOME/cobell/yarn-<version>/jars` (or `$COBELL_YARN_JARS`); a `complete`
marker written last makes a half-finished copy count as missing, so the fetch is idempotent
and costs nothing once done. `.ci/setup` runs it (`python -m cobell_cli.run.yarn_jars`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from cobell_cli.errors import CobellError

POM = Path(__file__).with_name("yarn_launcher") / "pom.xml"
FALLBACK_HADOOP_VERSION = "3.5.0"  # pyspark 4.3's; used only where no wheel says otherwise
MARKER = "complete"
_CLIENT_JAR = re.compile(r"^hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")


def hadoop_version(spark_home: Path | None) -> str:
    """The Hadoop client version inside the pyspark wheel (module doc)."""
    if spark_home is not None:
        for jar in sorted((spark_home / "jars").glob("hadoop-client-api-*.jar")):
            match = _CLIENT_JAR.match(jar.name)
            if match:
                return match.group(1)
    return FALLBACK_HADOOP_VERSION


def jar_dir(version: str, env: Mapping[str, str] | None = None) -> Path:
    """Where the jars of this Hadoop version live (module doc)."""
    env = os.environ if env is None else env
    if env.get("COBELL_YARN_JARS"):
        return Path(env["COBELL_YARN_JARS"]).expanduser()
    from cobell_cli.config import cache_dir

    return cache_dir(env) / f"yarn-{version}" / "jars"


def is_complete(directory: Path) -> bool:
    return (directory / MARKER).is_file()


def fetch(version: str, directory: Path, *, quiet: bool = False) -> Path:
    """Copy the jars into `directory` with Maven; a CobellError that says what is missing."""
    if is_complete(directory):
        return directory
    mvn = shutil.which("mvn")
    if mvn is None:
        raise CobellError(
            "Maven (mvn) was not found: it fetches the Hadoop YARN jars (once, ~110 MB)",
            hint="install it with `sudo apt-get install maven`, or put the jars of "
            f"hadoop-client-minicluster {version} into {directory} and create "
            f"{directory / MARKER}",
        )
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise CobellError(
            "Java was not found (Maven and YARN need Java 17 or newer)",
            hint="install it with `sudo apt-get install openjdk-17-jre-headless`, or set JAVA_HOME",
        )
    staging = directory.with_name(directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    argv = [
        mvn, "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
        f"-Dhadoop.version={version}", f"-DoutputDirectory={staging}",
    ]  # fmt: skip
    if not quiet:
        print(
            f"cobell: fetching the Hadoop {version} YARN jars with Maven (once) into {directory}",
            file=sys.stderr,
        )
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        last = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()][-3:]
        raise CobellError(
            f"Maven could not fetch hadoop-client-minicluster {version}: "
            + (" / ".join(last) or f"exit {done.returncode}"),
            hint="check that Maven Central is reachable (mvn -B dependency:get "
            f"-Dartifact=org.apache.hadoop:hadoop-client-minicluster:{version})",
        )
    (staging / MARKER).write_text(f"hadoop {version}\n")
    shutil.rmtree(directory, ignore_errors=True)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(directory)
    return directory


def main() -> int:
    """`python -m cobell_cli.run.yarn_jars`: fetch the jars for the installed pyspark."""
    from cobell_cli.run.local_cluster import find_spark_home

    try:
        version = hadoop_version(find_spark_home())
        directory = fetch(version, jar_dir(version))
    except CobellError as exc:
        print(f"cobell: {exc.line()}", file=sys.stderr)
        return 1
    print(f"yarn jars: hadoop {version} in {directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
