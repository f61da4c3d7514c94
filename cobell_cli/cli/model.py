"""`cobell model`: show, evaluate and plot a job's runtime model (a thin layer over
cobell_cli.core.model; numpy and matplotlib load inside the commands)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import typer

from cobell_cli.cli.common import info, open_history, settings

app = typer.Typer(help="Show, evaluate and plot a job's runtime model.", no_args_is_help=True)

JOB_HELP = "Recurring job whose history the model is fitted to."


class Protocol(enum.StrEnum):
    loso = "loso"
    extrap = "extrap"
    sparse3 = "sparse3"


def training_runs(ctx: typer.Context, job: str) -> list[dict[str, Any]]:
    """The job's succeeded runs, or a UsageError that says how to find a job that has some."""
    return _runs_and_profiles(ctx, job)[0]


def _runs_and_profiles(ctx: typer.Context, job: str) -> tuple[list[dict[str, Any]], Any]:
    """The job's succeeded runs and, when it has event-log profiles, its what-if (the
    candidate curve planning fits with)."""
    from cobell_cli.errors import UsageError

    window = settings(ctx).history_window  # the runs planning uses, so the model it uses
    with open_history(ctx, create=False, read_only=True) as history:
        runs = history.training_runs(job, window=window)
        known = history.job_names()
        whatif = _job_whatif(history, job, runs)
    if not runs:
        why = "has no succeeded runs" if job in known else "is not in the history"
        raise UsageError(f"job {job!r} {why}",
                         hint="list the known jobs with `cobell history jobs`")
    return runs, whatif


def _job_whatif(history: Any, job: str, runs: list[dict[str, Any]]) -> Any:
    from cobell_cli import api
    from cobell_cli.core.whatif import fit_whatif

    profiles, others = api.job_profiles(history, job, runs, [])
    if not profiles:
        return None
    try:
        return fit_whatif(profiles, runs, others)
    except ValueError:
        return None


def fit(job: str, runs: list[dict[str, Any]], whatif: Any = None, cache: Any = None) -> Any:
    """The job's model, as planning fits it; from `cache` (api.model_cache) when it has it."""
    from cobell_cli.core.model import fit_runtime_model
    from cobell_cli.errors import UsageError

    try:
        if cache is not None:
            return cache.fit(runs, whatif)
        return fit_runtime_model(runs, whatif=whatif)
    except ValueError as exc:
        raise UsageError(f"job {job!r}: {exc}",
                         hint="list the known jobs with `cobell history jobs`") from None


def show_rows(description: dict[str, Any]) -> list[dict[str, Any]]:
    """The description as (field, value) rows for people."""
    rows: list[dict[str, Any]] = [
        {"field": "runs used", "value": description["n_runs"]},
        {"field": "scale-outs", "value": "{} distinct, {:g}..{:g}".format(
            description["n_scale_outs"], *description["scale_out_range"])},
    ]
    for role in ("interpolation", "extrapolation"):
        rows.append({"field": f"{role} model", "value": _curve_text(description[role])})
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
    text = f"a={_num(pair['a'])} b={_num(pair['b'])} ({pair['runs']} runs"
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
        return (f"the what-if replay of the job's event-log profile"
                f" x exp({curve['c0']:.3g} + {curve['c1_log_scale_out']:.3g}·log x)")
    label = "local linear" if curve["kind"] == "llr" else "local power law from the edge"
    return f"{label}, bandwidth {curve['bandwidth_log_scale_out']:.3g} (log scale-out)"


@app.command("show")
def show(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", help=JOB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the model description as JSON."),
) -> None:
    """The chosen model, its parameters, per co-runner interference, CV errors, runs used.

    Read from the model cache when planning (submit, predict) has fitted the same runs.

    Example: cobell model show --job sgd
    """
    from cobell_cli import api, output
    from cobell_cli.profile_priors import profile_text, resource_profile

    runs, whatif = _runs_and_profiles(ctx, job)
    with open_history(ctx, create=False, read_only=True) as history:
        profile = resource_profile(history.resource_totals([job]).get(job, []))
    cache = api.model_cache(settings(ctx))
    description = {"job": job, **fit(job, runs, whatif, cache).describe()}
    if as_json:
        cached = None if cache is None else {"hits": cache.hits, "misses": cache.misses}
        typer.echo(output.to_json({**description, "model_cache": cached,
                                   "resource_profile": profile}))
        return
    rows = show_rows(description)
    if profile:
        rows.append({"field": "resources", "value": profile_text(profile)})
    typer.echo(output.table(rows, ["field", "value"]))


