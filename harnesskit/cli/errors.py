"""How every command reports a failure: one line on stderr, a meaningful exit code."""

from __future__ import annotations

import click

USAGE = 2
FOUND_PROBLEMS = 1


class Fail(click.ClickException):
    """`harnesskit: error: ...` on stderr and the given exit code (2 unless said otherwise)."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(f"harnesskit: error: {self.format_message()}", err=True)


def warn(message: str) -> None:
    click.echo(f"harnesskit: warning: {message}", err=True)
