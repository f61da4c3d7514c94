"""cobell's Python API: what the CLI does, as functions. `from cobell_cli import api`.

The CLI is a thin layer over it (parse the options, call the API, render), so a script gets
the same checks, messages and exit-code exceptions (`cobell_cli.errors`) as a command:

- planning.py: `predict` the next run of a job against its history and the cluster now;
- runs.py: the history of runs: open, list, show, remove, export, import (a CSV/JSON file,
  YARN's finished apps, a Spark History Server, Spark event logs);
- models.py: a job's runtime model: its input, fit, description, cross-validated errors, and
  the what-if of one event log;
- clusters.py: the cluster now: which RM/master answers, and the apps running on it;
- settings.py: every setting, resolved as the CLI resolves it, and where each came from;
- local_clusters.py: throw-away Spark standalone and YARN clusters on this machine;
- submit.py: `Submit`, a job run through cobell (plan, launch, wait, record) with callbacks
  for each step: what `cobell submit` does, for scripts and orchestrators.

Everything below the API (store, sources, cluster, run, the pure core) is an implementation
detail that may move; these names stay. Importing the API is cheap: heavy modules load inside
the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cobell_cli.api.clusters import check_cluster, connect_cluster, running_apps
from cobell_cli.api.memory import MemoryAsk, memory_model, memory_request, nearest_memory_job
from cobell_cli.api.planning import (
    CLUSTER_PROFILES,
    JOB_PROFILES,
    Prediction,
    check_minimize,
    check_minimized,
    check_options_act,
    check_request,
    job_profiles,
    live_progress,
    model_cache,
    predict,
    running_co_runners,
    warm_model_cache,
)
from cobell_cli.api.runs import (
    CheckedFile,
    check_file,
    check_statuses,
    count_duplicates,
    export_runs,
    get_run,
    history_jobs,
    import_checked,
    import_file,
    import_from_event_logs,
    import_from_spark_history,
    import_from_yarn,
    list_jobs,
    list_runs,
    open_history,
    remove_runs,
    run_columns,
    run_command,
    run_records,
    run_statuses,
    runs_csv,
    set_excluded,
    storable,
)
from cobell_cli.api.settings import load_settings, settings_rows
from cobell_cli.core.job_name import check_job_name
from cobell_cli.core.words import count, duration_text

# Loaded on first use: the deadline scheduler (core/schedule) costs ~80 ms to import, and only
# a --deadline needs it; predict, submit and the history commands import this package. The
# types a script annotates with (History, Settings, StartDecision) and the P(meet) text of the
# plan's reasons load the same way, so importing the API stays cheap. API name -> its module,
# or "module:name" where the API gives it under another name than its module's.
_LAZY = {
    **{name: "cobell_cli.api.deadlines"
       for name in ("DeadlineRequest", "check_deadline", "plan_for_deadline")},
    "History": "cobell_cli.store.history",
    "Settings": "cobell_cli.config",
    "StartDecision": "cobell_cli.core.schedule.decision",
    "probability_text": "cobell_cli.core.plan.reasons",
    "bound_text": "cobell_cli.core.plan.reasons",
    "policy_text": "cobell_cli.core.plan.reasons",
    "meet_probability_note": "cobell_cli.core.plan.meet_steps",
    **{name: "cobell_cli.api.local_clusters"
       for name in ("DEMO_JOB_ARGS", "LocalCluster", "LocalClusterStatus", "LocalYarn",
                    "LocalYarnStatus", "YarnShape", "example_path", "spark_submit_path")},
    **{name: "cobell_cli.api.submit"
       for name in ("Submit", "SubmitPlan", "SubmitResult", "Launched", "Progress")},
    **{name: "cobell_cli.api.models"
       for name in ("ModelInput", "cluster_profiles", "default_scale_outs", "describe_model",
                    "evaluate_model", "fit_model", "model_input", "whatif")},
    "measured_overlaps": "cobell_cli.core.colocation",
    "measure_input": "cobell_cli.api.command",
    "Outcome": "cobell_cli.run.submit",
    "Interrupted": "cobell_cli.interrupts",
    "resource_profile_text": "cobell_cli.api.profile_priors:profile_text",
    "memory_feature_value": "cobell_cli.core.memory.records:feature_value",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    from cobell_cli.api.command import measure_input
    from cobell_cli.api.deadlines import DeadlineRequest, check_deadline, plan_for_deadline
    from cobell_cli.api.local_clusters import (
        DEMO_JOB_ARGS,
        LocalCluster,
        LocalClusterStatus,
        LocalYarn,
        LocalYarnStatus,
        YarnShape,
        example_path,
        spark_submit_path,
    )
    from cobell_cli.api.models import (
        ModelInput,
        cluster_profiles,
        default_scale_outs,
        describe_model,
        evaluate_model,
        fit_model,
        model_input,
        whatif,
    )
    from cobell_cli.api.profile_priors import profile_text as resource_profile_text
    from cobell_cli.api.submit import Launched, Progress, Submit, SubmitPlan, SubmitResult
    from cobell_cli.config import Settings
    from cobell_cli.core.colocation import measured_overlaps
    from cobell_cli.core.memory.records import feature_value as memory_feature_value
    from cobell_cli.core.plan.meet_steps import meet_probability_note
    from cobell_cli.core.plan.reasons import bound_text, policy_text, probability_text
    from cobell_cli.core.schedule.decision import StartDecision
    from cobell_cli.interrupts import Interrupted
    from cobell_cli.run.submit import Outcome
    from cobell_cli.store.history import History

__all__ = [
    "CLUSTER_PROFILES",
    "DEMO_JOB_ARGS",
    "JOB_PROFILES",
    "CheckedFile",
    "DeadlineRequest",
    "History",
    "Interrupted",
    "Launched",
    "LocalCluster",
    "LocalClusterStatus",
    "LocalYarn",
    "LocalYarnStatus",
    "MemoryAsk",
    "ModelInput",
    "Outcome",
    "Prediction",
    "Progress",
    "Settings",
    "StartDecision",
    "Submit",
    "SubmitPlan",
    "SubmitResult",
    "YarnShape",
    "bound_text",
    "check_cluster",
    "check_deadline",
    "check_file",
    "check_job_name",
    "check_minimize",
    "check_minimized",
    "check_options_act",
    "check_request",
    "check_statuses",
    "cluster_profiles",
    "connect_cluster",
    "count",
    "count_duplicates",
    "default_scale_outs",
    "describe_model",
    "duration_text",
    "evaluate_model",
    "example_path",
    "export_runs",
    "fit_model",
    "get_run",
    "history_jobs",
    "import_checked",
    "import_file",
    "import_from_event_logs",
    "import_from_spark_history",
    "import_from_yarn",
    "job_profiles",
    "list_jobs",
    "list_runs",
    "live_progress",
    "load_settings",
    "measure_input",
    "measured_overlaps",
    "meet_probability_note",
    "memory_feature_value",
    "memory_model",
    "memory_request",
    "model_cache",
    "model_input",
    "nearest_memory_job",
    "open_history",
    "plan_for_deadline",
    "policy_text",
    "predict",
    "probability_text",
    "remove_runs",
    "resource_profile_text",
    "run_columns",
    "run_command",
    "run_records",
    "run_statuses",
    "running_apps",
    "running_co_runners",
    "runs_csv",
    "set_excluded",
    "settings_rows",
    "spark_submit_path",
    "storable",
    "warm_model_cache",
    "whatif",
]

