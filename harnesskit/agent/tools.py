"""The tools a model may call: calc, read, ls.

Each one is deliberately small and bounded: a model's arguments are untrusted input, so calc never
evaluates Python and read/ls never leave the working directory.
"""

from __future__ import annotations

import ast
import errno
import heapq
import itertools
import math
import operator
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ToolError(Exception):
    """A tool refused or failed; the message is shown to the model as an isError toolResult."""


@dataclass(frozen=True)
class Tool:
    """A callable tool plus the JSON Schema the model sees."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], Path], str]


# ---------------------------------------------------------------- calc

MAX_EXPRESSION_CHARS = 2000
MAX_DIGITS = 1000  # operands and results, so nothing can eat the CPU or memory
_LOG10_2 = math.log10(2)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _digits(value: int) -> int:
    """Decimal digits of an int, estimated from bits (str() of a huge int is itself slow)."""
    return int(abs(value).bit_length() * _LOG10_2) + 1


def _check_number(value: Any) -> int | float:
    if isinstance(value, complex):
        raise ToolError("the result is a complex number (e.g. a fractional power of a negative number)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result is too large for a float")
    if isinstance(value, int) and _digits(value) > MAX_DIGITS:
        raise ToolError(f"numbers are limited to {MAX_DIGITS} digits")
    return value


def _power(base: int | float, exponent: int | float) -> int | float:
    """``base ** exponent``, refused before computing when the result would be enormous."""
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1:
        if abs(exponent) * math.log10(abs(base)) > MAX_DIGITS:
            raise ToolError(f"{base}**{exponent} is too large (results are limited to {MAX_DIGITS} digits)")
    try:
        return base**exponent
    except OverflowError:
        raise ToolError(f"{base}**{exponent} is too large") from None


def _constant(node: ast.Constant) -> int | float:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "strings" if isinstance(value, str | bytes) else type(value).__name__ + " values"
        raise ToolError(f"only numbers are allowed, not {kind}")
    return _check_number(value)


def _apply(op: ast.operator, left: int | float, right: int | float) -> int | float:
    try:
        if isinstance(op, ast.Pow):
            return _check_number(_power(left, right))
        return _check_number(_BINARY[type(op)](left, right))
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("the result is too large for a float") from None


def _eval(tree: ast.AST) -> int | float:
    """Numbers and arithmetic only, walked in post-order with an explicit stack.

    The work is bounded by the expression's size (MAX_EXPRESSION_CHARS, so a few thousand nodes)
    and by MAX_DIGITS on every intermediate value, never by its shape: a flat 1000-term sum is a
    1000-deep tree, which must evaluate like any other. Left operands are evaluated (and refused)
    before right ones, as a recursive walk would."""
    root = tree.body if isinstance(tree, ast.Expression) else tree
    values: list[int | float] = []
    stack: list[tuple[ast.AST, bool]] = [(root, False)]  # (node, its operands are already on `values`)
    while stack:
        node, ready = stack.pop()
        if isinstance(node, ast.Constant):
            values.append(_constant(node))
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            if ready:
                values.append(_check_number(_UNARY[type(node.op)](values.pop())))
            else:
                stack += [(node, True), (node.operand, False)]
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if ready:
                right = values.pop()
                values.append(_apply(node.op, values.pop(), right))
            else:
                stack += [(node, True), (node.right, False), (node.left, False)]
        else:
            raise ToolError(_describe_refusal(node))
    return values[0]


def _describe_refusal(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"names are not allowed ({node.id!r}); use numbers and + - * / // % ** only"
    if isinstance(node, ast.Call):
        return "function calls are not allowed; use numbers and + - * / // % ** only"
    if isinstance(node, ast.Attribute):
        return "attribute access is not allowed; use numbers and + - * / // % ** only"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"operator {type(node.op).__name__} is not supported; use + - * / // % ** only"
    return f"{type(node).__name__} is not allowed; use numbers and + - * / // % ** only"


def format_number(value: int | float) -> str:
    """Integers (and integral floats) without ".0", so 12*8 reads "96" and 10/2 reads "5"."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression safely and return the result as text."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError('expression must be a non-empty string, e.g. "12*8"')
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is too long ({len(expression)} characters, limit {MAX_EXPRESSION_CHARS})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        shown = _shorten(expression.strip())
        raise ToolError(f"not a valid arithmetic expression ({exc.msg}): {shown!r}") from None
    except ValueError as exc:  # an int literal beyond Python's own digit limit
        raise ToolError(f"numbers are limited to {MAX_DIGITS} digits ({exc})") from None
    except (RecursionError, MemoryError):  # the parser's own limit (not reached within the length cap)
        raise ToolError("expression is nested too deeply for the parser") from None
    return format_number(_eval(tree))


def _run_calc(arguments: dict[str, Any], cwd: Path) -> str:
    return calculate(arguments.get("expression"))  # type: ignore[arg-type]


# ---------------------------------------------------------------- read / ls

MAX_READ_BYTES = 256 * 1024
MAX_LS_ENTRIES = 1000
MAX_LS_SCAN = 100_000


def resolve_inside(cwd: Path, path: Any, *, default: str | None = None) -> Path:
    """Resolve ``path`` against ``cwd``, refusing anything (``..``, absolute, symlink) outside it."""
    if path is None or path == "":
        if default is None:
            raise ToolError("path is required")
        path = default
    if not isinstance(path, str):
        raise ToolError("path must be a string")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    root = cwd.resolve()
    target = (root / path).resolve()
    if target != root and not target.is_relative_to(root):
        raise ToolError(f"{path}: outside the working directory; only paths under {root} are allowed")
    return target


