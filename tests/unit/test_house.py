"""How the CLI is put together: no command module imports another (what they share lives in
modules that are no command: options, conversation, refs, rows, render, screen, ...)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from harnesskit.cli import COMMANDS

CLI = Path(importlib.util.find_spec("harnesskit.cli").origin).parent  # type: ignore[arg-type, union-attr]
COMMAND_MODULES = {spec[0].rsplit(".", 1)[1] for spec in COMMANDS.values()}


def cli_imports(module: str) -> set[str]:
    """The harnesskit.cli modules `module` imports (relative or absolute, at any depth, lazily too)."""
    tree = ast.parse((CLI / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found.update([node.module] if node.module else [a.name for a in node.names])
            elif node.module == "harnesskit.cli":
                found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("harnesskit.cli."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("harnesskit.cli."))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            name = node.args[0]
            if isinstance(name, ast.Constant) and str(name.value).startswith("harnesskit.cli."):
                found.add(str(name.value).split(".")[2])
    return {m.split(".")[0] for m in found}


def test_the_import_reader_sees_every_form_of_import(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    (tmp_path / "probe.py").write_text("from . import a\nfrom .b import x\nfrom harnesskit.cli.c import y\n"
                                       "import harnesskit.cli.d\ndef f():\n    from .e import z\n")
    monkeypatch.setitem(globals(), "CLI", tmp_path)
    assert cli_imports("probe") == {"a", "b", "c", "d", "e"}


def test_no_command_module_imports_another() -> None:
    assert {"chat", "continue_", "inspect", "demo", "fork", "compact", "validate"} <= COMMAND_MODULES
    tangled = {m: sorted(cli_imports(m) & (COMMAND_MODULES - {m})) for m in sorted(COMMAND_MODULES)}
    assert {m: deps for m, deps in tangled.items() if deps} == {}


def test_shared_modules_import_no_command_module() -> None:
    shared = {p.stem for p in CLI.glob("*.py")} - COMMAND_MODULES - {"__init__"}
    assert {"options", "conversation", "slash", "refs", "rows", "render", "screen"} <= shared
    tangled = {m: sorted(cli_imports(m) & COMMAND_MODULES) for m in sorted(shared)}
    assert {m: deps for m, deps in tangled.items() if deps} == {}


def test_chat_holds_the_command_only() -> None:
    """Options and settings live in options.py, the driver in conversation.py: chat.py is no hub."""
    tree = ast.parse((CLI / "chat.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert defined == {"chat"}
    outside = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert not {m for m in outside if m and m.startswith("harnesskit.")}
