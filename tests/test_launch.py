"""Scale-out injection per launcher, redaction, and app ids from real launcher log lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.errors import EXIT_USAGE, UsageError
from cobell_cli.run.launch import detect_launcher, inject, is_secret_key, parse_app_id, redact


def options(argv: list[str], app_file: str) -> list[str]:
    """The launcher's own options: everything before the application file."""
    return argv[: argv.index(app_file)]


def conf_values(argv: list[str], key: str) -> list[str]:
    out = []
    for i, tok in enumerate(argv):
        if tok in {"--conf", "-c"} and argv[i + 1].startswith(key + "="):
            out.append(argv[i + 1].split("=", 1)[1])
        elif tok.startswith(f"--conf={key}="):
            out.append(tok.split("=", 2)[2])
    return out


# --- detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "launcher"),
    [
        (["spark-submit", "--master", "yarn", "app.py"], "spark-yarn"),
        (["spark-submit", "--master=yarn", "app.py"], "spark-yarn"),
        (["/opt/spark/bin/spark-submit", "--master", "YARN", "app.py"], "spark-yarn"),
        (["spark-submit", "--master", "yarn-cluster", "app.py"], "spark-yarn"),
        (["spark-submit", "--conf", "spark.master=yarn", "app.py"], "spark-yarn"),
        (["env", "HADOOP_CONF_DIR=/h", "spark-submit", "--master", "yarn", "a.py"], "spark-yarn"),
        (["spark-submit", "--master", "spark://h:7077", "app.py"], "spark-standalone"),
        (["spark-submit", "--master=spark://h1:7077,h2:7077", "app.py"], "spark-standalone"),
        (["spark-submit", "--master", "local[4]", "app.py"], "placeholder"),
        (["spark-submit", "app.py", "--master", "yarn"], "placeholder"),  # an app argument
        (["flink", "run", "job.jar"], "flink"),
        (["/opt/flink/bin/flink", "run", "-p", "2", "job.jar"], "flink"),
        (["python", "train.py", "--workers", "{scale_out}"], "placeholder"),
    ],
)
def test_detect_launcher(argv: list[str], launcher: str) -> None:
    assert detect_launcher(argv) == launcher


# --- spark-submit on YARN ------------------------------------------------------------------

YARN = ["spark-submit", "--master", "yarn", "--deploy-mode", "cluster"]


def test_yarn_adds_executors_dynamic_allocation_and_tags_before_the_app() -> None:
    inj = inject([*YARN, "app.py", "in", "out"], 6, "nightly-sgd")
    assert inj.launcher == "spark-yarn"
    assert inj.warnings == []
    assert inj.argv[:5] == YARN
    assert inj.argv[-3:] == ["app.py", "in", "out"]
    opts = options(inj.argv, "app.py")
    assert opts[opts.index("--num-executors") + 1] == "6"
    assert conf_values(inj.argv, "spark.dynamicAllocation.enabled") == ["false"]
    assert conf_values(inj.argv, "spark.yarn.tags") == ["cobell,cobell-job:nightly-sgd"]


@pytest.mark.parametrize(
    ("given_flag", "replaced"),
    [
        (["--num-executors", "4"], ["--num-executors", "6"]),
        (["--num-executors=4"], ["--num-executors=6"]),
    ],
)
def test_yarn_user_num_executors_is_replaced_in_place_with_a_warning(
    given_flag: list[str], replaced: list[str]
) -> None:
    inj = inject([*YARN, *given_flag, "app.py"], 6, "j")
    opts = options(inj.argv, "app.py")
    assert opts[5 : 5 + len(replaced)] == replaced
    assert sum(t.startswith("--num-executors") for t in opts) == 1
    assert len(inj.warnings) == 1 and "--num-executors" in inj.warnings[0]
    assert "4" in inj.warnings[0] and "6" in inj.warnings[0]


