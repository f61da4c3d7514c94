"""Secrets never stored, exported, listed or logged (issue 15, item 16)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cobell_cli.redact import redact, scrub
from tests.cli_support import cobell

SECRETS = ("hunter2", "hunter3", "s3cr3t", "p4ss", "tr0ub4dor", "t0k3n")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["--db-pass=hunter2"], ["--db-pass=***"]),
        (["--db-password", "hunter3"], ["--db-password", "***"]),
        (["--api-token", "t0k3n", "--n", "4"], ["--api-token", "***", "--n", "4"]),
        (["--aws-secret-key=s3cr3t"], ["--aws-secret-key=***"]),
        (["--credentials-file", "x"], ["--credentials-file", "***"]),
        (
            ["jdbc:postgresql://db/app?user=etl&password=p4ss&ssl=true"],
            ["jdbc:postgresql://db/app?user=etl&password=***&ssl=true"],
        ),
        (
            ["jdbc:sqlserver://db;user=etl;password=p4ss;database=x"],
            ["jdbc:sqlserver://db;user=etl;password=***;database=x"],
        ),
        (["s3a://AKIA:tr0ub4dor@bucket/in"], ["s3a://AKIA:***@bucket/in"]),
        (
            ["--conf", "spark.driver.extraJavaOptions=-Dssl.password=p4ss -Dlog.level=INFO"],
            ["--conf", "spark.driver.extraJavaOptions=-Dssl.password=*** -Dlog.level=INFO"],
        ),
        (
            ["--conf=spark.executor.extraJavaOptions=-Ddb.secret=s3cr3t"],
            ["--conf=spark.executor.extraJavaOptions=-Ddb.secret=***"],
        ),
    ],
)
def test_secrets_in_arguments_are_redacted(given, expected) -> None:
    assert redact(given) == expected


def test_redaction_is_linear_in_a_long_argument() -> None:
    """A 2 MB run of letters (a base64 blob, say) once took minutes: the URL pattern re-scanned
    it from every position. Linear now: far below a second; the bound only catches a hang."""
    import time

    blob = "x" * 2_000_000
    started = time.perf_counter()
    out = redact([blob, blob + "s3a://AKIA:s3cr3t@bucket"])
    assert out == [blob, blob + "s3a://AKIA:***@bucket"]
    assert time.perf_counter() - started < 10.0


def test_ordinary_arguments_and_scale_out_flags_are_kept() -> None:
    argv = [
        "spark-submit",
        "--master",
        "yarn",
        "--num-executors",
        "8",
        "--executor-cores",
        "2",
        "--keytab",
        "/etc/u.keytab",
        "--conf",
        "spark.ssl.keyStore=/etc/ks.jks",
        "http://host:8080/path",
        "app.py",
        "--passes",
        "3",
        "in.csv",
    ]
    kept = redact(argv)
    assert kept[:12] == argv[:12]
    assert kept[-3:] == ["--passes", "***", "in.csv"]  # "contains pass": the rule of record


def test_scrub_leaves_text_without_secrets_alone() -> None:
    line = "INFO Client: Submitted application application_1_0001 to http://rm:8088/"
    assert scrub(line) == line


def test_a_submitted_command_is_stored_listed_exported_and_logged_without_secrets(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "h.db", tmp_path / "job.log"
    job = tmp_path / "job.py"
    job.write_text("import sys; print('connecting to', sys.argv[1]); print(sys.argv[2])\n")
    result = cobell(
        "--db",
        db,
        "submit",
        "--job",
        "etl",
        "--target-runtime",
        "60",
        "--cluster",
        "none",
        "--min-scale-out",
        "1",
        "--max-scale-out",
        "1",
        "--log-file",
        log,
        "--",
        sys.executable,
        job,
        "jdbc:mysql://db/x?user=u&password=hunter2",
        "-Dtrust.password=hunter3",
        "--parallelism",
        "{scale_out}",
        "--db-pass=s3cr3t",
        "--db-password",
        "p4ss",
    )
    assert result.exit_code == 0, result.stderr
    # The job's own output reaches the terminal unchanged (it is the user's program talking);
    # everything cobell writes, and the log file it keeps, is redacted.
    assert "hunter2" in result.stdout
    outputs = [
        result.stderr,
        log.read_text(),
        cobell("--db", db, "history", "list", "--format", "json").stdout,
        cobell("--db", db, "history", "show", "1").stdout,
        cobell("--db", db, "history", "export", "--format", "csv").stdout,
        cobell("--db", db, "history", "export", "--format", "json").stdout,
    ]
    for text in outputs:
        assert not [s for s in SECRETS if s in text], text
    assert "password=***" in log.read_text()


def test_an_imported_command_is_stored_without_secrets(tmp_path: Path) -> None:
    db, source = tmp_path / "h.db", tmp_path / "runs.json"
    command = ["spark-submit", "--db-password", "hunter2", "s3a://k:s3cr3t@b/x"]
    source.write_text(
        json.dumps(
            {
                "runs": [
                    {"job": "a", "status": "running", "command": json.dumps(command)},
                    {"job": "b", "status": "running", "command": command},
                ]
            }
        )
    )
    assert cobell("--db", db, "history", "import", source).exit_code == 0
    exported = cobell("--db", db, "history", "export", "--format", "json").stdout
    assert "hunter2" not in exported and "s3cr3t" not in exported
    assert exported.count("***") == 4
