"""`harnesskit migrate`: rewrite legacy session files as v3, keeping FILE.bak."""

from __future__ import annotations

from pathlib import Path

import click

from harnesskit.session.rewrite import MigrationRefused, migrate_file, plan
from harnesskit.session.writer import SessionLocked
from harnesskit.text import spelled

from .errors import FOUND_PROBLEMS, USAGE, Fail, report_error, warn
from .progress import file_size, progress
from .refs import regular
from .screen import echo

NO_REPLY = ("{path} has no assistant reply: pi, continuing it, writes a second header and every entry again "
            "(its lazy-creation bug); continue it with harnesskit, which appends to it safely")


@click.command("migrate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="Only report what would be migrated (exit 1 if anything would).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar (one shows on a terminal's stderr after 1 s).")
def migrate(files: tuple[Path, ...], check: bool, quiet: bool) -> None:
    """Rewrite legacy (pi v1, pi v2, tutorial v1) FILES as pi v3.

    Each file is written anew beside the old one, fsynced, the original kept as FILE.bak, then
    renamed into place atomically. v3 files are left as they are. A file that cannot be read fully
    (an unreadable or torn line) is refused and not touched. A file without an assistant reply
    is migrated with a warning: pi damages such a file when it continues it.

    \b
    Examples:
      harnesskit migrate old-session.jsonl
      harnesskit migrate --check sessions/*.jsonl
    """
    refused = 0
    pending = 0
    for path in files:
        try:
            regular(path, pipes=check)  # --check reads the header only
            if check:
                with progress(file_size(path), str(path), quiet) as report:
                    result, _ = plan(path, report)
                if result.needed:
                    pending += 1
                    echo(f"would migrate {spelled(str(path))} ({result.source} → pi v3, {result.entries} entries)")
                    if not result.replied:
                        warn(NO_REPLY.format(path=path))
                else:
                    echo(f"{spelled(str(path))}: already pi v3")
                continue
            with progress(file_size(path), str(path), quiet) as report:
                result = migrate_file(path, report)
        except Fail as error:  # a pipe or a device: this one, not the others
            refused += 1
            report_error(error.format_message())
            continue
        except (MigrationRefused, SessionLocked) as error:
            refused += 1
            hint = "; try again when it is closed" if isinstance(error, SessionLocked) else ""
            report_error(f"{error}{hint}")
            continue
        except OSError as error:
            refused += 1
            report_error(f"{path}: {error.strerror or error}")
            continue
        if result.needed:
            echo(f"migrated {spelled(str(path))} ({result.source} → pi v3, {result.entries} entries; original kept as "
                 f"{spelled(path.name)}.bak)")
            if not result.replied:
                warn(NO_REPLY.format(path=path))
        else:
            echo(f"{spelled(str(path))}: already pi v3, unchanged")
    if refused:
        raise SystemExit(USAGE)
    if check and pending:
        raise SystemExit(FOUND_PROBLEMS)
