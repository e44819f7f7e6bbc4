"""`validate` for other harnesses' files: their reader feeds the same structural checks as pi's, and
what they would trip on is said in their terms (what the harness does with it).

One streaming pass, as for pi files: entries are checked and dropped; what is kept is what the
checks need (ids, parents, tool call ids) plus the reader's own small state.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from .. import schemas
from ..check import Problem, _check_entry, _finish, _State
from ..reader import Diagnostic, iter_lines, read_records
from . import DIALECTS, reader_for


def check_foreign(fp: BinaryIO, state: _State, fmt: str, strict: bool = False) -> None:
    path = Path(state.report.file)
    reader = reader_for(fmt, path)
    header = False
    for item in reader.convert(read_records(iter_lines(fp))):
        if isinstance(item, Diagnostic):
            if item.severity == "info":
                if strict:  # formats change monthly: an unknown line type is a remark, never an error
                    state.add(item.line, "$.type", item.reason, item.code, "warning")
                continue
            state.add(item.line, "$", item.reason, item.code, item.severity)
            continue
        if not header:
            header = True
            state.report.dialect = DIALECTS[fmt]
            for problem in schemas.header_problems(item.obj):
                state.add(0, problem.path, f"synthesized header: {problem.message}", "schema")
            continue
        state.report.entries += 1
        _check_entry(state, item.obj, item.line)
    missing = {parent: line for line, _id, parent in state.forward if parent not in state.line_of}
    _finish(state)
    if fmt == "claude":
        _claude_references(state, reader, path, missing)
    state.report.problems.sort(key=lambda p: (p.line, p.severity != "error"))


def _claude_references(state: _State, reader, path: Path, missing: dict[str, int]) -> None:  # noqa: ANN001
    """Dangling parentUuids and summary leafUuids: look in the other transcripts of the project
    (and a subagent's parent transcript) before calling them dangling."""
    from .claude import find_elsewhere

    targets = set(missing) | set(reader.summary_targets)
    found = find_elsewhere(path, targets) if targets else {}
    by_line = {line: parent for parent, line in missing.items()}
    problems = []
    for problem in state.report.problems:
        if problem.code == "dangling-parent":
            key = "logicalParentUuid" if problem.line in reader.logical else "parentUuid"
            problem = _parent_problem(problem, key, by_line.get(problem.line, "?"), found, reader.sidechain_only)
        problems.append(problem)
    for target, line in reader.summary_targets.items():
        if target not in found:  # one naming another transcript of the project is how Claude Code titles them
            problems.append(Problem(state.report.file, line, "$.leafUuid",
                                    f"summary leafUuid {target!r} names no message here nor in the transcripts "
                                    "beside it (the transcript it titles is gone)", "warning", "dangling-summary"))
    state.report.problems = problems


def _parent_problem(problem: Problem, key: str, parent: str, found: dict[str, Path], sidechain: bool) -> Problem:
    where = found.get(parent)
    path = f"$.{key}"
    if where is not None:
        return replace(problem, path=path, severity="warning", code="foreign-parent",
                       message=f"{key} {parent!r} names a line of another transcript ({where.name!r}): this one "
                       "goes on from it")
    if sidechain:
        return replace(problem, path=path, severity="warning",
                       message=f"{key} {parent!r} names no line here nor in the transcripts beside it (a "
                       "subagent's first lines hang off its parent transcript, which is not there)")
    return replace(problem, path=path,
                   message=f"{key} {parent!r} names no line of this transcript: a resume walks parentUuid back "
                   "from the last message and stops here, so what came before is lost from the context")
