"""Whether the deadline planner's feasibility and its P(meet) are one statement (issue 34;
branch deadagree).

    python -m bench.studies.deadline_agree count --world W --seed S
    python -m bench.studies.deadline_agree run --world W --seed S --feasibility F [--cache DIR]
    python -m bench.studies.deadline_agree report --seeds 4242 5309 11 [--cache DIR]

Until deadagree, `Risk.judge` called a candidate feasible when max(the model's interval,
predicted x the ratios' bound at the confidence) was within the budget, while P(meet) came
from the ratios alone: a candidate could be "out of reach" at P(meet) 0.999999.
`--feasibility` picks the judge the scored rounds plan with:

* interval: main's before deadagree (the model's interval joins the ratios' bound).
* one: the ratios' bound alone where the job has ratios (the model's interval only without
  them): within the budget exactly when P(meet) >= the confidence.

`count` plays bench.deadline's two gate cells (bench/gate/units.py's rounds and warm-up) in
one world at one seed under `interval` and counts the candidates judged at a confidence with
ratios: judged infeasible while P(meet) >= the confidence (and by which term), and the
reverse. `run` saves the deadline row's figures of both cells; `report` pairs `one` with
`interval` cell by cell.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import BELL_DATA
from bench import deadline as dl
from bench.colocation import truth
from bench.simulator import load_curves
from cobell_cli.core.schedule.options import Sized, Sizer
from cobell_cli.core.schedule.risk import Judgement, Risk

ROUNDS = {"isolated": 8, "burst5": 2}  # bench/gate/units.py's DEADLINE_ROUNDS
WARMUP = 3
FEASIBILITY = ("interval", "one")
CACHE = Path("/tmp/deadline_agree")


def interval_judge(self: Risk, model: Any, scale_out: int, predicted_s: float,
                   row: Mapping[Any, float], budget_s: float) -> Judgement:
    """Risk.judge before deadagree (module doc: `interval`)."""
    factor = self._stranger_factor(model, scale_out, row)
    scaled = predicted_s * factor
    if self.confidence is None:
        return Judgement(scaled, budget_s > 0 and predicted_s <= budget_s, self, budget_s,
                         scaled)
    from_ratios = scaled * self._bound
    if budget_s <= 0 or from_ratios > budget_s:
        return Judgement(from_ratios, False, self, budget_s, scaled)
    _, upper = model.predict_interval([float(scale_out)], dict(row) or None,
                                      confidence=self.confidence)
    bound = max(float(next(iter(upper))) * factor, from_ratios)
    return Judgement(bound, bound <= budget_s, self, budget_s, scaled)


@contextlib.contextmanager
def judged_by(feasibility: str, tally: Counter | None = None) -> Iterator[None]:
    """Risk.judge replaced by `feasibility`'s, each judgement counted into `tally`."""
    kept = Risk.judge
    base = interval_judge if feasibility == "interval" else kept

    def judge(self: Risk, model: Any, scale_out: int, predicted_s: float,
              row: Mapping[Any, float], budget_s: float) -> Judgement:
        got = base(self, model, scale_out, predicted_s, row, budget_s)
        if tally is not None:
            _count(tally, self, got, model, scale_out, row)
        return got

    likeliest = Sizer._likeliest

    def out_of_reach(self: Sizer, sized: Sequence[tuple[int, Sized]]) -> int:
        if tally is not None and self.job.confidence is not None:
            best = max((s.judgement.meet_probability or 0.0) for _, s in sized)
            tally["sizings out of reach"] += 1
            tally["  of them with P(meet) >= conf"] += best >= self.job.confidence - 1e-9
        return likeliest(self, sized)

    Risk.judge = judge  # type: ignore[method-assign]
    Sizer._likeliest = out_of_reach  # type: ignore[method-assign]
    try:
        yield
    finally:
        Risk.judge = kept  # type: ignore[method-assign]
        Sizer._likeliest = likeliest  # type: ignore[method-assign]


