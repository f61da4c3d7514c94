"""How the co-runners' effects enter the model, chosen by K-fold CV on the runs with co-runners:
the combination rule (combine.RULES), a + b/x or a, and overlaps weighed by co-runner size or
not; and the pairs of a fit pooled toward each other (pooling.py), in CV as in the final fit.

A form is (rule, scaled, sized, broken): broken separates the pairs from a broken line in
log x (interference.knots) instead of Ernest's curve; the paper's form is ("additive", True,
False, False). The CV keeps the simplest form within one standard error of the best
(one_se.py): a alone (one parameter per co-runner) before a + b/x (two), the paper's additive
rule, plain overlaps and Ernest's curve before the other rules, the size weights and the
broken line, at every history size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cobell_cli.core.model.co_runner_runs import sizes_vary
from cobell_cli.core.model.combine import RULES
from cobell_cli.core.model.data import RunData
from cobell_cli.core.model.interference import (
    AloneCurve,
    fit_interference,
    knots,
    pair_covariance,
    slowdown,
)
from cobell_cli.core.model.one_se import CvErrors, choose
from cobell_cli.core.model.pooling import Pooled, no_pooling, shrink

INTERFERENCE_FOLDS = 3  # K of the CV that chooses the combination rule and b/x
CV_ROUNDS = 4  # alternations per CV fit: enough to rank the forms, a third of the cost
MIN_RUNS_FOR_RULE_CV = INTERFERENCE_FOLDS  # one held-out run with co-runners per fold

# (combination rule, scaled by 1/x, overlaps weighed by size, separated from a broken line)
Form = tuple[str, bool, bool, bool]


@dataclass(frozen=True)
class FormOptions:
    """What the caller fixed (None / "auto": the CV decides) and how the CV fits."""

    combination: str
    scaled: bool | None
    sized: bool | None
    pooling: bool
    broken_line: bool | None  # None: the CV decides (where interference.knots gives knots)
    selection: str = "one-se"  # one_se.choose: "one-se" or "best"


def pool_pairs(x: np.ndarray, y: np.ndarray, ov: np.ndarray, curve: AloneCurve, a: np.ndarray,
               b: np.ndarray, w: np.ndarray, form: tuple[str, bool], pooling: bool) -> Pooled:
    """The fitted pairs with their sampling covariance, shrunk toward each other (pooling.py)
    unless `pooling` is off."""
    cov = pair_covariance(x, y, ov, curve(x), a, b, w, form[0], form[1], curve.n_params)
    est = np.column_stack([a, b])
    if not pooling:
        return no_pooling(est, cov)
    return shrink(est, cov, active=np.array([True, form[1]]))


def interference_cv(x: np.ndarray, y: np.ndarray, ov: np.ndarray, base: Sequence[str],
                    form: tuple[str, bool], pooling: bool, broken_line: bool) -> CvErrors:
    """|log(y / ŷ)| of each held-out run with co-runners, interleaved K folds, each fold
    fitted (fast: no reweighting) and pooled as the final model will be."""
    busy = np.flatnonzero((ov > 0).any(axis=1))
    errs = []
    for fold in range(INTERFERENCE_FOLDS):
        test = np.zeros(x.size, bool)
        test[busy[fold::INTERFERENCE_FOLDS]] = True
        if not test.any():
            continue
        tr = ~test
        curve, a, b, w = fit_interference(x[tr], y[tr], ov[tr], base, robust=False,
                                          rule=form[0], scaled=form[1],
                                          rounds=CV_ROUNDS,
                                          at=knots(x[tr]) if broken_line else None)
        pooled = pool_pairs(x[tr], y[tr], ov[tr], curve, a, b, w, form, pooling)
        pred = curve(x[test]) * slowdown(x[test], ov[test], pooled.pairs[:, 0],
                                         pooled.pairs[:, 1], form[0])
        errs.append(np.abs(np.log(y[test] / np.maximum(pred, 1e-12 * y.min()))))
    return CvErrors.of(errs, [np.ones_like(e) for e in errs])


def choose_terms(plain: RunData, bases: Sequence[Sequence[str]], pooling: bool,
                 selection: str = "one-se") -> tuple[Sequence[str], dict[str, float]]:
    """Ernest's terms f keeps while the pairs are separated from it, by the CV of the paper's
    form on the runs with co-runners (the fewest terms within one standard error of the best).
    Below five scale-outs Amdahl's two were the only choice, and they cannot rise with x: a
    job that slows down past some scale-out (more executors than cores) had that slow-down
    read as interference. Fewer runs with co-runners than folds: the fewest terms."""
    x, y, ov = plain.scale_out, plain.runtime_s, plain.overlap
    if len(bases) == 1 or int((ov > 0).any(axis=1).sum()) < MIN_RUNS_FOR_RULE_CV:
        return min(bases, key=len), {}
    scores = {tuple(b): interference_cv(x, y, ov, b, ("additive", True), pooling, False)
              for b in bases}
    chosen = choose(scores, len, selection)
    return chosen, {" + ".join(b): v.mean for b, v in scores.items()}


def size_options(plain: RunData, sized: RunData, fixed: bool | None,
                 references: dict[str, float]) -> list[bool]:
    """Whether to weigh overlaps by co-runner size is a question only when some co-runner
    job ran at different scale-outs (and the caller did not fix the answer)."""
    if fixed is not None:
        return [bool(fixed) and sized is not plain]
    if sized is plain or not sizes_vary(plain, references):
        return [False]
    return [False, True]


def complexity(form: Form) -> tuple[int, int]:
    """Sort key of a form for the one-SE rule: parameters per co-runner (a: 1, a + b/x: 2),
    then how far it strays from the paper (another rule, size weights)."""
    rule, scaled, sized, broken = form
    return 1 + int(scaled), int(rule != "additive") + int(sized) + int(broken)


def choose_form(plain: RunData, sized: RunData, base: Sequence[str], options: FormOptions,
                references: dict[str, float]) -> tuple[Form, dict[str, float]]:
    """(rule, scaled, sized, broken) by CV in stages, to bound the cost: first the curve the
    pairs are separated from (Ernest's or a broken line, where the runs give knots) under the
    paper's additive a + b/x; then a + b/x against a, each on the plain overlaps and, where
    co-runner jobs ran at different scale-outs, on the overlaps weighed by the co-runner's
    scale-out over its usual one (the share of the cluster it presses on); then the other
    rules with the winner. Each stage keeps the simplest form within one standard error of
    the best. Fewer runs with co-runners than folds: the simplest form. Also returns the CV
    error of each form tried, by name (empty when the CV had nothing to choose)."""
    present = plain.overlap > 0
    rules = [options.combination] if options.combination != "auto" else list(RULES)
    if options.combination == "auto" and not np.any(present.sum(axis=1) >= 2):
        rules = ["additive"]  # no run with two co-runners: every rule is the same
    scaled = [True, False] if options.scaled is None else [bool(options.scaled)]
    sizes = size_options(plain, sized, options.sized, references)
    breaks = ([False] if options.broken_line is False or knots(plain.scale_out) is None
              else [True] if options.broken_line else [False, True])
    if int(present.any(axis=1).sum()) < MIN_RUNS_FOR_RULE_CV:
        return min(((rules[0], s, z, b) for z in sizes for s in scaled for b in breaks),
                   key=complexity), {}
    scores: dict[Form, CvErrors] = {}
    score = _form_scorer(plain, sized, base, options, scores)
    broken = breaks[0]
    if len(breaks) > 1:
        paper = (rules[0], scaled[0], sizes[0])
        broken = _pick([(*paper, b) for b in breaks], score, options.selection)[3]
    first = [(rules[0], s, z, broken) for z in sizes for s in scaled]
    form = _pick(first, score, options.selection) if len(first) > 1 else first[0]
    if len(rules) > 1:
        form = _pick([(r, *form[1:]) for r in rules], score, options.selection)
    named = {form_name(f): v.mean for f, v in scores.items()} if len(scores) > 1 else {}
    return form, named


def _form_scorer(plain: RunData, sized: RunData, base: Sequence[str], options: FormOptions,
                 scores: dict[Form, CvErrors]) -> Callable[[Form], CvErrors]:
    """A form's CV errors, computed once and kept in `scores`."""
    matrices = {False: plain.overlap, True: sized.overlap}

    def score(form: Form) -> CvErrors:
        if form not in scores:
            scores[form] = interference_cv(plain.scale_out, plain.runtime_s, matrices[form[2]],
                                           base, form[:2], options.pooling, form[3])
        return scores[form]

    return score


def _pick(forms: list[Form], score: Callable[[Form], CvErrors], selection: str) -> Form:
    """The form the selection rule picks among `forms` (one_se.choose)."""
    return choose({f: score(f) for f in forms}, complexity, selection)


def form_name(form: tuple[str, bool] | Form) -> str:
    """How describe() names a form, e.g. "additive, a + b/x, x co-runner size, broken line"."""
    sized = ", x co-runner size" if len(form) > 2 and form[2] else ""
    broken = ", broken line" if len(form) > 3 and form[3] else ""
    return f"{form[0]}, {'a + b/x' if form[1] else 'a'}{sized}{broken}"
