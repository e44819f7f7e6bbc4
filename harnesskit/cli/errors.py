"""How every command reports a failure: one line on stderr, a meaningful exit code.

A message may quote a file's content, so it is shown through `echo` (control characters visible)
with its newlines spelled ``\\n``: one line, whatever it quotes."""

from __future__ import annotations

import click

from .screen import echo

USAGE = 2
FOUND_PROBLEMS = 1


class Fail(click.ClickException):
    """`harnesskit: error: ...` on stderr and the given exit code (2 unless said otherwise)."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        report_error(self.format_message())


def report_error(message: str) -> None:
    """The error line, for a failure the command goes on after (a failed turn, one file of many)."""
    echo(f"harnesskit: error: {message}".replace("\n", "\\n"), err=True)


def warn(message: str) -> None:
    echo(f"harnesskit: warning: {message}".replace("\n", "\\n"), err=True)
