"""`cobell model`: show, evaluate and plot a job's runtime model, and the what-if of an event
log (a thin layer over cobell_cli/api/models.py; numpy and matplotlib load inside the
commands)."""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cobell_cli.cli.common import info, job_name, open_history, settings

if TYPE_CHECKING:
    from cobell_cli.api import ModelInput

app = typer.Typer(help="Show, evaluate and plot a job's runtime model.", no_args_is_help=True)

JOB_HELP = "Recurring job whose history the model is fitted to."


class Protocol(enum.StrEnum):
    nested = "nested"
    loso = "loso"
    extrap = "extrap"
    sparse3 = "sparse3"


def model_input(ctx: typer.Context, job: str) -> ModelInput:
    """The job's runs (the planning window's) and what-if, read with the history open only
    for the read; a UsageError says how to find a job that has runs."""
    from cobell_cli import api

    window = settings(ctx).history_window  # the runs planning uses, so the model it uses
    with open_history(ctx, create=False, read_only=True) as history:
        return api.model_input(history, job, window=window)


def show_rows(description: dict[str, Any]) -> list[dict[str, Any]]:
    """The description as (field, value) rows for people."""
    rows: list[dict[str, Any]] = [
        {"field": "runs used", "value": description["n_runs"]},
        *([{"field": "runs alone", "value": description["n_runs_alone"]}]
          if "n_runs_alone" in description else []),
        {"field": "scale-outs", "value": "{} distinct, {:g}..{:g}".format(
            description["n_scale_outs"], *description["scale_out_range"])},
    ]
    for role in ("interpolation", "extrapolation"):
        rows.append({"field": f"{role} model", "value": _curve_text(description[role])})
    step = handover_step(description.get("handover"))
    if step:
        rows.append({"field": f"handover at {description['handover']['scale_out']:g}",
                     "value": f"{step}: chosen separately, predict steps here"})
    cv = description["cv"]
    for role in ("interpolation", "extrapolation"):
        err = cv.get(f"{role}_mre")
        if err is not None:
            rows.append({"field": f"{role} CV error", "value": f"{100 * err:.1f} % (mean rel.)"})
    if "note" in cv:
        rows.append({"field": "note", "value": cv["note"]})
    if cv.get("rejected_scale_outs"):
        rows.append({"field": "runs set aside at",
                     "value": ", ".join(f"{x:g}" for x in cv["rejected_scale_outs"])
                     + " (implausible against the others: faster than linear speed-up or"
                       " slower than linear slow-down)"})
    if description["regime_scale_outs"]:
        rows.append({"field": "separate regime at",
                     "value": ", ".join(f"{x:g}" for x in description["regime_scale_outs"])})
    combination = description.get("combination")
    if combination and description["interference"]:
        rows.append({"field": "co-runners combine", "value": _combination_text(combination)})
    for job, pair in description["interference"].items():
        name = "any other job" if job == "*" else job
        rows.append({"field": f"co-runner {name}", "value": _pair_text(pair)})
    return rows


HANDOVER_STEP = 0.01  # a step under 1 % between the curves is not worth a line


def handover_step(handover: dict[str, float] | None) -> str | None:
    """"interpolation 66.7 s, extrapolation 56.1 s (alone)" where the two curves differ at
    the largest scale-out run by at least HANDOVER_STEP, else None."""
    if not handover:
        return None
    a, b = handover["interpolation_s"], handover["extrapolation_s"]
    if abs(b / a - 1) < HANDOVER_STEP:
        return None
    return f"interpolation {a:.3g} s, extrapolation {b:.3g} s (alone)"


def _combination_text(combination: dict[str, Any]) -> str:
    rule = {"additive": "added (paper)", "bottleneck": "largest effect only",
            "saturating": "saturating union"}.get(combination["rule"], combination["rule"])
    form = "a + b/x" if combination["scaled"] else "a (not shrinking with scale-out)"
    text = f"{rule}, effect {form}"
    if combination.get("sized"):
        text += ", in proportion to the co-runner's scale-out"
    if combination.get("cv_mean_abs_log_error"):
        text += " (chosen by CV)"
    pool = combination.get("pooling")
    if pool:
        text += (f"; pairs pooled toward a={pool['mean']['a']:.3g} b={pool['mean']['b']:.3g}"
                 f" (spread a±{pool['tau']['a']:.2g} b±{pool['tau']['b']:.2g})")
    return text