def test_yarn_same_value_or_placeholder_is_no_warning() -> None:
    inj = inject([*YARN, "--num-executors", "{scale_out}", "app.py"], 3, "j")
    assert inj.warnings == []
    assert options(inj.argv, "app.py").count("--num-executors") == 1
    assert "3" in inj.argv


def test_yarn_app_arguments_are_never_touched() -> None:
    app_args = ["--num-executors", "9", "--conf", "spark.yarn.tags=x", "--master", "local"]
    inj = inject([*YARN, "app.py", *app_args], 6, "j")
    assert inj.argv[inj.argv.index("app.py") + 1 :] == app_args
    assert inj.warnings == []


def test_yarn_executor_instances_conf_is_replaced_too() -> None:
    inj = inject([*YARN, "--conf", "spark.executor.instances=2", "app.py"], 5, "j")
    assert conf_values(inj.argv, "spark.executor.instances") == ["5"]
    assert any("spark.executor.instances=2" in w for w in inj.warnings)


@pytest.mark.parametrize("value", ["true", "false"])
def test_yarn_user_dynamic_allocation_is_respected(value: str) -> None:
    inj = inject([*YARN, "--conf", f"spark.dynamicAllocation.enabled={value}", "app.py"], 4, "j")
    assert conf_values(inj.argv, "spark.dynamicAllocation.enabled") == [value]
    assert bool(inj.warnings) == (value == "true")


@pytest.mark.parametrize(
    "tags_flag",
    [
        ["--conf", "spark.yarn.tags=team-a,cobell"],
        ["-c", "spark.yarn.tags=team-a,cobell"],
        ["--conf=spark.yarn.tags=team-a,cobell"],
    ],
)
def test_yarn_tags_are_merged_not_duplicated(tags_flag: list[str]) -> None:
    inj = inject([*YARN, *tags_flag, "app.py"], 4, "sgd")
    joined = " ".join(options(inj.argv, "app.py"))
    assert joined.count("spark.yarn.tags=") == 1
    assert "spark.yarn.tags=team-a,cobell,cobell-job:sgd" in joined
    assert inj.warnings == []


def test_yarn_rerun_of_an_injected_command_is_stable() -> None:
    once = inject([*YARN, "app.py"], 4, "sgd").argv
    twice = inject(once, 4, "sgd")
    assert twice.argv == once
    assert twice.warnings == []


@given(
    scale_out=st.integers(1, 500),
    user=st.one_of(st.none(), st.integers(1, 500)),
    form=st.sampled_from(["sep", "eq", "conf"]),
)
def test_yarn_exactly_one_executor_count_equal_to_the_plan(
    scale_out: int, user: int | None, form: str
) -> None:
    flag: list[str] = []
    if user is not None:
        flag = {
            "sep": ["--num-executors", str(user)],
            "eq": [f"--num-executors={user}"],
            "conf": ["--conf", f"spark.executor.instances={user}"],
        }[form]
    inj = inject([*YARN, *flag, "app.py", "--num-executors", "77"], scale_out, "j")
    opts = options(inj.argv, "app.py")
    counts = [opts[i + 1] for i, t in enumerate(opts) if t == "--num-executors"]
    counts += [t.split("=", 1)[1] for t in opts if t.startswith("--num-executors=")]
    counts += conf_values([*opts, "x"], "spark.executor.instances")
    assert counts and set(counts) == {str(scale_out)}
    assert opts.count("--num-executors") + sum(t.startswith("--num-executors=") for t in opts) == 1
    assert bool(inj.warnings) == (user is not None and user != scale_out)


# --- spark-submit on a standalone master ----------------------------------------------------

SA = ["spark-submit", "--master", "spark://127.0.0.1:7077"]


def flag_value(argv: list[str], flag: str) -> str | None:
    for i, tok in enumerate(argv):
        if tok == flag:
            return argv[i + 1]
        if tok.startswith(flag + "="):
            return tok.split("=", 1)[1]
    return None


