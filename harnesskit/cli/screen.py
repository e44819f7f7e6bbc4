"""The one way text reaches stdout or stderr: through `visible`, so nothing read from a session file
or streamed by a model can send the terminal a control sequence, piped or not (JSON lines are
already escaped by `render.json_line`, and pass through unchanged)."""

from __future__ import annotations

import click

from harnesskit.text import visible


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    click.echo(visible(str(message)), err=err, nl=nl)