def _num(v: float) -> str:
    """Three significant digits; NNLS zeros (1e-30) print as 0."""
    return f"{v:.3g}" if abs(v) >= 5e-4 else "0"


def _pair_text(pair: dict[str, Any]) -> str:
    """The pair, what it rests on, and a caveat when its own runs say little."""
    from cobell_cli.api import count

    text = f"a={_num(pair['a'])} b={_num(pair['b'])} ({count(pair['runs'], 'run')}"
    if "overlap_s" in pair:
        text += f", {pair['overlap_s']:.0f} s overlapped"
    if "own_weight" in pair:
        text += f", {100 * pair['own_weight']:.0f} % own data"
    text += ")"
    if pair.get("thin"):
        raw = pair.get("unpooled") or {}
        text += (f" thin evidence: its own runs leave a + b/{pair['reference_scale_out']:.3g}"
                 f" uncertain by ±{pair['effect_sd_own']:.2g}"
                 + (f" (own fit alone: a={_num(raw['a'])} b={_num(raw['b'])})" if raw else ""))
    return text


def _curve_text(curve: dict[str, Any]) -> str:
    if curve["kind"] == "parametric":
        terms = {"const": "", "inv": "/x", "log": "·log x", "lin": "·x"}
        parts = [f"{v:.4g}{terms[k]}" for k, v in curve["theta"].items() if v > 0]
        return "f(x) = " + (" + ".join(parts) if parts else "0")
    if curve["kind"] == "power":
        return f"f(x) = {curve['c']:.4g}·x^{curve['exponent']:.3f}"
    if curve["kind"] == "what-if":
        return "the what-if replay of the job's event-log profile" + _correction_text(
            curve["c0"], curve["c1_log_scale_out"])
    if curve["kind"] == "levels":
        return "f(x) = the log-log line through the mean runtimes at " + ", ".join(
            f"{x:g}" for x in curve["scale_outs"])
    label = "local linear" if curve["kind"] == "llr" else "local power law from the edge"
    return f"{label}, bandwidth {curve['bandwidth_log_scale_out']:.3g} (log scale-out)"


def _correction_text(c0: float, c1: float) -> str:
    """The replay's correction by the job's runs, exp(c0 + c1·log x), without the terms that
    are zero: no `exp(2.22e-16 + 0·log x)` for an uncorrected replay."""
    import math

    if abs(c1) < 5e-4:
        factor = math.exp(c0)
        return "" if abs(factor - 1) < 5e-4 else f" x {factor:.3g}"
    return f" x {math.exp(c0):.3g}·x^{c1:.3g}"


@app.command("show")
def show(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", parser=job_name, help=JOB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the model description as JSON."),
) -> None:
    """The chosen model, its parameters, per co-runner interference, CV errors, runs used.

    Read from the model cache when planning (submit, predict) has fitted the same runs.

    Example: cobell model show --job sgd
    """
    from cobell_cli import api, output

    description = api.describe_model(model_input(ctx, job), settings(ctx))
    if as_json:
        typer.echo(output.to_json(description))
        return
    rows = [*show_rows(description), {"field": "memory function",
                                      "value": memory_text(description["memory"])}]
    if description.get("resource_profile"):
        rows.append({"field": "resources", "value": api.resource_profile_text(
            description["resource_profile"])})
    typer.echo(output.table(rows, ["field", "value"]))


def memory_text(memory: dict[str, Any] | None) -> str:
    """The memory function, what it rests on and how well it extrapolated."""
    from cobell_cli.api import count

    if memory is None:
        return ("none yet (no run with a measured executor memory peak: Spark runs of "
                "`cobell submit` record it from the event log)")
    if memory.get("input_free"):
        text = (f"{memory['function']}: {memory['formula']} MB per executor, from the peaks "
                f"of {count(memory['runs'], 'run')} without an input size")
    else:
        of = ("" if memory["function"] == "constant" else ", z = input "
              + ("per executor " if "per_executor" in memory["function"] else "") + "in MB")
        text = (f"{memory['function']}: {memory['formula']} MB{of} "
                f"({count(memory['runs'], 'run')}"
                + (f", chosen by {memory['chosen_by']}" if memory.get("chosen_by") else ""))
        if memory.get("runs_without_input"):
            text += f"; {memory['runs_without_input']} without an input size not used"
    if memory["failures"]:
        text += f", {memory['failures']} memory failures as lower bounds"
    chosen = memory["cv_rmsle"].get(memory["function"])
    if chosen is not None:
        text += f"; forward-CV error {100 * chosen:.0f} % (RMS log)"
    return text + ("" if memory.get("input_free") else ")") + bound_text(memory.get("bound"))


