"""Start-up: each command imports only what it uses (issue 7). Checked by the modules a fresh
interpreter holds after running the command, never by timing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import Env, isolate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pi" / "v3"

_RUN = """
import json, sys
from harnesskit.cli import main
sys.argv = ["harnesskit", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as done:
    code = done.code
else:
    code = 0
with open({out!r}, "w") as fp:
    json.dump({{"code": code, "modules": sorted(sys.modules)}}, fp)
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def modules_after(env: Env, *args: object, stdin: str = "") -> tuple[int, set[str]]:
    """Run `harnesskit ARGS` in a fresh interpreter; its exit code and every module it imported."""
    out = env.tmp / "modules.json"
    code = _RUN.format(out=str(out))
    subprocess.run([sys.executable, "-c", code, json.dumps([str(a) for a in args])], env=env.environ(),
                   cwd=env.cwd, input=stdin, capture_output=True, text=True, timeout=60, check=False)
    result = json.loads(out.read_text())
    return result["code"], {*result["modules"], *(m.split(".")[0] for m in result["modules"])}


def test_validate_of_a_clean_file_imports_no_explainer(env: Env) -> None:
    code, modules = modules_after(env, "validate", FIXTURES / "s01_new.jsonl")
    assert code == 0
    assert "harnesskit.session.shapes" in modules  # it did validate: every entry proven valid in Python
    assert not modules & {"jsonschema_rs", "jsonschema", "referencing", "tabulate", "multiprocessing", "ruamel",
                          "openai"}


def test_validate_of_a_broken_file_imports_the_explainer(env: Env) -> None:
    broken = env.tmp / "broken.jsonl"
    lines = (FIXTURES / "s01_new.jsonl").read_text().splitlines()
    entry = json.loads(lines[1])
    del entry["timestamp"]
    broken.write_text("\n".join([lines[0], json.dumps(entry), *lines[2:]]) + "\n")
    code, modules = modules_after(env, "validate", broken)
    assert code == 1
    assert {"jsonschema", "jsonschema_rs"} <= modules  # the check above can see an import


def test_continue_that_runs_no_turn_imports_no_openai_sdk(env: Env) -> None:
    path = env.tmp / "openai-session.jsonl"
    shutil.copy(FIXTURES / "s01_new.jsonl", path)
    header = json.loads(path.read_text().splitlines()[0])
    with path.open("a") as fp:
        fp.write(json.dumps({"type": "model_change", "id": "abcdef01", "parentId": None,
                             "timestamp": header["timestamp"], "provider": "openai", "modelId": "gpt-test"}) + "\n")
    code, modules = modules_after(env, "continue", path, "--no-session", stdin="")
    assert code == 0
    assert "harnesskit.agent.models.openai" in modules  # the session's openai model was restored
    assert "openai" not in modules


def test_chat_with_the_demo_model_imports_no_sdk_or_yaml(env: Env) -> None:
    code, modules = modules_after(env, "chat", "-p", "what is 2+3")
    assert code == 0
    assert not modules & {"openai", "prompt_toolkit", "ruamel", "jsonschema", "jsonschema_rs", "tabulate",
                          "multiprocessing"}


def test_chat_p_without_a_session_loads_no_reader_of_files(env: Env) -> None:
    """The benchmark's `chat -p ... --no-session` (issue 7: <= 2.5x `import click`): nothing that
    reads, names or draws session files is loaded, nor the terminal's line editor."""
    code, modules = modules_after(env, "chat", "-p", "what is 2+3", "--no-session")
    assert code == 0
    assert "harnesskit.agent.models.demo" in modules  # it did run a turn
    assert not modules & {"openai", "prompt_toolkit", "harnesskit.session.loader", "harnesskit.session.reader",
                          "harnesskit.session.store", "harnesskit.session.fork", "harnesskit.session.index",
                          "harnesskit.session.migrate", "harnesskit.session.writer", "harnesskit.cli.render",
                          "harnesskit.cli.table", "harnesskit.cli.slash", "harnesskit.session.compaction",
                          "hashlib", "secrets"}
    assert not list(env.tmp.rglob("*.jsonl"))


def test_list_from_the_index_imports_no_agent(env: Env) -> None:
    """`list` prints through the screen module but shows no agent event: the events' dataclasses
    (milliseconds of every listing) stay unloaded."""
    session = env.home / "sessions" / "--here--" / "s.jsonl"
    session.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "s01_new.jsonl", session)
    assert modules_after(env, "index", "-q")[0] == 0
    code, modules = modules_after(env, "list", "--all")
    assert code == 0
    assert "harnesskit.session.catalog" in modules  # it did read the index
    assert not modules & {"harnesskit.agent.events", "harnesskit.agent.loop", "openai"}