def test_standalone_fixed_executors_of_one_core_and_a_cobell_name() -> None:
    inj = inject([*SA, "job.py", "--tasks", "8"], 5, "etl")
    assert inj.launcher == "spark-standalone"
    opts = options(inj.argv, "job.py")
    assert flag_value(opts, "--executor-cores") == "1"
    assert flag_value(opts, "--total-executor-cores") == "5"
    assert flag_value(opts, "--name") == "cobell:etl"
    assert inj.argv[-3:] == ["job.py", "--tasks", "8"]
    assert "--num-executors" not in inj.argv and inj.warnings == []


@pytest.mark.parametrize("cores_flag", [["--executor-cores", "2"], ["--executor-cores=2"],
                                        ["--conf", "spark.executor.cores=2"]])  # fmt: skip
def test_standalone_uses_the_users_executor_cores(cores_flag: list[str]) -> None:
    inj = inject([*SA, *cores_flag, "job.py"], 3, "etl")
    opts = options(inj.argv, "job.py")
    assert flag_value(opts, "--total-executor-cores") == "6"
    assert inj.warnings == []
    given = [t for t in opts if t.split("=")[0] in {"--executor-cores", "spark.executor.cores"}]
    assert len(given) == 1


def test_standalone_cores_per_executor_overrides_the_user_with_a_warning() -> None:
    inj = inject([*SA, "--executor-cores=4", "job.py"], 3, "etl", cores_per_executor=2)
    opts = options(inj.argv, "job.py")
    assert "--executor-cores=2" in opts and flag_value(opts, "--total-executor-cores") == "6"
    assert len(inj.warnings) == 1 and "--executor-cores=4" in inj.warnings[0]


@pytest.mark.parametrize(
    ("flag", "key"),
    [
        (["--total-executor-cores", "16"], "--total-executor-cores"),
        (["--total-executor-cores=16"], "--total-executor-cores"),
        (["--conf", "spark.cores.max=16"], "spark.cores.max"),
    ],
)
def test_standalone_user_total_cores_replaced(flag: list[str], key: str) -> None:
    inj = inject([*SA, *flag, "job.py"], 3, "etl")
    joined = " ".join(options(inj.argv, "job.py"))
    assert "16" not in joined
    assert any(key in w and "16" in w for w in inj.warnings)


@pytest.mark.parametrize("name_flag", [["--name", "mine"], ["--name=mine"],
                                       ["--conf", "spark.app.name=mine"]])  # fmt: skip
def test_standalone_keeps_a_user_name(name_flag: list[str]) -> None:
    inj = inject([*SA, *name_flag, "job.py"], 2, "etl")
    assert "cobell:etl" not in inj.argv
    assert " ".join(name_flag) in " ".join(inj.argv)


def test_standalone_bad_cores_is_usage_error() -> None:
    with pytest.raises(UsageError):
        inject([*SA, "--executor-cores", "two", "job.py"], 2, "etl")


# --- flink --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_flag", "expected"),
    [
        ([], ["-p", "6"]),
        (["-p", "2"], ["-p", "6"]),
        (["-p2"], ["-p6"]),
        (["--parallelism", "2"], ["--parallelism", "6"]),
        (["--parallelism=2"], ["--parallelism=6"]),
    ],
)
def test_flink_parallelism(given_flag: list[str], expected: list[str]) -> None:
    inj = inject(["flink", "run", "-d", *given_flag, "job.jar", "-p", "3"], 6, "wc")
    assert inj.launcher == "flink"
    opts = options(inj.argv, "job.jar")
    assert opts[:3] == ["flink", "run", "-d"]
    assert opts[3:] == expected
    assert inj.argv[-2:] == ["-p", "3"]  # the program's own argument
    assert bool(inj.warnings) == bool(given_flag)


def test_flink_default_parallelism_property_is_replaced() -> None:
    inj = inject(["flink", "run", "-Dparallelism.default=2", "job.jar"], 4, "wc")
    assert "-Dparallelism.default=4" in inj.argv
    assert inj.warnings


