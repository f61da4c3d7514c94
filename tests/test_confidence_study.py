"""bench.studies.confidence: its statistics and report on hand-made runs (no simulation)."""

from __future__ import annotations

import pytest

from bench import colocation as co
from bench import oracle_bound as ob
from bench.studies import confidence as cs

TARGET_S = co.TARGETS_S["sgd"]


def _records(strategy: str, runtimes: list[float], scale_out: int) -> list[co.RunRecord]:
    """Six bootstrap runs (ignored by every statistic), then the given post-bootstrap runs."""
    return [co.RunRecord(i, strategy, ("grep",), scale_out, runtime_s, TARGET_S, "model", None,
                         0.5)
            for i, runtime_s in enumerate([9_999.0] * 6 + runtimes, 1)]


def _cell(cobell_s: list[float], bell_s: list[float], blind: list[tuple[int, float]]) -> dict:
    """One cell: the oracle at 10 executors and 300 s every run; cobell at 11, Bell at 12."""
    n = len(cobell_s)
    plays = {"oracle": _records("oracle", [300.0] * n, 10),
             "cobell@0.9": _records("cobell@0.9", cobell_s, 11),
             "bell@0.9": _records("bell@0.9", bell_s, 12)}
    bounds = [ob.RunBound(7 + i, 10, 300.0, {0.9: b}) for i, b in enumerate(blind)]
    return {"plays": plays, "blind": bounds}


ON, LATE = 340.0, 385.0  # LATE is 10 % over sgd's 350 s target
CELLS = {
    2018: {("simulator", "single", "sgd"): _cell([ON, ON, ON, LATE], [LATE, LATE, ON, ON],
                                                 [(10, ON)] * 4)},
    2019: {("simulator", "single", "sgd"): _cell([ON] * 4, [LATE, ON, ON, ON],
                                                 [(10, ON)] * 3 + [(10, LATE)])},
}


def test_cell_statistics_skip_the_bootstrap_and_compare_with_the_oracle():
    out = CELLS[2018][("simulator", "single", "sgd")]
    s = cs.cell_stats(out, "cobell", "0.9", "sgd")
    assert s["runs"] == 4 and s["over_share_pct"] == 25.0
    assert s["max_overshoot_pct"] == pytest.approx(10.0)
    assert s["xs"] == pytest.approx(11 * (3 * ON + LATE))
    assert s["node_s_vs_oracle"] == pytest.approx(s["xs"] / (4 * 10 * 300.0))
    blind = cs.cell_stats(out, "blind", "0.9", "sgd")
    assert blind["over_share_pct"] == 0.0 and blind["xs"] == pytest.approx(4 * 10 * ON)


def test_pooled_late_share_is_the_mean_of_equal_cells_with_its_standard_error():
    both = cs.table(CELLS, [2018, 2019], "simulator", "cobell", "0.9")
    assert both["late_pct"] == pytest.approx(12.5)  # 25 % and 0 %
    assert both["late_se"] == pytest.approx(12.5)  # sd 17.68 over sqrt(2)
    assert both["max_overshoot_pct"] == pytest.approx(10.0)
    one = cs.table(CELLS, [2019], "simulator", "cobell", "0.9")
    assert one["late_pct"] == 0.0 and one["late_se"] != one["late_se"]  # one cell: no SE


def test_paired_gap_is_per_cell_cobell_minus_the_other():
    gap = cs.paired(CELLS, [2018, 2019], "simulator", ("cobell", "0.9"), ("blind", "0.9"))
    assert gap["late"] == pytest.approx((25.0 + (0.0 - 25.0)) / 2)
    assert gap["late_se"] == pytest.approx(25.0)


@pytest.mark.parametrize(("mine", "blind", "verdict"), [
    ((3.0, 1.04), (1.0, 1.02), "met"),
    ((6.0, 1.04), (1.0, 1.02), "MISSED"),
    ((3.0, 1.06), (1.0, 1.02), "MISSED"),
    ((8.0, 1.06), (9.0, 1.07), "ok"),  # the noise-blind planner misses the goal itself
    ((8.0, 1.08), (9.0, 1.07), "worse"),
])
def test_the_per_cell_clause_follows_the_noise_blind_planner(mine, blind, verdict):
    def stats(v: tuple[float, float]) -> dict[str, float]:
        return {"max_overshoot_pct": v[0], "node_s_vs_oracle": v[1]}

    assert cs.cell_goal(stats(mine), stats(blind)) == verdict


def test_report_separates_development_and_held_out_seeds_and_names_dearer_peers():
    text = cs.render(CELLS, ["0.9"], 2018, "test")
    assert "| dev 2018 | simulator | cobell | 25.0 ± nan / 10.0 /" in text
    assert "| held-out 2019 | simulator | cobell | 0.0 ± nan / 0.0 / 1.247 ± nan |" in text
    # Bell missed more often than cobell: no Bell level to compare costs with
    assert ("| dev 2018 | simulator | 0.9 | 25.0 / 1.288 | none; Bell's least late: 0.9: 50.0 /"
            " 1.450 |") in text
    assert "| 2019 | simulator | single | sgd |" in text


def test_parts_round_trip_through_the_cache(tmp_path):
    for seed, cells in CELLS.items():
        cs.save(cells, seed, tmp_path)
    loaded = cs.load(tmp_path)
    assert sorted(loaded) == [2018, 2019]
    again = cs.table(loaded, [2018, 2019], "simulator", "bell", "0.9")
    assert again == cs.table(CELLS, [2018, 2019], "simulator", "bell", "0.9")


def test_parts_at_other_levels_merge_into_their_cell(tmp_path):
    cell = ("simulator", "single", "sgd")
    cs.save(CELLS[2018], 2018, tmp_path)
    more = _cell([LATE] * 4, [ON] * 4, [(12, ON)] * 4)
    more["plays"] = {"cobell@0.97": [cs.dataclasses.replace(r, strategy="cobell@0.97")
                                     for r in more["plays"]["cobell@0.9"]]}
    more["blind"] = [cs.dataclasses.replace(b, planned={0.97: b.planned[0.9]})
                     for b in more["blind"]]
    cs.save({cell: more}, 2018, tmp_path, ["0.97"])
    loaded = cs.load(tmp_path)[2018][cell]
    assert set(loaded["plays"]) == {"oracle", "cobell@0.9", "bell@0.9", "cobell@0.97"}
    assert cs.cell_stats(loaded, "cobell", "0.97", "sgd")["over_share_pct"] == 100.0
    assert cs.cell_stats(loaded, "blind", "0.97", "sgd")["xs"] == pytest.approx(4 * 12 * ON)
    assert cs.cell_stats(loaded, "blind", "0.9", "sgd")["xs"] == pytest.approx(4 * 10 * ON)


def test_cobell_is_compared_with_the_bell_levels_that_miss_no_more_often():
    cell = ("simulator", "single", "sgd")
    late_cobell = {2018: {cell: _cell([LATE] * 4, [ON] * 4, [(10, ON)] * 4)}}
    rows = cs.bell_rows(late_cobell, {"dev": [2018]}, ["simulator"], ["0.9"])
    # cobell: 11 executors, every run 385 s; Bell: 12 executors, 340 s: on time and cheaper
    assert rows == ["| dev | simulator | 0.9 | 100.0 / 1.412 | 0.9: 0.0 / 1.360 (DEARER) |"]