def bound_text(bound: dict[str, Any] | None) -> str:
    """The bound's factor at the default level and how far --memory-confidence reaches."""
    from cobell_cli.api import count

    if not bound:
        return ""
    text = (f"; bound {bound['factor']:.2f}x the prediction at P {bound['confidence']:g} "
            f"({count(bound['held_out_ratios'], 'held-out ratio')})")
    reach = bound["largest_confidence_that_acts"]
    return text + (f"; --memory-confidence acts up to P {reach:g} on these runs" if reach
                   else "; no --memory-confidence acts yet (too few runs to hold out)")


@app.command("eval")
def eval_cmd(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", parser=job_name, help=JOB_HELP),
    protocol: Protocol = typer.Option(
        Protocol.nested, "--protocol", "-p",
        help="nested: ten folds of runs, each model fitted (all its choices included) on the "
        "other nine: the error of what cobell uses next to the paper's fit and Bell; loso: "
        "leave each interior scale-out out; extrap: train on the smaller half of the "
        "scale-outs, test on the rest; sparse3: five draws of one run at 3 scale-outs."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the sparse3 draws."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Cross-validated errors of cobell's model next to the paper's fit, Bell (and Ernest) on
    the same splits, with the standard error of the mean MAPE over the splits.

    The noise_floor row is no model: each test run predicted by the mean of the job's other
    runs at the same scale-out, the error the run-to-run noise alone leaves (a model near it
    cannot do much better; a model far above it can).

    Example: cobell model eval --job sgd --protocol extrap
    """
    from cobell_cli import api, output

    rows = api.evaluate_model(model_input(ctx, job), protocol.value, seed=seed)
    if as_json:
        typer.echo(output.to_json({"job": job, "protocol": protocol.value, "rows": rows}))
        return
    typer.echo(output.table(rows, ["method", "splits", "mape_pct", "mape_se_pct",
                                   "median_mape_pct", "mae_s", "rmse_s"]))
    if any(r["method"] == "noise_floor" for r in rows):
        typer.echo("noise_floor: no model; each test run predicted by the mean of the other runs "
                   "at its scale-out (the run-to-run noise)")


@app.command("plot")
def plot(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", parser=job_name, help=JOB_HELP),
    out: str = typer.Option(
        ..., "--output", "-o", metavar="PATH",
        help="Image file to write (png, svg, pdf); an existing directory, or a path ending in "
        "/ (created), gets JOB.png inside it."),
    co_runner: str | None = typer.Option(
        None, "--co-runner", help="Co-runner for the curves (default: the most frequent one)."),
    memory: bool = typer.Option(
        False, "--memory",
        help="Plot the executor memory instead: each run's peak against its input per "
             "executor (or input), memory failures at the memory that failed, and the chosen "
             "memory function."),
) -> None:
    """Runs coloured by overlap ratio and the fitted curves at ov = 0, 0.5 and 1, as predict
    predicts them (needs the `plot` extra). Beyond the largest scale-out run (the dotted
    line) the extrapolation curve takes over, which may not continue the interpolation's.

    Example: cobell model plot --job sgd -o sgd.png   (or -o plots/ for plots/sgd.png)

    Example: cobell model plot --job etl --memory -o etl-memory.png
    """
    from cobell_cli.errors import CobellError

    path = plot_file(out, job)

    try:
        import matplotlib
    except ImportError:
        raise CobellError("plotting needs matplotlib",
                          hint="pip install 'cobell[plot]'") from None
    matplotlib.use("Agg")

    import matplotlib.pyplot as plt

    from cobell_cli import api

    data = model_input(ctx, job)
    if memory:
        _save(_memory_figure(data, plt), path, plt)
        return
    model = api.fit_model(data)  # as planning fits it: with the what-if, when there is one
    _save(runtime_figure(data, model, co_runner, plt), path, plt)


def runtime_figure(data: ModelInput, model: Any, co_runner: str | None, plt: Any) -> Any:
    """The runs, coloured by overlap, and the model's curves at ov = 0, 0.5, 1 with
    `co_runner` (default: the most frequent one): what `predict` predicts at each scale-out,
    a dotted line where the runs end and the extrapolation takes over; the legend below the
    axes, where it hides no curve."""
    import numpy as np

    from cobell_cli.api import count
    from cobell_cli.output import printable

    runs = data.runs
    if co_runner is None:
        counts: dict[str, int] = {}
        for run in runs:
            for name in run.get("overlaps") or {}:
                counts[name] = counts.get(name, 0) + 1
        co_runner = max(counts, key=counts.get) if counts else None
    x = np.array([r["scale_out"] for r in runs], float)
    y = np.array([r["runtime_s"] for r in runs], float)
    ov = np.array([sum((r.get("overlaps") or {}).values()) for r in runs], float)
    lo, hi = model.scale_out_range_
    grid = np.union1d(np.linspace(max(1.0, lo * 0.8), hi * 1.25, 200),
                      np.arange(max(1.0, np.ceil(lo * 0.8)), np.floor(hi * 1.25) + 1))
    fig, ax = plt.subplots(figsize=(7, 5))
    points = ax.scatter(x, y, c=ov, cmap="viridis", vmin=0, vmax=max(1.0, float(ov.max())),
                        s=18, edgecolors="none")
    fig.colorbar(points, ax=ax, label="overlap ratio (sum over co-runners)")
    label = printable(co_runner) if co_runner else "any other job"
    for ratio, style in ((0.0, "-"), (0.5, "--"), (1.0, ":")):
        overlaps = {co_runner: ratio} if ratio else None
        ax.plot(grid, model.predict(grid, overlaps), style, color="black",
                label=f"ov = {ratio:g}" + (f" ({label})" if ratio else ""))
    step = handover_step(model.describe().get("handover"))
    ax.axvline(hi, color="grey", linestyle=(0, (1, 3)), linewidth=1,
               label=f"largest scale-out run ({hi:g}): extrapolation beyond"
               + (f"\n{step}" if step else ""))
    ax.set_xlabel("scale-out")
    ax.set_ylabel("runtime (s)")
    ax.set_title(f"{printable(data.job)}: {count(model.n_runs_, 'run')}")  # \xNN escapes
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize="small",
              frameon=False)
    return fig


def _save(fig: Any, path: Path, plt: Any) -> None:
    import warnings

    from cobell_cli.errors import CobellError

    try:
        with warnings.catch_warnings():  # a name the font lacks a glyph for is drawn as a box
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
            fig.savefig(path)
    except (OSError, ValueError) as exc:
        raise CobellError(f"cannot write {path}: {exc}") from None
    finally:
        plt.close(fig)
    info(f"wrote {path}")


def _memory_figure(data: ModelInput, plt: Any) -> Any:
    """Peak memory per run against the chosen function's feature, with the function; for a
    job without input sizes, against the run's order."""
    from cobell_cli import api
    from cobell_cli.api import count
    from cobell_cli.errors import UsageError
    from cobell_cli.output import printable

    job, model, obs = data.job, data.memory, data.memory_observations
    if model is None:
        raise UsageError(f"job {job!r} has no run with a measured executor memory peak",
                         hint="runs of `cobell submit` on Spark record it from the event log")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if model.input_free_:
        _peaks_by_run(ax, model, obs)
    else:
        _peaks_by_input(ax, model, obs, api.memory_feature_value)
    ax.set_ylabel("executor memory (MB)")
    ax.set_title(f"{printable(job)}: {count(model.runs_, 'run')}")
    ax.legend()
    return fig


def _peaks_by_input(ax: Any, model: Any, obs: list, at: Any) -> None:
    feature = model.candidate_.feature
    seen = [o for o in obs if o.demand_mb and o.input_bytes]
    failed = [o for o in obs if o.failed and o.input_bytes]
    ax.scatter([at(o, feature) for o in seen], [o.demand_mb for o in seen], s=18,
               label="runs (peak)")
    if failed:
        ax.scatter([at(o, feature) for o in failed], [o.reserved_mb for o in failed],
                   marker="x", color="red", label="failed for memory at")
    top = max(at(o, feature) for o in [*seen, *failed]) * 1.25
    grid = [top * i / 200 for i in range(1, 201)]
    ax.plot(grid, [model.fitted_.predict(z) for z in grid], color="black",
            label=model.candidate_.label)
    ax.set_xlabel("input per executor (MB)" if feature == "per_executor" else "input (MB)")


def _peaks_by_run(ax: Any, model: Any, obs: list) -> None:
    """No input size: each run's peak (and memory failure) in the order they ran, the
    constant and its bound."""
    order = list(range(1, len(obs) + 1))
    seen = [(i, o) for i, o in zip(order, obs, strict=True) if o.demand_mb]
    failed = [(i, o) for i, o in zip(order, obs, strict=True) if o.failed]
    ax.scatter([i for i, _ in seen], [o.demand_mb for _, o in seen], s=18, label="runs (peak)")
    if failed:
        ax.scatter([i for i, _ in failed], [o.reserved_mb for _, o in failed], marker="x",
                   color="red", label="failed for memory at")
    point = model.predict(0, 1)
    ax.axhline(point, color="black", label=f"constant {point:.0f} MB")
    ax.axhline(point * model.ratio(0.95), color="black", linestyle="--",
               label="bound (P >= 0.95)")
    ax.set_xlabel("run (no input size recorded)")


def plot_file(out: str, job: str) -> Path:
    """The file `-o` names: inside it as JOB.png when it is a directory or ends in a slash
    (created then); matplotlib would otherwise append .png beside the directory."""
    from cobell_cli.errors import CobellError

    path = Path(out).expanduser()
    if not (out.endswith(("/", os.sep)) or path.is_dir()):
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CobellError(f"cannot create the directory {path}: {exc.strerror}",
                          hint="pass a writable directory or a file name to -o") from None
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job).lstrip(".") or "job"
    return path / f"{safe}.png"


@app.command("whatif")
def whatif_cmd(
    ctx: typer.Context,
    event_log: Path = typer.Option(
        ..., "--event-log", "-e",
        help="A Spark event log: one file (plain, .zstd, .lz4, .snappy) or a rolling log "
        "directory (eventlog_v2_*)."),
    scale_outs: list[int] | None = typer.Option(
        None, "--scale-out", "-x", min=1,
        help="Executor count to predict (repeatable); default 1, 2, 4, ... up to 4x the "
        "observed count (at least 8), and the observed count."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Predict the run's runtime at other executor counts from its event log alone.

    Replays the run's stages and task durations on N x cores slots in the order Spark's
    FIFO scheduler runs them (stage dependencies from the log), the driver's time outside
    jobs kept serial, executor start-up and cold tasks as the log shows them, scaled by the
    executors sharing a host. Other jobs' runs in the history do not change it: a log with
    no other run of its job holds no evidence that their start-up fits it.

    Example: cobell model whatif --event-log /tmp/spark-events/app-20250101-0001.zstd -x 2 -x 8
    """
    from cobell_cli import api, output
    from cobell_cli.api import count

    result = api.whatif(event_log, sorted(set(scale_outs or [])) or None,
                        api.cluster_profiles(settings(ctx).db_path))
    if as_json:
        typer.echo(output.to_json({k: result[k] for k in (
            "app_id", "observed_scale_out", "observed_runtime_s", "predictions")}))
        return
    info(f"{result['app_id']} ({result['app_name']}): {result['observed_runtime_s']:.1f} s at "
         f"{count(result['observed_scale_out'], 'executor')} x "
         f"{count(result['cores_per_executor'], 'core')}"
         + ("; start-up as the log shows it, scaled by the executors per host"
            if result["startup_source"] == "log" else ""))
    rows = [{"scale_out": p["scale_out"], "runtime_s": f"{p['runtime_s']:.1f}",
             "vs_observed": f"{p['runtime_s'] / result['observed_runtime_s']:.2f}x"}
            for p in result["predictions"]]
    typer.echo(output.table(rows, ["scale_out", "runtime_s", "vs_observed"]))
