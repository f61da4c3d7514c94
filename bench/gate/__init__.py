"""`python -m bench gate`: the core figures, computed by the canonical benchmarks' own
functions on fixed configurations, against the committed bench/baseline.json (cli.py)."""
