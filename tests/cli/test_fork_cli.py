"""`harnesskit fork`: a new file from an entry of an old one; the old one untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from writeside_helpers import (
    SESSION_NAME,
    V3_FILES,
    Env,
    assert_one_error,
    assert_strict_valid,
    copy_fixture,
    invoke,
    isolate,
    read_lines,
    session_files,
)

from harnesskit.session.loader import load_session
from harnesskit.session.store import encode_cwd
from harnesskit.session.tree import build_context

BY_STEM = {p.stem: p for p in V3_FILES}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def fork_ok(*args: object) -> Path:
    result = invoke("fork", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, result.stdout  # the path, only
    path = Path(result.stdout.rstrip("\n"))
    assert path.is_absolute() and path.is_file()
    return path


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


CASES = [
    ("s12_meta_entries", "checkpoint-1", "1444fb6e"),  # a label
    ("s12_meta_entries", "f2d2b5cc", "f2d2b5cc"),  # a full id, on the other branch
    ("s12_meta_entries", "54a1", "54a144ef"),  # a prefix
    ("s12_meta_entries", None, "314d2964"),  # the leaf
    ("s14_fork_before_user", "a2ea5f6c", "a2ea5f6c"),  # a label entry on the path
    ("s11_branch_summary", "8e8d", "8e8d9118"),  # (a user message forks before it: test_pi_fidelity.py)
    ("s13_compaction", "fe75d4a5", "fe75d4a5"),
    ("s09_fork_cli", "47ba3f09", "47ba3f09"),
]


@pytest.mark.parametrize("stem,ref,target", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_fork_at_entry(env: Env, stem: str, ref: str | None, target: str) -> None:
    source = copy_fixture(BY_STEM[stem], env.tmp / "src")
    before = snapshot(source)
    args: list[object] = [source] + (["--at", ref] if ref else [])
    new = fork_ok(*args)

    assert snapshot(source) == before
    assert new.parent == env.sessions / encode_cwd(os.getcwd())
    assert SESSION_NAME.match(new.name)
    lines = read_lines(new)
    header = lines[0]
    assert header["parentSession"] == str(source.resolve())
    assert header["cwd"] == os.getcwd()
    assert header["id"] != read_lines(source)[0]["id"]
    assert_strict_valid(new)

    old = load_session(source)
    forked = load_session(new)
    want = build_context(old.tree, target)
    got = build_context(forked.tree)
    assert got.messages == want.messages
    assert got.model == want.model and got.thinking_level == want.thinking_level

    # the path entries keep their ids; labels on the path come back, those off it do not
    path_ids = [old.tree.ids[pos] for pos in old.tree.path(old.tree.by_id[target])
                if old.tree.types[pos] != "label"]
    copied = [e for e in lines[1:] if e["type"] != "label" or e["id"] in path_ids]
    assert [e["id"] for e in copied] == path_ids
    wanted_labels = {t: lab for t, lab in old.tree.labels().items() if t in path_ids}
    assert forked.tree.labels() == wanted_labels
    assert forked.tree.leaf_id is not None
    parent = None
    for entry in lines[1:]:  # one chain, relinked across dropped labels
        assert entry["parentId"] == parent
        parent = entry["id"]


def test_labels_are_recreated(env: Env) -> None:
    source = copy_fixture(BY_STEM["s14_fork_before_user"], env.tmp / "src")
    new = fork_ok(source)
    lines = read_lines(new)
    labels = [e for e in lines[1:] if e["type"] == "label"]
    assert len(labels) == 1
    assert labels[0]["targetId"] == "1444fb6e" and labels[0]["label"] == "checkpoint-1"
    assert labels[0]["id"] != "5ad7133e"  # a new entry at the end, not the copied one
    assert lines[-1] is labels[0] or lines[-1] == labels[0]
    result = invoke("continue", new, "--from", "checkpoint-1", "-p", "hello")
    assert result.exit_code == 0, result.stderr
    assert read_lines(new)[len(lines)]["parentId"] == "1444fb6e"


def test_fork_all_copies_every_entry(env: Env) -> None:
    source = copy_fixture(BY_STEM["s12_meta_entries"], env.tmp / "src")
    before = snapshot(source)
    new = fork_ok(source, "--all")
    assert snapshot(source) == before
    old_lines = read_lines(source)
    lines = read_lines(new)
    assert lines[1:] == old_lines[1:]
    assert lines[0]["parentSession"] == str(source.resolve())
    assert_strict_valid(new)
    assert build_context(load_session(new).tree).messages == build_context(load_session(source).tree).messages


def test_fork_cwd_option(env: Env) -> None:
    source = copy_fixture(BY_STEM["s02_continue_tool"], env.tmp / "src")
    other = env.tmp / "other checkout"
    other.mkdir()
    new = fork_ok(source, "--cwd", other)
    header = read_lines(new)[0]
    assert header["cwd"] == str(other.resolve())
    assert new.parent == env.sessions / encode_cwd(str(other.resolve()))
    # `continue` run in that directory finds it as its most recent session
    os.chdir(other)
    try:
        result = invoke("continue", "-p", "what did you compute before?")
    finally:
        os.chdir(env.cwd)
    assert result.exit_code == 0, result.stderr
    assert "Restored 6 messages" in result.stderr
    assert len(read_lines(new)) > len(read_lines(source))


def test_fork_session_dir_option(env: Env) -> None:
    source = copy_fixture(BY_STEM["s01_new"], env.tmp / "src")
    flat = env.tmp / "flat"
    new = fork_ok(source, "--session-dir", flat)
    assert new.parent == flat
    assert session_files(env.home) == []


@pytest.mark.parametrize("args", [("--at", "nothere"), ("--at", "0"), ("--at", "checkpoint-1", "--all")])
def test_fork_refusals(env: Env, args: tuple[str, ...]) -> None:
    source = copy_fixture(BY_STEM["s12_meta_entries"], env.tmp / "src")
    before = snapshot(source)
    assert_one_error(invoke("fork", source, *args))
    assert snapshot(source) == before
    assert session_files(env.home) == []


def test_fork_missing_file(env: Env) -> None:
    assert_one_error(invoke("fork", env.tmp / "nope.jsonl"))
    assert session_files(env.home) == []
