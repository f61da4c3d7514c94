"""One-off studies whose conclusions are recorded in bench/results/ (bench/README.md lists
each): `python -m bench.studies.NAME` reruns one. Not part of the gate; kept runnable."""