def _decode(data: bytes, truncated: bool, path: str) -> str:
    if b"\x00" in data:
        raise ToolError(f"{path}: binary file, not shown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut in the middle of a multi-byte character at the size cap is not binary.
        if truncated and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8", errors="replace")
        raise ToolError(f"{path}: not UTF-8 text (binary?), not shown") from None


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_inside(cwd: Path, raw: Any, *, directory: bool, default: str | None = None) -> int:
    """A descriptor of the file (or directory) ``raw`` names under ``cwd``, proven to be inside it.

    Checking a path and then opening it races with whoever can write the tree: a component swapped
    for a symlink in between would redirect the open (to /etc/passwd, say). So the check is made
    about the descriptor, after the open: the path is resolved and confined, opened without
    following a final symlink (and without blocking on a FIFO), and then resolved and confined
    once more; the descriptor must be the very file (st_dev, st_ino) that the second resolution
    names, and of the right kind. Whatever was swapped, before or after the open, the file read
    is one that lay inside the root at a moment after it was opened. Portable (no /proc needed).
    """
    target = resolve_inside(cwd, raw, default=default)
    shown = raw if raw else default
    try:
        fd = os.open(target, _OPEN_FLAGS | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except FileNotFoundError:
        raise ToolError(f"{shown}: no such {'directory' if directory else 'file'}") from None
    except OSError as exc:
        # O_NOFOLLOW met a symlink: ELOOP, or ENOTDIR when a directory was asked for (Linux)
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and os.path.islink(target)):
            raise ToolError(f"{shown}: changed while being opened (now a symlink), not shown") from None
        if exc.errno == errno.ENOTDIR:  # the path itself (ls) or a component of it (read) is a file
            raise ToolError(f"{shown}: not a directory (use read)" if directory else f"{shown}: no such file") from None
        raise ToolError(f"{shown}: cannot open: {exc.strerror or exc}") from None
    try:
        opened = os.fstat(fd)
        if directory and not stat.S_ISDIR(opened.st_mode):
            raise ToolError(f"{shown}: not a directory (use read)")
        if not directory and stat.S_ISDIR(opened.st_mode):
            raise ToolError(f"{shown}: is a directory (use ls)")
        if not directory and not stat.S_ISREG(opened.st_mode):
            raise ToolError(f"{shown}: not a regular file")
        try:
            now = os.stat(resolve_inside(cwd, raw, default=default))
        except OSError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
            raise ToolError(f"{shown}: changed while being opened, not shown")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _run_read(arguments: dict[str, Any], cwd: Path) -> str:
    raw = arguments.get("path")
    fd = open_inside(cwd, raw, directory=False)
    try:
        size = os.fstat(fd).st_size
        chunks: list[bytes] = []
        remaining = MAX_READ_BYTES + 1
        while remaining > 0 and (chunk := os.read(fd, remaining)):
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise ToolError(f"{raw}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    truncated = len(data) > MAX_READ_BYTES
    text = _decode(data[:MAX_READ_BYTES], truncated, str(raw))
    if truncated:
        text += f"\n[truncated: showing the first {MAX_READ_BYTES} of {max(size, len(data))} bytes]"
    return text


def _run_ls(arguments: dict[str, Any], cwd: Path) -> str:
    """The first MAX_LS_ENTRIES names in order, of at most MAX_LS_SCAN entries read: a directory
    of millions costs bounded time and memory."""
    raw = arguments.get("path") or "."
    fd = open_inside(cwd, raw, directory=True, default=".")
    try:
        with os.scandir(fd) as entries:
            batch = list(itertools.islice(entries, MAX_LS_SCAN))
            complete = next(entries, None) is None
    except OSError as exc:
        raise ToolError(f"{raw}: cannot list: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if not batch:
        return "(empty directory)"
    shown = heapq.nsmallest(MAX_LS_ENTRIES, (entry.name + ("/" if _is_dir(entry) else "") for entry in batch))
    if len(batch) > len(shown):
        shown.append(f"[{len(batch) - len(shown)} more entries not shown]")
    if not complete:
        shown.append(f"[listing stopped after {MAX_LS_SCAN} entries; more not read]")
    return "\n".join(shown)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


# ---------------------------------------------------------------- registry

CALC = Tool(
    name="calc",
    description="Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses.",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": 'e.g. "12*8" or "(2+3)**2 / 4"'}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    run=_run_calc,
)
READ = Tool(
    name="read",
    description="Read a UTF-8 text file under the working directory (first 256 KiB).",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "path relative to the working directory"}},
        "required": ["path"],
        "additionalProperties": False,
    },
    run=_run_read,
)
LS = Tool(
    name="ls",
    description="List a directory under the working directory; directories end with '/'.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": 'directory, default "."'}},
        "additionalProperties": False,
    },
    run=_run_ls,
)

TOOLS: dict[str, Tool] = {tool.name: tool for tool in (CALC, READ, LS)}


def select_tools(names: list[str]) -> list[Tool]:
    """The named tools in the order given (duplicates dropped); unknown names are a ValueError."""
    unknown = [name for name in names if name not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tool {', '.join(map(repr, unknown))} (available: {', '.join(TOOLS)})")
    return [TOOLS[name] for name in dict.fromkeys(names)]
