"""The `cobell` executable (`python -m cobell_cli`, and the console script).

A SIGINT while Python is still importing the CLI (its first ~50-300 ms) ends cobell with one
line and exit 130, not a traceback: this handler is installed before the CLI's imports (with
the C module `_signal`: `signal` would first import enum, ~6 ms), and `main` replaces it with
the phase-aware ones (cobell_cli/interrupts.py) once they are loaded. Only the interpreter's
own start-up, before any cobell code runs, is out of reach.
"""

import _signal
import gc
import os

# Young collections every 200 000 allocations, not 700: a command's imports and plan allocate
# much and free it by reference counting; collecting every 700 cost ~2 % of a cached predict,
# and at 50 000 a predict that fits (numpy, the model) still paid one collection, 1.2 % of it
# (valgrind instruction counts). Cycles are still collected, in larger batches.
gc.set_threshold(200_000, *gc.get_threshold()[1:])


def _interrupted_while_starting(_signum: int, _frame: object) -> None:
    os.write(2, b"cobell: interrupted by SIGINT\n")
    os._exit(130)


if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:  # not if it is ignored
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

from cobell_cli.cli import main  # noqa: E402 - after the handler, on purpose

if __name__ == "__main__":
    main()