def _count(tally: Counter, risk: Risk, got: Judgement, model: Any, scale_out: int,
           row: Mapping[Any, float]) -> None:
    if risk.confidence is None or risk._dist is None:
        tally["no ratios or point"] += 1
        return
    p = got.meet_probability or 0.0
    likely = p >= risk.confidence - 1e-9
    tally["judged"] += 1
    if got.feasible == likely:
        tally["agree"] += 1
        return
    if likely:  # infeasible at P(meet) >= confidence: which term was over the budget?
        ratios_over = got._scaled_s * risk._bound > got._budget_s
        tally["infeasible, P>=conf: " + ("ratio bound" if ratios_over else "model interval")] += 1
        tally["  its P(meet) sum"] += p
    else:
        tally["feasible, P<conf"] += 1


def play(world: str, seed: int, feasibility: str, tally: Counter | None = None
         ) -> dict[str, Any]:
    """The two cells' deadline-row figures (the warm-up is the same under both judges:
    start now plans with `plan()`, not the schedule)."""
    curves = load_curves(BELL_DATA)
    base = dl.warmed(curves, truth(world), seed, WARMUP)
    out: dict[str, Any] = {}
    with judged_by(feasibility, tally):
        for pattern, rounds in ROUNDS.items():
            cell = dl.run_cell(world, pattern, seed, rounds, base, curves, lambda _m: None)
            stats = dl._row_stats(cell, "deadline")
            out[pattern] = {
                "vs_oracle": stats["vs_oracle"], "executor_s": stats["executor_s"],
                "met": round(stats["met"] * stats["jobs"]), "jobs": stats["jobs"],
                "jobs_played": [(r.key, r.job, r.scale_out, round(r.start_at, 1), r.met)
                                for r in cell.results("deadline")]}
    return out


def _path(cache: Path, world: str, seed: int, feasibility: str) -> Path:
    return cache / f"{world}-{seed}-{feasibility}.json"


def report(seeds: Sequence[int], cache: Path) -> str:
    """`one` less `interval`, paired over the cells."""
    cells = [(s, w, p) for s in seeds for w in ("simulator", "nodesim") for p in ROUNDS]
    got: dict[str, dict] = {f: {} for f in FEASIBILITY}
    for f in FEASIBILITY:
        for s in seeds:
            for w in ("simulator", "nodesim"):
                found = json.loads(_path(cache, w, s, f).read_text())
                for p in ROUNDS:
                    got[f][(s, w, p)] = found[p]
    lines = ["| seed | world | pattern | interval: x oracle (met) | one: x oracle (met) |",
             "|---|---|---|---|---|"]
    for c in cells:
        a, b = got["interval"][c], got["one"][c]
        lines.append(f"| {c[0]} | {c[1]} | {c[2]} | {a['vs_oracle']:.3f} ({a['met']}/"
                     f"{a['jobs']}) | {b['vs_oracle']:.3f} ({b['met']}/{b['jobs']}) |")
    d = [got["one"][k]["vs_oracle"] - got["interval"][k]["vs_oracle"] for k in cells]
    m = [got["one"][k]["met"] - got["interval"][k]["met"] for k in cells]
    lines += ["", f"- one less interval: x oracle {statistics.mean(d):+.3f} +- {_se(d):.3f}; "
              f"deadlines met {sum(m):+d} ({statistics.mean(m):+.2f} +- {_se(m):.2f} a cell) "
              f"of {sum(got['interval'][k]['jobs'] for k in cells)}"]
    return "\n".join(lines)


def _se(values: Sequence[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.deadline_agree")
    parser.add_argument("mode", choices=("count", "run", "report"))
    parser.add_argument("--world", choices=("simulator", "nodesim"))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--seeds", type=int, nargs="+")
    parser.add_argument("--feasibility", choices=FEASIBILITY)
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    if args.mode == "report":
        print(report(args.seeds, args.cache))
        return
    if args.mode == "count":
        tally: Counter = Counter()
        play(args.world, args.seed, "interval", tally)
        for key, value in sorted(tally.items()):
            print(f"{key}: {value:g}")
        return
    out = play(args.world, args.seed, args.feasibility)
    args.cache.mkdir(parents=True, exist_ok=True)
    _path(args.cache, args.world, args.seed, args.feasibility).write_text(json.dumps(out))
    print(json.dumps({p: {k: v for k, v in c.items() if k != "jobs_played"}
                      for p, c in out.items()}))


if __name__ == "__main__":
    main()