def test_flink_on_yarn_gets_tags_merged() -> None:
    inj = inject(["flink", "run", "-t", "yarn-per-job", "-Dyarn.tags=t1", "job.jar"], 4, "wc")
    assert "-Dyarn.tags=t1,cobell,cobell-job:wc" in inj.argv
    plain = inject(["flink", "run", "-t", "remote", "job.jar"], 4, "wc")
    assert not any("yarn.tags" in t for t in plain.argv)
    app_mode = inject(["flink", "run-application", "-t", "yarn-application", "j.jar"], 4, "wc")
    assert "-Dyarn.tags=cobell,cobell-job:wc" in app_mode.argv


def test_flink_action_that_runs_nothing_is_usage_error() -> None:
    with pytest.raises(UsageError, match="flink list"):
        inject(["flink", "list"], 4, "wc")


# --- placeholders and everything else -------------------------------------------------------


def test_placeholder_replaced_everywhere() -> None:
    inj = inject(["mpirun", "-n", "{scale_out}", "prog", "--out=run-{scale_out}"], 12, "sim")
    assert inj.argv == ["mpirun", "-n", "12", "prog", "--out=run-12"]
    assert inj.launcher == "placeholder"


def test_spark_local_master_with_placeholder() -> None:
    inj = inject(["spark-submit", "--master", "local[{scale_out}]", "a.py"], 3, "j")
    assert inj.argv == ["spark-submit", "--master", "local[3]", "a.py"]


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "train.py"],
        ["spark-submit", "--master", "local[2]", "a.py"],
        ["spark-submit", "a.py"],
    ],
)
def test_no_way_to_set_the_scale_out_is_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError) as info:
        inject(argv, 3, "j")
    assert info.value.exit_code == EXIT_USAGE == 2
    assert "{scale_out}" in info.value.line()


@pytest.mark.parametrize(("scale_out", "job"), [(0, "j"), (3, "a,b"), (3, "two words"), (3, "")])
def test_bad_scale_out_or_job_is_usage_error(scale_out: int, job: str) -> None:
    with pytest.raises(UsageError):
        inject([*YARN, "app.py"], scale_out, job)


def test_input_is_not_mutated() -> None:
    argv = [*YARN, "--num-executors", "2", "app.py"]
    copy = list(argv)
    inject(argv, 5, "j")
    assert argv == copy


# --- redaction ------------------------------------------------------------------------------


# "given ==> stored", split on spaces; "=" secrets vanish, everything else stays as it was
REDACTIONS = [
    "--conf spark.hadoop.fs.s3a.access.key=AKIA1 ==> --conf spark.hadoop.fs.s3a.access.key=***",
    "--conf spark.hadoop.fs.s3a.secret.key=s3 ==> --conf spark.hadoop.fs.s3a.secret.key=***",
    "--conf=spark.ssl.keyStorePassword=pw ==> --conf=spark.ssl.keyStorePassword=***",
    "-c spark.authenticate.secret=x ==> -c spark.authenticate.secret=***",
    "--conf spark.kubernetes.authenticate.oauthToken=t"
    " ==> --conf spark.kubernetes.authenticate.oauthToken=***",
    "--conf spark.hadoop.fs.azure.account.key.acct.blob.core.windows.net=k"
    " ==> --conf spark.hadoop.fs.azure.account.key.acct.blob.core.windows.net=***",
    "-Dsecurity.ssl.internal.keystore-password=pw"
    " ==> -Dsecurity.ssl.internal.keystore-password=***",
    "-D my.API_KEY=k ==> -D my.API_KEY=***",
    "spark.jdbc.Credentials=c ==> spark.jdbc.Credentials=***",
    "--db-password hunter2 x ==> --db-password *** x",
    "--api-key=abc ==> --api-key=***",
    "--conf spark.executor.cores=2 ==> --conf spark.executor.cores=2",
    "--conf spark.ssl.keyStore=/etc/ks.jks ==> --conf spark.ssl.keyStore=/etc/ks.jks",
    "--keytab /etc/u.keytab ==> --keytab /etc/u.keytab",
    "--conf spark.yarn.tags=cobell,cobell-job:monkey"
    " ==> --conf spark.yarn.tags=cobell,cobell-job:monkey",
    "--conf spark.sql.shuffle.partitions=8 ==> --conf spark.sql.shuffle.partitions=8",
    "app.py --input hdfs:///key/in ==> app.py --input hdfs:///key/in",
]


