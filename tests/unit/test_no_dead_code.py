"""No dead code in harnesskit/ (issue 8): vulture finds no name without a caller, apart from the
ones that are called by something vulture cannot see. Runs where vulture is installed (it is no
dependency: `pip install vulture`); skipped elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import harnesskit

vulture = pytest.importorskip("vulture")

PACKAGE = Path(harnesskit.__file__).resolve().parent
# called by something vulture cannot follow: Click (commands, group hooks), prompt_toolkit key
# bindings, the io protocol, jsonschema's type checker, PEP 562, attributes set on other libraries'
# objects (ruamel, sqlite3, reprlib), and data records whose fields mirror a table or a file
SEEN_BY_OTHERS = {
    "list_commands", "format_commands",  # click.Group hooks
    "set_", "unset", "list_", "continue_", "demo", "import_", "migrate", "validate",  # click commands
    "_clear_or_leave", "_up", "_down", "_enter", "_leave",  # prompt_toolkit key bindings
    "readable",  # io.RawIOBase
    "checker",  # jsonschema type checker signature
    "__getattr__",  # PEP 562
    "preserve_quotes", "isolation_level", "maxstring", "maxother", "maxdict", "maxlist", "maxlevel",
    "created_ms",  # a column of the catalog's row
    "USAGE_DAILY_SQL",  # users' SQL: examples/spark_usage.py and the README run it
    "bytes_read",  # index statistics (left to the catalog's own work)
}


def test_every_name_in_harnesskit_has_a_caller() -> None:
    scan = vulture.Vulture()
    scan.scavenge([str(PACKAGE)])
    unused = [f"{item.filename.relative_to(PACKAGE.parent)}:{item.first_lineno} {item.typ} {item.name}"
              for item in scan.get_unused_code(min_confidence=60) if item.name not in SEEN_BY_OTHERS]
    assert unused == []
