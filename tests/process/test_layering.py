"""The layering the design relies on, checked in fresh interpreters: the core never imports Click,
the agent never imports the session layer, and the read side never loads network code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pi" / "v3" / "s02_continue_tool.jsonl"


def modules_after(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_session_core_imports_no_click_and_no_network() -> None:
    loaded = modules_after(
        "import harnesskit.session.reader, harnesskit.session.loader, harnesskit.session.tree, "
        "harnesskit.session.check, harnesskit.session.writer, harnesskit.session.store, "
        "harnesskit.session.fork, harnesskit.session.rewrite"
    )
    assert "click" not in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("openai", "httpx", "prompt_toolkit")}


def test_agent_knows_nothing_of_sessions() -> None:
    loaded = modules_after("import harnesskit.agent.loop, harnesskit.agent.models.demo, harnesskit.agent.tools")
    assert not {m for m in loaded if m.startswith(("harnesskit.session", "harnesskit.cli"))}


@pytest.mark.parametrize("command", [["inspect", str(FIXTURE)], ["validate", str(FIXTURE)],
                                     ["migrate", "--check", str(FIXTURE)]])
def test_read_side_commands_load_no_network_code(command: list[str]) -> None:
    code = (
        "import sys\nfrom harnesskit.cli import cli\n"
        f"sys.argv = ['harnesskit', *{command!r}]\n"
        "try:\n    cli.main(standalone_mode=False)\nexcept SystemExit:\n    pass\n"
    )
    loaded = modules_after(code)
    assert "harnesskit.cli." + command[0] in loaded  # the command really ran
    assert not {m for m in loaded if m.split(".")[0] in ("openai", "httpx", "prompt_toolkit")}
    if command[0] == "inspect":
        assert "jsonschema" not in loaded and "jsonschema_rs" not in loaded