def evaluation_rows(runs: list[dict[str, Any]], protocol: str, seed: int,
                    ) -> list[dict[str, Any]]:
    """One row per method: splits, mean and median MAPE, MAE and RMSE over the splits."""
    import numpy as np

    from cobell_cli.core.model.data import prepare_runs
    from cobell_cli.core.model.evaluate import evaluate, summarise

    results = evaluate(prepare_runs(runs), protocol, seed=seed)
    rows = []
    for method, per_split in results.items():
        if not per_split:
            continue
        s = summarise(per_split)
        rows.append({"method": method, "splits": s["splits"], "mape_pct": s["mean"],
                     "median_mape_pct": s["median"],
                     "mae_s": float(np.mean([p["mae_s"] for p in per_split])),
                     "rmse_s": float(np.mean([p["rmse_s"] for p in per_split]))})
    return rows


@app.command("eval")
def eval_cmd(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", help=JOB_HELP),
    protocol: Protocol = typer.Option(
        Protocol.loso, "--protocol", "-p",
        help="loso: leave each interior scale-out out; extrap: train on the smaller half of "
        "the scale-outs, test on the rest; sparse3: five draws of one run at 3 scale-outs."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the sparse3 draws."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Cross-validated errors of cobell's model next to Ernest and Bell on the same splits.

    Example: cobell model eval --job sgd --protocol extrap
    """
    from cobell_cli import output
    from cobell_cli.errors import UsageError

    runs = training_runs(ctx, job)
    rows = evaluation_rows(runs, protocol.value, seed)
    if not any(r["method"] == "cobell" for r in rows):
        n = len({r["scale_out"] for r in runs})
        raise UsageError(f"job {job!r} has {n} distinct scale-outs: too few for the "
                         f"{protocol.value} protocol",
                         hint="loso needs 3, extrap 2 and sparse3 4 distinct scale-outs")
    if as_json:
        typer.echo(output.to_json({"job": job, "protocol": protocol.value, "rows": rows}))
        return
    typer.echo(output.table(rows, ["method", "splits", "mape_pct", "median_mape_pct", "mae_s",
                                   "rmse_s"]))


@app.command("plot")
def plot(
    ctx: typer.Context,
    job: str = typer.Option(..., "--job", "-j", help=JOB_HELP),
    out: Path = typer.Option(..., "--output", "-o", help="Image file to write (png, svg, pdf)."),
    co_runner: str | None = typer.Option(
        None, "--co-runner", help="Co-runner for the curves (default: the most frequent one)."),
) -> None:
    """Runs coloured by overlap ratio and the fitted curves at ov = 0, 0.5 and 1 (needs the
    `plot` extra).

    Example: cobell model plot --job sgd -o sgd.png
    """
    from cobell_cli.errors import CobellError

    try:
        import matplotlib
    except ImportError:
        raise CobellError("plotting needs matplotlib",
                          hint="pip install 'cobell[plot]'") from None
    matplotlib.use("Agg")
    import warnings

    import matplotlib.pyplot as plt
    import numpy as np

    from cobell_cli.output import printable

    runs = training_runs(ctx, job)
    model = fit(job, runs)
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
    grid = np.linspace(max(1.0, lo * 0.8), hi * 1.25, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    points = ax.scatter(x, y, c=ov, cmap="viridis", vmin=0, vmax=max(1.0, float(ov.max())),
                        s=18, edgecolors="none")
    fig.colorbar(points, ax=ax, label="overlap ratio (sum over co-runners)")
    label = printable(co_runner) if co_runner else "any other job"
    for ratio, style in ((0.0, "-"), (0.5, "--"), (1.0, ":")):
        overlaps = {co_runner: ratio} if ratio else None
        ax.plot(grid, model.predict(grid, overlaps), style, color="black",
                label=f"ov = {ratio:g}" + (f" ({label})" if ratio else ""))
    ax.set_xlabel("scale-out")
    ax.set_ylabel("runtime (s)")
    ax.set_title(f"{printable(job)}: {model.n_runs_} runs")  # control characters as \xNN
    ax.legend()
    try:
        with warnings.catch_warnings():  # a name the font lacks a glyph for is drawn as a box
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            fig.tight_layout()
            fig.savefig(out)
    except (OSError, ValueError) as exc:
        raise CobellError(f"cannot write {out}: {exc}") from None
    finally:
        plt.close(fig)
    info(f"wrote {out}")


def default_scale_outs(observed: int) -> list[int]:
    """1, 2, 4, ... up to max(8, 4 x the observed count), and the observed count itself."""
    top = max(8, 4 * observed)
    xs = {observed}
    x = 1
    while x <= top:
        xs.add(x)
        x *= 2
    return sorted(xs)


def whatif_result(event_log: Path, scale_outs: list[int] | None,
                  cluster_profiles: list[Any]) -> dict[str, Any]:
    """The what-if of one event log: the run it saw and the predicted runtime per count."""
    from cobell_cli.core.whatif import fit_whatif, workload
    from cobell_cli.errors import UsageError
    from cobell_cli.sources.eventlog_profile import summarize

    profile = summarize(event_log)
    try:
        workload(profile)  # the reason a log cannot be replayed, in its own words
        model = fit_whatif([profile], cluster_profiles=cluster_profiles)
    except ValueError as exc:
        raise UsageError(f"event log {event_log}: {exc}",
                         hint="pass the log of a finished run that ran tasks") from None
    xs = scale_outs or default_scale_outs(profile.scale_out)
    predicted = model.predict(xs)
    return {
        "app_id": profile.app_id,
        "app_name": profile.app_name,
        "observed_scale_out": profile.scale_out,
        "observed_runtime_s": profile.runtime_s,
        "cores_per_executor": model.workloads_[0].cores_per_executor,
        "startup_profiles": model.startup_.profiles,
        "predictions": [{"scale_out": x, "runtime_s": y}
                        for x, y in zip(xs, predicted, strict=True)],
    }


def history_profiles(ctx: typer.Context) -> list[Any]:
    """Recent profiles of any job in the history (the cluster's start-up trends); none when
    there is no history."""
    from cobell_cli.errors import HistoryError

    try:
        with open_history(ctx, create=False, read_only=True) as history:
            return history.profiles()
    except HistoryError:
        return []


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
    jobs kept serial, executor start-up and cold tasks as the log shows them; the history's
    profiles, when there are any, add how start-up grows with N on this cluster.

    Example: cobell model whatif --event-log /tmp/spark-events/app-20250101-0001.zstd -x 2 -x 8
    """
    from cobell_cli import output

    result = whatif_result(event_log, sorted(set(scale_outs or [])) or None,
                           history_profiles(ctx))
    if as_json:
        typer.echo(output.to_json({k: result[k] for k in (
            "app_id", "observed_scale_out", "observed_runtime_s", "predictions")}))
        return
    info(f"{result['app_id']} ({result['app_name']}): {result['observed_runtime_s']:.1f} s at "
         f"{result['observed_scale_out']} executor(s) x {result['cores_per_executor']} core(s)"
         + (f"; start-up trends from {result['startup_profiles']} profile(s) in the history"
            if result["startup_profiles"] > 1 else ""))
    rows = [{"scale_out": p["scale_out"], "runtime_s": f"{p['runtime_s']:.1f}",
             "vs_observed": f"{p['runtime_s'] / result['observed_runtime_s']:.2f}x"}
            for p in result["predictions"]]
    typer.echo(output.table(rows, ["scale_out", "runtime_s", "vs_observed"]))
