"""bench/studies/mutations.py stays runnable: each mutant names source text that is there,
once, so a refactor that moves it fails here rather than in the study's next run."""

from __future__ import annotations

from bench.studies.mutations import MUTATIONS, ROOT


def test_every_mutation_applies_to_todays_code_exactly_once() -> None:
    counts = {m.name: (ROOT / m.path).read_text().count(m.old) for m in MUTATIONS}
    assert counts == {m.name: 1 for m in MUTATIONS}
    assert all(m.old != m.new for m in MUTATIONS)
    assert all((ROOT / t).is_file() for m in MUTATIONS for t in m.tests)
