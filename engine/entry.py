"""The ``vaot`` process's first code (the console script, ``python -m engine``).

The command line's own module takes some 50 ms to import, before its ``main`` can set up how a
stop is taken; a Ctrl-C in that time printed a ``KeyboardInterrupt`` traceback. Imported from
here, it ends as a Ctrl-C does later: one line, exit status 130. (A SIGTERM then still ends
the process by its default action, which a shell reports as 143, the status vaot gives it.)
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    try:
        from engine.cli import main as command_line
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return command_line()
