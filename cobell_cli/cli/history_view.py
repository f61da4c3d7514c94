"""How `cobell history list` and `history show` put runs on a screen (and `show --json`).

`history list` fits 80-120 columns by default with the columns a data engineer reads every
night; `--columns` picks others. A column is one entry in COLUMNS (its header is its name, its
cell a function of the run), so a capability that adds a run field adds its column in one
line; any other field of the run works in `--columns` as stored. Text shows times as local
ISO date-times (../shared/CONVENTIONS.md "Time"), durations to a tenth of a second; JSON and
CSV keep every value exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

Run = Mapping[str, Any]
CELL_MAX = 18  # in the default view a longer text cell is cut with "…" (JSON and CSV are exact)


def local_time(ts: float | None) -> str:
    """Epoch seconds as a local ISO date-time to the minute, for tables."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M")


def local_iso(ts: float | None) -> str:
    """Epoch seconds as a local ISO date-time with its offset, to the second."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _co_runner_jobs(run: Run) -> str:
    return ", ".join(f"{c.get('co_runner_job') or 'unknown'}:{c['overlap_ratio']:.2f}"
                     for c in run.get("colocations") or [])


def _field(name: str) -> Callable[[Run], Any]:
    return lambda run: run.get(name)


def excluded_by(run: Run) -> str | None:
    """Who kept the run out of fitting: "cobell" (an implausible runtime, its reason in
    `excluded_reason`), "hand" (`history exclude`), or None (it is used)."""
    if not run.get("excluded"):
        return None
    return "cobell" if run.get("excluded_reason") else "hand"


def _status(run: Run) -> str:
    """The status, marked when the run is kept out: `(excl.)` by hand, `(implausible)` by
    cobell."""
    mark = {"hand": " (excl.)", "cobell": " (implausible)"}.get(excluded_by(run) or "", "")
    return run.get("status", "") + mark


COLUMNS: dict[str, Callable[[Run], Any]] = {
    "id": _field("id"),
    "job": _field("job"),
    "status": _status,
    "excluded": lambda run: {"hand": "by hand", "cobell": "implausible"}.get(
        excluded_by(run) or "", ""),
    "scale_out": _field("scale_out"),
    "runtime_s": lambda run: seconds(run.get("runtime_s")),
    "target_s": lambda run: seconds(run.get("target_s")),
    "predicted_s": lambda run: seconds(run.get("predicted_s")),
    "submitted": lambda run: local_time(run.get("submitted_at") or run.get("started_at")),
    "co_runners": lambda run: len(run.get("colocations") or []),
    "co_runner_jobs": _co_runner_jobs,
    "app_id": _field("app_id"),
    "source": _field("source"),
}
DEFAULT_COLUMNS: tuple[str, ...] = (
    "id", "job", "status", "scale_out", "runtime_s", "target_s", "predicted_s", "submitted",
    "co_runners",
)


def check_columns(names: Sequence[str], fields: Sequence[str]) -> list[str]:
    """The columns `--columns` asked for (comma-separated, repeatable), each a known column
    or a stored field; a usage error names the unknown ones and what there is."""
    from cobell_cli.errors import UsageError

    wanted = [n.strip() for name in names for n in name.split(",") if n.strip()]
    known = [*COLUMNS, *(f for f in fields if f not in COLUMNS)]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise UsageError(f"--columns: no column {', '.join(map(repr, unknown))}",
                         hint=f"choose from {', '.join(known)}")
    return wanted


def _cell(value: Any, cut: bool) -> Any:
    if isinstance(value, float):
        return seconds(value)
    if cut and isinstance(value, str) and len(value) > CELL_MAX:
        return value[: CELL_MAX - 1] + "…"
    return value


def list_table(runs: Sequence[Run], columns: Sequence[str] = DEFAULT_COLUMNS) -> str:
    from cobell_cli.output import table

    cut = tuple(columns) == DEFAULT_COLUMNS  # what --columns asks for is shown whole
    rows = [{c: _cell(COLUMNS.get(c, _field(c))(run), cut and c != "status") for c in columns}
            for run in runs]
    return table(rows, list(columns))


def show_record(run: Run) -> dict[str, Any]:
    """A run as `history show --json` prints it: the stored fields, `command` as the list of
    arguments it is (not a JSON text inside JSON), times as epoch `_at` numbers."""
    from cobell_cli import api

    out = dict(run)
    if isinstance(out.get("command"), str):
        out["command"] = api.run_command(out)
    if "excluded" in out:
        out["excluded_by"] = excluded_by(run)
    return out


def show_lines(run: Run) -> list[str]:
    """A run for people: `field: value` lines (times local ISO, seconds to a tenth, the
    command as a shell line), then its co-runners."""
    import shlex

    from cobell_cli.output import printable, table

    fields = {k: v for k, v in show_record(run).items()
              if k not in ("colocations", "resource_profile")}
    width = max(len(k) for k in fields) + 1  # columns that later migrations added are longer
    lines = []
    for key, value in fields.items():
        if value is None:
            shown: Any = ""
        elif key.endswith("_at"):
            shown = local_iso(value)
        elif key == "command" and isinstance(value, list):
            shown = shlex.join(str(a) for a in value)
        elif key == "excluded":
            shown = _excluded_line(run)
        elif key == "excluded_by":
            continue  # the `excluded` line says it
        elif isinstance(value, float):
            shown = f"{value:.4g}" if abs(value) < 1 else f"{value:.1f}"
        else:
            shown = value
        lines.append(f"{key + ':':{width}} {printable(shown)}")
    if run.get("resource_profile"):
        from cobell_cli.api import resource_profile_text

        lines.append(f"{'resources:':{width}} {resource_profile_text(run['resource_profile'])}")
    memory = memory_summary(run)
    if memory:
        lines.append(f"\nmemory: {memory}")
    colocations = run.get("colocations") or []
    lines.append(f"\nco-runners ({len(colocations)}):")
    if colocations:
        rows = [{**c, "started": local_time(c.get("co_runner_started_at")),
                 "finished": local_time(c.get("co_runner_finished_at")),
                 "overlap_s": seconds(c.get("overlap_s")),
                 "overlap_ratio": f"{c['overlap_ratio']:.2f}"} for c in colocations]
        lines.append(table(rows, ["co_runner_app_id", "co_runner_job", "co_runner_scale_out",
                                  "started", "finished", "overlap_s", "overlap_ratio"]))
    return lines


def _excluded_line(run: Run) -> str:
    """Whether the run is kept out of fitting and planning, by whom, and how to undo it."""
    who = excluded_by(run)
    if who is None:
        return "no"
    why = "by cobell: its runtime is implausible (see excluded_reason)" if who == "cobell" \
        else "by hand"
    return (f"yes, {why}: kept out of fitting and planning (`cobell history include "
            f"{run.get('id')}` lets it back in)")


def memory_summary(run: Run) -> str | None:
    """Reserved against used per executor, in words (None when neither is known)."""
    reserved, peak = run.get("executor_memory_mb"), run.get("peak_memory_mb")
    if reserved is None and peak is None:
        return None
    parts = []
    if peak is not None:
        used = f"peak {peak:.0f} MB heap used per executor"
        parts.append(used + (f" of {reserved} MB reserved ({100 * peak / reserved:.0f} %)"
                             if reserved else ""))
    elif reserved is not None:
        parts.append(f"{reserved} MB reserved per executor, peak not measured")
    if run.get("executor_overhead_mb"):
        parts.append(f"+ {run['executor_overhead_mb']} MB overhead")
    if run.get("failure_reason") == "memory":
        parts.append("failed for memory: the reservation was too small")
    return ", ".join(parts)
