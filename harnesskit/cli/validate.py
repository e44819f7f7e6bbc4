"""`harnesskit validate`: JSON Schema + structural checks of session files, for CI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from harnesskit.session.check import FileReport, Problem, check_file, expand_paths

from . import render
from .errors import FOUND_PROBLEMS, USAGE, report_error
from .progress import file_size, progress
from .screen import echo

#: warnings --strict leaves warnings: other harnesses' formats gain line types every month
STAYS_WARNING = frozenset({"unknown-line-type"})


def _strict(report: FileReport) -> FileReport:
    report.problems = [p if p.code in STAYS_WARNING else replace(p, severity="error") for p in report.problems]
    return report


def _github_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _text(problem: Problem) -> str:
    return f"{problem.file}:{problem.line}: {problem.severity}: {problem.path}: {problem.message}"


def _github(problem: Problem) -> str:
    kind = "error" if problem.severity == "error" else "warning"
    props = f"file={_github_escape(problem.file, True)}"
    if problem.line > 0:
        props += f",line={problem.line}"
    return f"::{kind} {props}::{_github_escape(f'{problem.path}: {problem.message}')}"


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--strict", is_flag=True, help="Treat warnings (legacy versions, unknown types…) as errors.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text for people, json for scripts, github for workflow annotations.")
@click.option("--from", "source", type=click.Choice(["pi", "claude", "codex"]), default=None,
              help="Read every file as this harness's format (default: told by the first lines).")
def validate(paths: tuple[str, ...], strict: bool, fmt: str, source: str | None) -> None:
    """Check session files against the JSON Schemas and the structural rules.

    PATHS are files or directories (searched recursively for *.jsonl). Exit 0 when every file is
    clean, 1 when a problem was found, 2 when a path does not exist.

    \b
    Examples:
      harnesskit validate session.jsonl
      harnesskit validate ~/.harnesskit/sessions --strict
      harnesskit validate sessions/ --format github     # in a GitHub Actions step
      harnesskit validate sessions/ --format json | jq .summary
      harnesskit validate ~/.claude/projects/-home-me-proj/     # Claude Code transcripts
      harnesskit validate --from codex rollout.jsonl
    """
    missing = [p for p in paths if not Path(p).exists()]
    files = expand_paths([p for p in paths if p not in missing])
    reports: list[FileReport] = []
    for file in files:
        with progress(file_size(file), str(file)) as on_progress:
            report = check_file(file, fmt=source, strict=strict, on_progress=on_progress)
        reports.append(_strict(report) if strict else report)
    problems = [p for r in reports for p in r.problems]
    errors = [p for p in problems if p.severity == "error"]
    warnings = [p for p in problems if p.severity != "error"]
    entries = sum(r.entries for r in reports)
    summary = {"files": len(reports), "entries": entries, "errors": len(errors), "warnings": len(warnings),
               "missing": missing}

    if fmt == "json":
        echo(render.json_line({
            "files": [{"file": r.file, "dialect": r.dialect, "entries": r.entries,
                       "errors": r.count("error"), "warnings": r.count("warning")} for r in reports],
            "entries": entries,
            "errors": [p.as_dict() for p in errors],
            "warnings": [p.as_dict() for p in warnings],
            "summary": summary,
        }))
    else:
        line = _github if fmt == "github" else _text
        for problem in problems:
            echo(line(problem))
        s = "" if len(reports) == 1 else "s"
        echo(f"checked {len(reports)} file{s}, {entries} entries: {len(errors)} error"
                   f"{'' if len(errors) == 1 else 's'}, {len(warnings)} warning{'' if len(warnings) == 1 else 's'}")
    for path in missing:
        report_error(f"{path}: no such file or directory")
    if missing:
        raise SystemExit(USAGE)
    if errors:
        raise SystemExit(FOUND_PROBLEMS)
