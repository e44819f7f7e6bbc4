"""The agent's tools: calc is exact and bounded, read/ls never leave the working directory."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harnesskit.agent import tools
from harnesskit.agent.tools import (
    MAX_EXPRESSION_CHARS,
    MAX_READ_BYTES,
    TOOLS,
    ToolError,
    calculate,
    select_tools,
)


def run(name: str, arguments: dict, cwd: Path) -> str:
    return TOOLS[name].run(arguments, cwd)


# ---------------------------------------------------------------- calc


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("12*8", "96"),
        ("2+3*4", "14"),
        ("(2+3)*4", "20"),
        ("2**3**2", "512"),  # right-associative, as in Python
        ("-2**2", "-4"),  # ** binds tighter than unary minus
        ("(-2)**2", "4"),
        ("7//2", "3"),
        ("-7//2", "-4"),
        ("7 % 3", "1"),
        ("-7 % 3", "2"),
        ("10/4", "2.5"),
        ("10/2", "5"),  # integral float prints without ".0"
        ("1.5*2", "3"),
        ("0.1+0.2", "0.30000000000000004"),
        ("+5 - -3", "8"),
        ("2**-1", "0.5"),
        (" 1 + 1 ", "2"),
        ("2**100", str(2**100)),
        ("7.5 // 2", "3"),
    ],
)
def test_calc_arithmetic(expression: str, expected: str) -> None:
    assert calculate(expression) == expected


def test_calc_tool_reads_expression_argument(tmp_path: Path) -> None:
    assert run("calc", {"expression": "12*8"}, tmp_path) == "96"
    with pytest.raises(ToolError, match="expression"):
        run("calc", {}, tmp_path)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9", "too large"),
        ("10**100000", "too large"),
        ("1" * 10_000, "too long"),
        ("1" * 1500, "1000 digits"),
        ("10**999 * 10**999", "1000 digits"),
        ("x", "names are not allowed"),
        ("x + 1", "names are not allowed"),
        ("abs(-1)", "function calls"),
        ("__import__('os').system('true')", "function calls"),
        ("(1).real", "attribute access"),
        ("'a' * 3", "strings"),
        ("b'a'", "strings"),
        ("True + 1", "bool"),
        ("1/0", "division by zero"),
        ("1//0", "division by zero"),
        ("1 % 0", "division by zero"),
        ("1.0/0.0", "division by zero"),
        ("(-8)**0.5", "complex"),
        ("1e400", "too large"),
        ("2.0**100000", "too large"),
        ("[1, 2]", "not allowed"),
        ("1 < 2", "not allowed"),
        ("3 @ 4", "not supported"),
        ("1 +", "not a valid arithmetic expression"),
        ("12*8; 1", "not a valid arithmetic expression"),
        ("", "non-empty"),
        ("(" * 500 + "1" + ")" * 500, "too many nested parentheses"),
        ("(" * 201 + "1" + ")" * 201, "too many nested parentheses"),  # the parser's limit, said exactly
    ],
)
def test_calc_refusals(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        calculate(expression)


def test_calc_refusals_are_fast() -> None:
    start = time.perf_counter()
    for expression in ("9**9**9", "10**100000", "(10**999)**(10**999)", "2**2**2**2**2**2"):
        with pytest.raises(ToolError):
            calculate(expression)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("+".join(["1"] * 999), "999"),  # a flat sum is a 999-deep tree: only its size may count
        ("+".join(["1"] * 1000), "1000"),
        ("-".join(["5"] * 1000), str(5 - 5 * 999)),
        ("*".join(["1"] * 1000), "1"),
        ("-" * (MAX_EXPRESSION_CHARS - 1) + "1", "-1"),  # unary nesting up to the length cap
        ("(" * 199 + "2*3" + ")" * 199, "6"),
        ("1+(" * 199 + "1" + ")" * 199, "200"),
        ("*".join(["7"] * 999), str(7**999)),  # 845 digits: within MAX_DIGITS
    ],
)
def test_calc_bounds_size_not_shape(expression: str, expected: str) -> None:
    assert len(expression) <= MAX_EXPRESSION_CHARS
    assert calculate(expression) == expected


@pytest.mark.parametrize("expression", [
    "2**" * 600 + "1", "+".join(["9" * 900] * 2) + "*" + "9" * 200, "-(" * 199 + "1" + ")" * 199 + "/0",
    "1" + "**1" * 666, "((" * 100 + "x" + "))" * 100, "+".join(["1"] * 999) + "+a",
])
def test_calc_any_shape_is_a_result_or_an_exact_refusal(expression: str) -> None:
    try:
        calculate(expression)
    except ToolError as error:
        assert "nested too deeply" not in str(error)


# ---------------------------------------------------------------- read / ls


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "README.md").write_text("# Project\nhello\n", encoding="utf-8")
    (root / ".hidden").write_text("x", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    return root


def test_read_text_file(tree: Path) -> None:
    assert run("read", {"path": "README.md"}, tree) == "# Project\nhello\n"
    assert run("read", {"path": "src/main.py"}, tree) == "print('hi')\n"
    assert run("read", {"path": "./src/../README.md"}, tree).startswith("# Project")
    assert run("read", {"path": str(tree / "README.md")}, tree).startswith("# Project")  # absolute, inside


@pytest.mark.parametrize("path", ["../secret.txt", "src/../../secret.txt", "/etc/passwd", ".."])
def test_read_refuses_paths_outside_cwd(tree: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the working directory"):
        run("read", {"path": path}, tree)


def test_read_refuses_symlink_resolving_outside(tree: Path) -> None:
    (tree / "link.txt").symlink_to(tree.parent / "secret.txt")
    (tree / "linkdir").symlink_to(tree.parent)
    with pytest.raises(ToolError, match="outside"):
        run("read", {"path": "link.txt"}, tree)
    with pytest.raises(ToolError, match="outside"):
        run("read", {"path": "linkdir/secret.txt"}, tree)
    with pytest.raises(ToolError, match="outside"):
        run("ls", {"path": "linkdir"}, tree)


def test_read_allows_symlink_inside(tree: Path) -> None:
    (tree / "alias.md").symlink_to(tree / "README.md")
    assert run("read", {"path": "alias.md"}, tree).startswith("# Project")


def test_read_errors_are_readable(tree: Path) -> None:
    with pytest.raises(ToolError, match="no such file"):
        run("read", {"path": "missing.txt"}, tree)
    with pytest.raises(ToolError, match="is a directory"):
        run("read", {"path": "src"}, tree)
    with pytest.raises(ToolError, match="path is required"):
        run("read", {}, tree)
    with pytest.raises(ToolError, match="must be a string"):
        run("read", {"path": 3}, tree)


def test_read_refuses_binary(tree: Path) -> None:
    (tree / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (tree / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(ToolError, match="binary"):
        run("read", {"path": "image.bin"}, tree)
    with pytest.raises(ToolError, match="not UTF-8"):
        run("read", {"path": "latin1.txt"}, tree)


def test_read_truncates_large_files_with_a_note(tree: Path) -> None:
    # A multi-byte character straddles the cap: the cut must not be mistaken for binary.
    body = "a" * (MAX_READ_BYTES - 1) + "é" + "tail" * 1000
    (tree / "big.txt").write_text(body, encoding="utf-8")
    text = run("read", {"path": "big.txt"}, tree)
    assert text.startswith("a" * 1000)
    assert "tail" not in text
    size = len(body.encode("utf-8"))
    assert text.endswith(f"[truncated: showing the first {MAX_READ_BYTES} of {size} bytes]")


def test_read_small_unicode_file(tree: Path) -> None:
    (tree / "zh.txt").write_text("你好，世界\n", encoding="utf-8")
    assert run("read", {"path": "zh.txt"}, tree) == "你好，世界\n"


def test_ls_sorted_with_dir_suffix(tree: Path) -> None:
    assert run("ls", {}, tree) == ".hidden\nREADME.md\nsrc/"
    assert run("ls", {"path": "."}, tree) == ".hidden\nREADME.md\nsrc/"
    assert run("ls", {"path": "src"}, tree) == "main.py"
    (tree / "empty").mkdir()
    assert run("ls", {"path": "empty"}, tree) == "(empty directory)"


def test_ls_refuses_outside_and_non_dirs(tree: Path) -> None:
    for path in ("..", "../..", "/", "src/../.."):
        with pytest.raises(ToolError, match="outside"):
            run("ls", {"path": path}, tree)
    with pytest.raises(ToolError, match="not a directory"):
        run("ls", {"path": "README.md"}, tree)
    with pytest.raises(ToolError, match="no such directory"):
        run("ls", {"path": "nope"}, tree)


def test_relative_cwd_is_resolved(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    assert run("ls", {}, Path("project")) == ".hidden\nREADME.md\nsrc/"
    with pytest.raises(ToolError, match="outside"):
        run("read", {"path": "../secret.txt"}, Path("project"))
    assert os.getcwd() == str(tree.parent)


# ---------------------------------------------------------------- a tree that changes under the tool


@pytest.fixture
def race(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - a context manager factory
    """Make the race certain: run `before()` just before the tool opens the file, `after()` just after."""
    real_open = os.open

    def arm(before, after=None) -> None:  # noqa: ANN001
        def racing_open(path, flags, *args):  # noqa: ANN001, ANN202
            monkeypatch.setattr(tools.os, "open", real_open)  # once
            before()
            try:
                return real_open(path, flags, *args)
            finally:
                if after is not None:
                    after()

        monkeypatch.setattr(tools.os, "open", racing_open)

    return arm


def test_read_a_file_swapped_for_a_symlink_after_the_check(tree: Path, race) -> None:  # noqa: ANN001
    def swap() -> None:
        (tree / "README.md").unlink()
        (tree / "README.md").symlink_to(tree.parent / "secret.txt")

    race(swap)
    with pytest.raises(ToolError, match="changed while being opened"):
        run("read", {"path": "README.md"}, tree)


def src_for_a_link_outside(tree: Path) -> Callable[[], None]:
    """The swap: src/ moved aside and replaced by a symlink to the directory above the root."""
    def swap() -> None:
        (tree / "src").rename(tree / "src.old")
        (tree / "src").symlink_to(tree.parent)  # src/secret.txt is now the one outside

    return swap


def test_read_through_a_directory_swapped_for_a_symlink(tree: Path, race) -> None:  # noqa: ANN001
    (tree / "src" / "secret.txt").write_text("benign", encoding="utf-8")
    race(src_for_a_link_outside(tree))
    with pytest.raises(ToolError, match="outside the working directory"):
        run("read", {"path": "src/secret.txt"}, tree)


def test_read_swapped_out_and_back_during_the_open(tree: Path, race) -> None:  # noqa: ANN001
    """The path names an inside file again by the time it is re-checked: the descriptor does not."""
    (tree / "src" / "secret.txt").write_text("benign", encoding="utf-8")

    def back() -> None:
        (tree / "src").unlink()
        (tree / "src.old").rename(tree / "src")

    race(src_for_a_link_outside(tree), back)
    with pytest.raises(ToolError, match="changed while being opened"):
        run("read", {"path": "src/secret.txt"}, tree)
    assert run("read", {"path": "src/secret.txt"}, tree) == "benign"  # unraced, it reads


def test_ls_a_directory_swapped_for_a_symlink(tree: Path, race) -> None:  # noqa: ANN001
    race(src_for_a_link_outside(tree))
    with pytest.raises(ToolError, match="changed while being opened"):
        run("ls", {"path": "src"}, tree)


def test_read_refuses_a_fifo_without_blocking(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        run("read", {"path": "pipe"}, tree)


def test_ls_is_bounded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tree / "big"
    big.mkdir()
    for i in range(120):
        (big / f"f{i:03d}").touch()
    monkeypatch.setattr(tools, "MAX_LS_ENTRIES", 10)
    assert run("ls", {"path": "big"}, tree).splitlines() == [f"f{i:03d}" for i in range(10)] + [
        "[110 more entries not shown]"]
    monkeypatch.setattr(tools, "MAX_LS_SCAN", 50)
    lines = run("ls", {"path": "big"}, tree).splitlines()
    assert len(lines) == 12 and lines == sorted(lines[:10]) + lines[10:]
    assert lines[10:] == ["[40 more entries not shown]", "[listing stopped after 50 entries; more not read]"]


# ---------------------------------------------------------------- registry


def test_select_tools() -> None:
    assert [t.name for t in select_tools(["read", "calc", "read"])] == ["read", "calc"]
    assert select_tools([]) == []
    assert set(TOOLS) == {"calc", "read", "ls"}
    with pytest.raises(ValueError, match=r"unknown tool 'bash' \(available: calc, read, ls\)"):
        select_tools(["calc", "bash"])


def test_tool_schemas_are_json_schema_objects() -> None:
    for tool in TOOLS.values():
        assert tool.parameters["type"] == "object"
        assert tool.description
    assert TOOLS["calc"].parameters["required"] == ["expression"]
