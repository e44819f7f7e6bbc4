"""The Click group. Commands are imported only when run, so `harnesskit inspect` never pays for the
network client or the schema engines (start-up counts: a CLI is run many times)."""

from __future__ import annotations

import importlib
import os
import sys

import click

from harnesskit import __version__
from harnesskit.text import visible

from .interrupts import settle

# The reader keeps integers of up to 4,300 digits exactly (reader.MAX_INT_DIGITS, not imported here:
# start-up counts); a sum of them (a --stats total, a compaction's tokensBefore) has a digit or two
# more, which Python's default limit (or a lower PYTHONINTMAXSTRDIGITS) refuses to write. Twice that
# still bounds the quadratic int<->str conversion the limit guards (a few ms).
sys.set_int_max_str_digits(8_600)

# command name -> (module, attribute, one-line help shown in `harnesskit --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": ("harnesskit.cli.chat", "chat", "Talk to a model; every message is saved as it is finalised."),
    "continue": ("harnesskit.cli.continue_", "continue_", "Reopen the most recent (or a given) session."),
    "fork": ("harnesskit.cli.fork", "fork", "Start a new session file from an entry of an old one."),
    "list": ("harnesskit.cli.list_", "list_", "Sessions of this directory (or all), newest first."),
    "inspect": ("harnesskit.cli.inspect", "inspect", "A table, tree, context or stats of a session file."),
    "validate": ("harnesskit.cli.validate", "validate", "Schema and structural checks of session files, for CI."),
    "import": ("harnesskit.cli.import_", "import_", "A Claude Code or Codex session as a new pi session."),
    "compact": ("harnesskit.cli.compact", "compact", "Summarise a session's older messages (pi's compaction)."),
    "migrate": ("harnesskit.cli.migrate", "migrate", "Rewrite legacy (pi v1/v2, tutorial) files as v3, safely."),
    "index": ("harnesskit.cli.index_", "index", "Update the cross-session index (search and usage read it)."),
    "search": ("harnesskit.cli.search", "search", "Full-text search across the messages of every session."),
    "usage": ("harnesskit.cli.usage_", "usage", "Tokens and cost by day, week, month, session, model, project."),
    "export": ("harnesskit.cli.export", "export", "A session as an HTML page or Markdown; sessions as Parquet."),
    "query": ("harnesskit.cli.query", "query", "SQL (DuckDB) over a Parquet dataset of sessions."),
    "demo": ("harnesskit.cli.demo", "demo", "The chapter's two-run demo, end to end, offline."),
    "config": ("harnesskit.cli.config", "config", "Read and change the config file, keeping its comments."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        return getattr(module, spec[1])

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command gets the near ones named, as git does."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            from .errors import Fail

            near = difflib.get_close_matches(name, list(COMMANDS), n=3, cutoff=0.7)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise Fail(f"no such command {name!r}{hint} (harnesskit --help lists them)")
        return super().resolve_command(ctx, args)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[arg-type]
        except click.UsageError as error:  # `harnesskit --bogus`: the root's own options
            raise _one_line(error) from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise _one_line(error) from None
        except OSError as error:
            from harnesskit.session.reader import LineTooLong

            if isinstance(error, LineTooLong):  # a refusal, from wherever the line was met: one line, exit 2
                from .errors import Fail

                raise Fail(f"{error.filename}: {error.strerror}") from None
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, spec[2]) for name, spec in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _one_line(error: click.UsageError) -> click.ClickException:
    """A usage error in one line, as every error (Click's own form takes four), naming the help."""
    from .errors import Fail

    path = ["harnesskit", *error.ctx.command_path.split()[1:]] if error.ctx is not None else ["harnesskit"]
    return Fail(f"{error.format_message()} (see: {' '.join(path)} --help)", error.exit_code)


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harnesskit")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """harnesskit: trustworthy JSONL session ledgers for LLM agent harnesses (pi session v3).

    \b
    Examples:
      harnesskit chat -p "what is 12*8"
      harnesskit continue
      harnesskit inspect session.jsonl --tree
      harnesskit validate ~/.harnesskit/sessions --strict

    Shell completion: eval "$(_HARNESSKIT_COMPLETE=bash_source harnesskit)" (zsh_source, fish_source).
    """
    if ctx.invoked_subcommand is None:  # a bare `harnesskit` is a question: answer it with the help
        click.echo(ctx.get_help())


def main() -> None:
    """Entry point: exit codes of contract §6, and no Python traceback ever reaches a user unless
    they ask for one (HARNESSKIT_DEBUG=1). The code stands whenever a Ctrl-C comes (cli/interrupts.py)."""
    try:
        code = _run()
    except KeyboardInterrupt:  # one more Ctrl-C just as the command returned: it had ended already
        code = 130
    settle(code)
    sys.exit(code)


def _run() -> object:
    """The command's exit code (what `sys.exit` takes)."""
    try:
        cli.main(prog_name="harnesskit", standalone_mode=False)
    except SystemExit as done:  # a command's own code (chat's 130 after Ctrl-C, validate's 1)
        return done.code
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        click.echo("harnesskit: interrupted", err=True)
        return 130
    except BrokenPipeError:
        # stdout went away (`| head`): stop quietly, and keep Python from complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:  # noqa: BLE001 - the last line of defence
        if os.environ.get("HARNESSKIT_DEBUG"):
            raise
        click.echo(visible(f"harnesskit: internal error: {type(error).__name__}: {error} "
                           "(set HARNESSKIT_DEBUG=1 for a traceback)"), err=True)
        return 2
    return 0
