"""validate's three output formats, as check-jsonschema has them: each reporter turns one outcome
into the lines to print, so each can be tested without a file or a command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harnesskit.session.check import FileReport, Problem
from harnesskit.text import spelled

from . import render

GITHUB_CAP = 10  # GitHub shows only the first 10 errors (and 10 warnings) of a step


@dataclass
class Outcome:
    """What one validate run found, in every file it checked."""

    reports: list[FileReport]
    missing: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Problem]:
        return [p for r in self.reports for p in r.problems]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    @property
    def entries(self) -> int:
        return sum(r.entries for r in self.reports)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.missing


@dataclass(frozen=True)
class Options:
    verbosity: int = 1  # 0: problems only (-q), 1: problems and the summary, 2: each file too (-v)
    max_errors: int | None = None  # list at most this many problems (the counts stay the totals)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(outcome: Outcome) -> str:
    return (f"checked {_plural(len(outcome.reports), 'file')}, {outcome.entries} entries: "
            f"{_plural(len(outcome.errors), 'error')}, {_plural(len(outcome.warnings), 'warning')}")


def _file_line(report: FileReport) -> str:
    errors, warnings = report.count("error"), report.count("warning")
    state = "ok" if not errors and not warnings else f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}"
    return f"{spelled(report.file)}: {state} ({report.dialect or 'unread'}, {report.entries} entries)"


def problem_text(problem: Problem) -> str:
    return f"{spelled(problem.file)}:{problem.line}: {problem.severity}: {problem.path}: {problem.message}"


def _capped(problems: list[Problem], cap: int | None) -> tuple[list[Problem], int]:
    """The problems to show and how many are left out."""
    if cap is None or len(problems) <= cap:
        return problems, 0
    return problems[:cap], len(problems) - cap


def text(outcome: Outcome, options: Options) -> list[str]:
    lines: list[str] = []
    shown, hidden = _capped(outcome.problems, options.max_errors)
    if options.verbosity >= 2:
        wanted = {id(p) for p in shown}
        for report in outcome.reports:
            lines.append(_file_line(report))
            lines.extend(f"  {problem_text(p)}" for p in report.problems if id(p) in wanted)
    else:
        lines.extend(problem_text(p) for p in shown)
    if hidden:
        lines.append(f"... and {_plural(hidden, 'more problem')} not shown (--max-errors {options.max_errors})")
    if options.verbosity >= 1:
        lines.append(summary_line(outcome))
    return lines


def _github_escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def annotation(problem: Problem) -> str:
    kind = "error" if problem.severity == "error" else "warning"
    props = f"file={_github_escape(problem.file, True)}"
    if problem.line > 0:
        props += f",line={problem.line}"
    return f"::{kind} {props}::{_github_escape(f'{problem.path}: {problem.message}')}"


def github(outcome: Outcome, options: Options) -> list[str]:
    """Workflow annotations, at most --max-errors (default 10: GitHub drops the rest), then one
    notice with the totals when some were left out, so a long list never hides how bad it is."""
    cap = GITHUB_CAP if options.max_errors is None else options.max_errors
    shown, hidden = _capped(outcome.problems, cap)
    lines = [annotation(p) for p in shown]
    if hidden:
        lines.append(f"::notice::{_github_escape(summary_line(outcome))} (first {len(shown)} shown)")
    if options.verbosity >= 1:
        lines.append(summary_line(outcome))
    return lines


def json_report(outcome: Outcome, options: Options) -> list[str]:
    """One JSON document; `errors`/`warnings` list at most --max-errors problems, `summary` the totals."""
    shown, hidden = _capped(outcome.problems, options.max_errors)
    errors, warnings = outcome.errors, outcome.warnings
    doc = {
        "status": "ok" if outcome.ok else "fail",
        "files_checked": len(outcome.reports),
        "files": [{"file": r.file, "dialect": r.dialect, "entries": r.entries,
                   "errors": r.count("error"), "warnings": r.count("warning")} for r in outcome.reports],
        "entries": outcome.entries,
        "errors": [p.as_dict() for p in shown if p.severity == "error"],
        "warnings": [p.as_dict() for p in shown if p.severity != "error"],
        "truncated": hidden > 0,
        "summary": {"files": len(outcome.reports), "entries": outcome.entries, "errors": len(errors),
                    "warnings": len(warnings), "missing": outcome.missing},
    }
    return [render.json_line(doc)]


REPORTERS: dict[str, Callable[[Outcome, Options], list[str]]] = {
    "text": text,
    "json": json_report,
    "github": github,
}
