"""Shared fixtures for the session/CLI tests: where the fixture files are, and a CLI runner."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harnesskit.cli import cli

# Tests live in unit/ (the core, no CLI), cli/ (commands through CliRunner) and process/ (real
# processes, terminals, signals, memory); the helper modules beside this file serve all three, and a
# few test modules lend their fixtures to others (the fake OpenAI server, the schema cases).
for _part in ("unit", "cli", "process"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / _part))
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
V3_DIR = FIXTURES / "pi" / "v3"
V3_FILES = sorted(V3_DIR.glob("*.jsonl"))
EXPECTED_DIR = V3_DIR / "expected"
# Files from other public projects are read from ../shared/fixtures (never copied into the repo):
# a test that needs one skips, with this reason, where ../shared is absent.
SHARED_FIXTURES = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"
NO_SHARED = f"{SHARED_FIXTURES} is absent (data from other projects is read there, never copied)"
requires_shared = pytest.mark.skipif(not SHARED_FIXTURES.is_dir(), reason=NO_SHARED)
V1_LARGE = SHARED_FIXTURES / "pi" / "v1-large-session.jsonl"  # pi-mono's large-session.jsonl (MIT)
V1_LARGE_EXPECTED = FIXTURES / "pi" / "v1-large-session.expected.json"
TUTORIAL_DIR = FIXTURES / "tutorial"
TUTORIAL_FILES = sorted(TUTORIAL_DIR.glob("*.jsonl"))
ALL_FIXTURES = [*V3_FILES, V1_LARGE, *TUTORIAL_FILES]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test parametrized with a file from ../shared/fixtures skips, with the reason, when it is absent."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():
        if isinstance(value, Path) and value.is_relative_to(SHARED_FIXTURES) and not value.exists():
            pytest.skip(NO_SHARED)


def expected_for(path: Path) -> dict:
    """pi's own view of a v3 fixture (fixtures/pi/v3/expected/<stem>.json)."""
    return json.loads((EXPECTED_DIR / f"{path.stem}.json").read_text(encoding="utf-8"))


def read_objects(path: Path) -> list[dict]:
    """Every line of a (clean) fixture parsed independently of harnesskit: [header, *entries]."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


_PEAKS = ("import resource, sys\nfrom harnesskit.cli import cli\n"
          "cli.main(args=sys.argv[1:], prog_name='harnesskit', standalone_mode=False)\n"
          "own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
          "child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
          "print(own, child, file=sys.stderr)")


def split_peaks(args: list[str], env: dict[str, str]) -> dict[str, list[int]]:
    """A real `harnesskit ARGS` with the second process off ("0") and on ("1"): [own, worker's] peak
    RSS in KB for each."""
    import subprocess

    peaks = {}
    for setting in ("0", "1"):
        done = subprocess.run([sys.executable, "-c", _PEAKS, *args], capture_output=True, text=True, check=True,
                              env={**env, "HARNESSKIT_SPLIT": setting, "HARNESSKIT_SPLIT_MIN_BYTES": "0"})
        peaks[setting] = [int(x) for x in done.stderr.split()[-2:]]
    return peaks


def write_lines(path: Path, objects: list[object]) -> Path:
    """One compact JSON value per line, newline-terminated."""
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), encoding="utf-8")
    return path


@pytest.fixture
def run() -> Callable[..., Result]:
    """run("inspect", path, "--json") -> the Click result (stdout/stderr kept apart)."""
    runner = CliRunner()

    def invoke(*args: object) -> Result:
        return runner.invoke(cli, [str(a) for a in args], catch_exceptions=True)

    return invoke


def assert_one_line_error(result: Result, code: int = 2) -> str:
    """Exit `code`, exactly one stderr line starting with 'harnesskit: error:', and no traceback."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("harnesskit: error:"), lines[0]
    assert "Traceback" not in result.output
    return lines[0]
