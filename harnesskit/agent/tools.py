"""The tools a model may call: calc, read, ls.

Each one is deliberately small and bounded: a model's arguments are untrusted input, so calc never
evaluates Python and read/ls never leave the working directory.
"""

from __future__ import annotations

import ast
import math
import operator
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


def _eval(node: ast.AST) -> int | float:
    """Walk the syntax tree, allowing numbers and arithmetic only."""
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "strings" if isinstance(value, str | bytes) else type(value).__name__ + " values"
            raise ToolError(f"only numbers are allowed, not {kind}")
        return _check_number(value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check_number(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        try:
            if isinstance(node.op, ast.Pow):
                result = _power(left, right)
            else:
                result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("the result is too large for a float") from None
        return _check_number(result)
    raise ToolError(_describe_refusal(node))


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
    except (RecursionError, MemoryError):
        raise ToolError("expression is nested too deeply") from None
    try:
        return format_number(_eval(tree))
    except RecursionError:
        raise ToolError("expression is nested too deeply") from None


def _run_calc(arguments: dict[str, Any], cwd: Path) -> str:
    return calculate(arguments.get("expression"))  # type: ignore[arg-type]


# ---------------------------------------------------------------- read / ls

MAX_READ_BYTES = 256 * 1024
MAX_LS_ENTRIES = 1000


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


def _run_read(arguments: dict[str, Any], cwd: Path) -> str:
    raw = arguments.get("path")
    target = resolve_inside(cwd, raw)
    if not target.exists():
        raise ToolError(f"{raw}: no such file")
    if target.is_dir():
        raise ToolError(f"{raw}: is a directory (use ls)")
    if not target.is_file():
        raise ToolError(f"{raw}: not a regular file")
    try:
        size = target.stat().st_size
        with target.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"{raw}: cannot read: {exc.strerror or exc}") from None
    truncated = len(data) > MAX_READ_BYTES
    text = _decode(data[:MAX_READ_BYTES], truncated, str(raw))
    if truncated:
        text += f"\n[truncated: showing the first {MAX_READ_BYTES} of {max(size, len(data))} bytes]"
    return text


def _run_ls(arguments: dict[str, Any], cwd: Path) -> str:
    raw = arguments.get("path") or "."
    target = resolve_inside(cwd, raw, default=".")
    if not target.exists():
        raise ToolError(f"{raw}: no such directory")
    if not target.is_dir():
        raise ToolError(f"{raw}: not a directory (use read)")
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
    except OSError as exc:
        raise ToolError(f"{raw}: cannot list: {exc.strerror or exc}") from None
    if not names:
        return "(empty directory)"
    shown = names[:MAX_LS_ENTRIES]
    if len(names) > MAX_LS_ENTRIES:
        shown.append(f"[{len(names) - MAX_LS_ENTRIES} more entries not shown]")
    return "\n".join(shown)


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
