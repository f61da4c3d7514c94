"""The pure core: runtime models, overlap prediction, planning, calibration, what-if.

Nothing here does I/O, reads the clock or the environment: history, running apps and `now`
are passed in. That is what lets hypothesis test it and the benchmarks reuse it unchanged.
"""
