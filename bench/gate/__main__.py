"""`python -m bench.gate` is `python -m bench gate`."""

from bench.gate.cli import main

raise SystemExit(main())