@pytest.mark.parametrize("case", REDACTIONS)
def test_redact(case: str) -> None:
    given, expected = case.split(" ==> ")
    assert redact(given.split()) == expected.split()


def test_redact_keeps_length_and_does_not_mutate() -> None:
    argv = [*YARN, "--conf", "spark.hadoop.fs.s3a.secret.key=abc", "app.py", "--token", "t"]
    copy = list(argv)
    out = redact(argv)
    assert argv == copy
    assert len(out) == len(argv)
    assert "abc" not in " ".join(out) and "t" not in out


@pytest.mark.parametrize(
    ("key", "secret"),
    [("fs.s3a.access.key", True), ("keystore.password", True), ("spark.executor.cores", False),
     ("spark.yarn.keytab", False), ("spark.ssl.keyStore", False), ("monkey", False),
     ("api_key", True), ("accessKey", True), ("spark.io.encryption.keySizeBits", False)],
)  # fmt: skip
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


# --- app ids from real launcher output ------------------------------------------------------

# Standalone lines as printed by spark-submit 4.3 against `cobell local-cluster` (captured).
# YARN lines follow the logInfo formats of Spark's yarn/Client.scala, Hadoop's YarnClientImpl
# and YarnClientSchedulerBackend, with Spark's default log4j2 layout.
APP_ID_LINES = [
    ("26/11/21 05:09:15 INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID "
     "app-20261121050915-0001", "app-20261121050915-0001"),
    ("26/11/21 05:09:15 INFO StandaloneAppClient$ClientEndpoint: Executor added: "
     "app-20261121050915-0001/0 on worker-20261121050805-127.0.0.1-37609 (127.0.0.1:37609) "
     "with 1 core(s)", "app-20261121050915-0001"),
    ("24/03/05 10:15:42 INFO Client: Submitting application application_1476912658570_0002 to "
     "ResourceManager", "application_1476912658570_0002"),
    ("24/03/05 10:15:42 INFO YarnClientImpl: Submitted application "
     "application_1476912658570_0002", "application_1476912658570_0002"),
    ("24/03/05 10:15:43 INFO Client: Application report for application_1476912658570_0002 "
     "(state: ACCEPTED)", "application_1476912658570_0002"),
    ("\t tracking URL: http://rm.example.com:8088/proxy/application_1476912658570_0002/",
     "application_1476912658570_0002"),
    ("24/03/05 10:15:50 INFO YarnClientSchedulerBackend: Application "
     "application_1476912658570_12345 has started running.", "application_1476912658570_12345"),
    ('{"ts":"2024-03-05T10:15:42.000Z","level":"INFO","msg":"Submitted application '
     'application_1476912658570_0002","logger":"YarnClientImpl"}',
     "application_1476912658570_0002"),
    ("26/11/21 05:09:15 INFO ClientEndpoint: Driver successfully submitted as "
     "driver-20261121050915-0000", None),
    ("24/03/05 10:15:45 INFO ApplicationMaster: appattempt_1476912658570_0002_000001 "
     "container_1476912658570_0002_01_000001", None),
    ("26/11/21 05:09:13 INFO SparkContext: Running Spark version 4.3.0", None),
]  # fmt: skip


@pytest.mark.parametrize(("line", "app_id"), APP_ID_LINES)
def test_parse_app_id(line: str, app_id: str | None) -> None:
    assert parse_app_id(line) == app_id


def test_parse_app_id_first_match_in_a_line_wins() -> None:
    line = "moved application_1_0001 after app-20261121050915-0001"
    assert parse_app_id(line) == "application_1_0001"
