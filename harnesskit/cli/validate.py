"""`harnesskit validate`: JSON Schema + structural checks of session files, for CI."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click

from harnesskit.session import store
from harnesskit.session.check import FileReport, check_file, expand_paths

from . import reporters
from .errors import FOUND_PROBLEMS, USAGE, Fail, report_error
from .progress import file_size, progress
from .refs import regular
from .screen import echo

STDIN = "<stdin>"
#: warnings --strict leaves warnings: other harnesses' formats gain line types every month
STAYS_WARNING = frozenset({"unknown-line-type"})


def _strict(report: FileReport) -> FileReport:
    report.problems = [p if p.code in STAYS_WARNING else replace(p, severity="error") for p in report.problems]
    return report


@contextmanager
def _stdin_copy() -> Iterator[str]:
    """Standard input as a path check_file can seek in: an anonymous temporary file (unlinked
    from the start, gone when closed), filled in chunks so no size of input is held in memory."""
    try:
        stdin = click.get_binary_stream("stdin")
    except RuntimeError:  # closed (`<&-`): Python made sys.stdin None
        raise OSError(9, "it is closed") from None
    with tempfile.TemporaryFile() as copy:
        shutil.copyfileobj(stdin, copy, 1 << 20)
        copy.flush()
        yield f"/proc/self/fd/{copy.fileno()}"


def _check_stdin(source: str | None, strict: bool) -> FileReport:
    try:
        with _stdin_copy() as path:
            report = check_file(path, workers=1, fmt=source, strict=strict)
    except OSError as error:
        raise Fail(f"standard input: cannot read it: {error.strerror or error}") from None
    report.file = STDIN
    report.problems = [replace(p, file=STDIN) for p in report.problems]
    return report


def _path_of(raw: str) -> Path | None:
    """A path as given, else the session an id prefix or a name names; None when nothing is there."""
    if Path(raw).exists():
        return regular(Path(raw))
    try:
        return store.find_session(raw, store.session_dir(os.getcwd()))
    except store.SessionRefError as error:
        if error.matches:
            raise Fail(str(error)) from None
        return None


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--strict", is_flag=True, help="Treat warnings (legacy versions, unknown types…) as errors.")
@click.option("--format", "fmt", type=click.Choice(list(reporters.REPORTERS), case_sensitive=False), default="text",
              show_default=True, help="text for people, json for scripts, github for workflow annotations.")
@click.option("-q", "--quiet", is_flag=True, help="Print the problems only (nothing when all is well).")
@click.option("-v", "--verbose", is_flag=True, help="Print every file checked, with its counts.")
@click.option("--max-errors", type=click.IntRange(min=0), metavar="N",
              help=f"List at most N problems (counts stay the totals); github's default is {reporters.GITHUB_CAP}.")
@click.option("--from", "source", type=click.Choice(["pi", "claude", "codex"]), default=None,
              help="Read every file as this harness's format (default: told by the first lines).")
def validate(paths: tuple[str, ...], strict: bool, fmt: str, quiet: bool, verbose: bool,
             max_errors: int | None, source: str | None) -> None:
    """Check session files against the JSON Schemas and the structural rules.

    PATHS are files or directories (searched recursively for *.jsonl), session id prefixes or
    session names (set with /name); - reads standard input.
    Exit 0 when every file is clean, 1 when a problem was found or no session file was found at
    all (a CI step that checks nothing must not pass), 2 when a path does not exist.

    \b
    Examples:
      harnesskit validate session.jsonl
      harnesskit validate ~/.harnesskit/sessions --strict -q
      harnesskit validate sessions/ --format github     # in a GitHub Actions step
      harnesskit validate sessions/ --format json | jq .status
      cat session.jsonl | harnesskit validate -
      harnesskit validate sessions/ -v --max-errors 20
      harnesskit validate ~/.claude/projects/-home-me-proj/     # Claude Code transcripts
      harnesskit validate --from codex rollout.jsonl
    """
    if quiet and verbose:
        raise Fail("-q and -v contradict each other; give one")
    missing: list[str] = []
    reports: list[FileReport] = []
    for raw in paths:
        if raw == "-":
            reports.append(_check_stdin(source, strict))
            continue
        found = _path_of(raw)
        if found is None:
            missing.append(raw)
            continue
        for file in expand_paths([str(found)]):
            with progress(file_size(file), str(file)) as on_progress:
                reports.append(check_file(file, fmt=source, strict=strict, on_progress=on_progress))
    if not reports and not missing:
        raise Fail(f"no session files under {', '.join(paths)}", FOUND_PROBLEMS)
    outcome = reporters.Outcome([_strict(r) for r in reports] if strict else reports, missing)
    options = reporters.Options(verbosity=0 if quiet else 2 if verbose else 1, max_errors=max_errors)
    if reports:
        for line in reporters.REPORTERS[fmt.lower()](outcome, options):
            echo(line)
    for path in missing:
        report_error(f"{path}: no such file or directory")
    if missing:
        raise SystemExit(USAGE)
    if not outcome.ok:
        raise SystemExit(FOUND_PROBLEMS)
