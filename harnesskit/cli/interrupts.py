"""The end of a harnesskit process: the exit code the command decided, whenever a Ctrl-C came.

Two CPython behaviours would turn a handled Ctrl-C into another ending:

* CPython 3.11-3.13 marks the interpreter as ended by an *unhandled* Ctrl-C when a KeyboardInterrupt
  leaves a string ``exec``/``eval``, even if a caller catches it. ``dataclasses`` and ``namedtuple``
  build their methods that way, so a Ctrl-C that lands in a lazy import (chat imports the compaction
  module when the first compaction starts; the openai client imports pydantic models in the first
  request) sets the mark; under ``python -m harnesskit`` the interpreter then kills itself with
  SIGINT at exit (status -2, no traceback) instead of exiting with our 130. Every string exec clears
  the mark at its start, so `settle` runs one (3.14 sets the mark only at the top level: a no-op).
* A Ctrl-C during interpreter shutdown (atexit callbacks, joining a worker) would raise
  KeyboardInterrupt there: a traceback after the command has already reported. Once the command has
  ended (its files written and closed), a Ctrl-C ends the process at once with the decided code.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def exit_status(code: object) -> int:
    """The status `sys.exit(code)` gives: None is 0, a message is 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def settle(code: object) -> None:
    """Call once the command has ended with `code` (what is passed to `sys.exit`)."""
    status = exit_status(code)

    def end_now(signum: int, frame: FrameType | None) -> None:
        _exit(status)

    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when SIGINT is ignored
            signal.signal(signal.SIGINT, end_now)
    except KeyboardInterrupt:  # a Ctrl-C pending as the command ended: signal.signal runs it first
        _exit(status)
    except ValueError:  # not the main thread: signals are not ours to take
        pass
    exec("pass", {})  # noqa: S102 - clears CPython's stale "unhandled Ctrl-C" mark (see the module doc)


def _exit(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: nothing more to say on it
    os._exit(status)
