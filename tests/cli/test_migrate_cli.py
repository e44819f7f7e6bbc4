"""`harnesskit migrate`: legacy files rewritten as v3 safely, everything else left byte-identical."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import TUTORIAL_FILES, V1_LARGE, V3_DIR, V3_FILES, read_objects, requires_shared, write_lines

from harnesskit.session.loader import load_session
from harnesskit.session.tree import build_context

LEGACY = [V1_LARGE, *TUTORIAL_FILES]


def copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("src", LEGACY, ids=lambda p: p.name)
def test_migrate_legacy_file(run, tmp_path: Path, src: Path) -> None:
    path = copy(src, tmp_path)
    before = load_session(src)
    result = run("migrate", path)
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr == ""
    assert "migrated" in result.stdout

    # the original is kept, byte for byte
    backup = tmp_path / f"{src.name}.bak"
    assert backup.read_bytes() == src.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, backup.name])  # no temp files left

    # the new file is v3 and strictly valid
    strict = run("validate", "--strict", path)
    assert strict.exit_code == 0, strict.output
    after = load_session(path)
    assert str(after.dialect) == "pi v3"
    assert after.diagnostics == []
    first = json.loads(path.read_bytes().splitlines()[0])
    assert first["type"] == "session" and first["version"] == 3
    assert first["id"] == read_objects(src)[0]["id"]

    # same ids as the in-memory migration, same entries, same context
    assert [e["id"] for e in after.entries] == [e["id"] for e in before.entries]
    assert [e["parentId"] for e in after.entries] == [e["parentId"] for e in before.entries]
    assert after.entries == before.entries
    assert after.header == before.header
    ctx_before, ctx_after = build_context(before.tree), build_context(after.tree)
    assert [m["role"] for m in ctx_after.messages] == [m["role"] for m in ctx_before.messages]
    assert ctx_after.messages == ctx_before.messages
    assert (ctx_after.model, ctx_after.thinking_level, ctx_after.leaf_id) == (
        ctx_before.model, ctx_before.thinking_level, ctx_before.leaf_id)

    # one entry per line, as many as in the original
    assert len(path.read_bytes().splitlines()) == len(read_objects(src))

    # running again changes nothing
    data, bak = path.read_bytes(), backup.read_bytes()
    again = run("migrate", path)
    assert again.exit_code == 0
    assert path.read_bytes() == data and backup.read_bytes() == bak
    assert run("migrate", "--check", path).exit_code == 0


def test_tutorial_message_content_survives(run, tmp_path: Path) -> None:
    src = TUTORIAL_FILES[0]
    path = copy(src, tmp_path)
    assert run("migrate", path).exit_code == 0
    raw = read_objects(src)[1:]
    migrated = read_objects(path)[1:]
    assert [e["id"] for e in migrated] == [e["id"] for e in raw]
    assert [e["parentId"] for e in migrated] == [e["parentId"] for e in raw]
    for old, new in zip(raw, migrated, strict=True):
        assert new["message"]["content"] == old["message"]["content"]
        assert new["message"]["role"] == old["message"]["role"]
        assert isinstance(new["timestamp"], str)
        if old["message"]["role"] == "assistant":
            assert {"api", "provider", "model", "usage", "stopReason", "timestamp"} <= set(new["message"])


@requires_shared
def test_v1_ids_are_the_in_memory_ones_across_runs(run, tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pa, pb = copy(V1_LARGE, a), copy(V1_LARGE, b)
    assert run("migrate", pa).exit_code == 0
    assert run("migrate", pb).exit_code == 0
    assert pa.read_bytes() == pb.read_bytes()  # deterministic: the same file every time


@requires_shared
def test_check_reports_and_touches_nothing(run, tmp_path: Path) -> None:
    paths = [copy(src, tmp_path) for src in LEGACY]
    v3 = copy(V3_FILES[0], tmp_path)
    before = listing(tmp_path)
    result = run("migrate", "--check", *paths, v3)
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    for path in paths:
        assert any(str(path) in line and "would migrate" in line for line in out), out
    assert any(str(v3) in line and "already" in line for line in out)
    assert listing(tmp_path) == before
    assert run("migrate", "--check", v3).exit_code == 0


@pytest.mark.parametrize("damage", [b"this is not json\n", b'{"type":"message","x":"\xff"}\n', b"null\n"])
@requires_shared
def test_legacy_file_with_an_unreadable_line_is_refused(run, tmp_path: Path, damage: bytes) -> None:
    lines = V1_LARGE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "v1.jsonl"
    path.write_bytes(b"".join([*lines[:10], damage, *lines[10:]]))
    before = listing(tmp_path)
    result = run("migrate", path)
    assert result.exit_code == 2
    err = result.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("harnesskit: error:") and "line 11" in err[0]
    assert "Traceback" not in result.output
    assert listing(tmp_path) == before  # byte-identical, no .bak, no temp file


def test_legacy_file_with_a_torn_last_line_is_refused(run, tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    path.write_bytes(TUTORIAL_FILES[0].read_bytes() + b'{"type":"message","id":"e9"')
    before = listing(tmp_path)
    result = run("migrate", path)
    assert result.exit_code == 2
    assert listing(tmp_path) == before


@pytest.mark.parametrize("header_id", [5, None, [1], ...], ids=["number", "null", "array", "absent"])
@pytest.mark.parametrize("check", [False, True], ids=["migrate", "check"])
def test_tutorial_header_without_a_string_id_is_refused(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         header_id: object, check: bool) -> None:
    """Its migrated header would be no header to pi (nor to harnesskit): the copy did not read back,
    and the SessionError naming the temporary file came out as an internal error."""
    header = {"type": "header", "version": 1, "id": header_id, "createdAt": "2026-01-01T00:00:00Z", "cwd": "/tmp"}
    if header_id is ...:
        del header["id"]
    monkeypatch.chdir(tmp_path)
    write_lines(tmp_path / "t.jsonl", [header, {"type": "message", "id": "e1", "parentId": None,
                                                "message": {"role": "user", "content": "hi"}}])
    before = listing(tmp_path)
    result = run("migrate", *(["--check"] if check else []), "t.jsonl")
    assert result.exit_code == 2, (result.output, result.exception)
    err = result.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("harnesskit: error: t.jsonl: the header has "), err
    assert "string id" in err[0] and "migrating" not in err[0]
    assert listing(tmp_path) == before  # byte-identical, no .bak, no temp file


def test_a_name_with_a_newline_is_shown_on_one_line(run, tmp_path: Path) -> None:
    """Each message is one line whatever the file is called (a newline spelled \\n, as in errors)."""
    legacy = tmp_path / "a\nb.jsonl"
    shutil.copyfile(TUTORIAL_FILES[0], legacy)
    v3 = tmp_path / "c\nd.jsonl"
    shutil.copyfile(V3_FILES[0], v3)
    a, c = (str(p).replace("\n", "\\n") for p in (legacy, v3))
    assert run("migrate", "--check", legacy, v3).stdout.splitlines() == [
        f"would migrate {a} (tutorial v1 → pi v3, 6 entries)", f"{c}: already pi v3"]
    assert run("migrate", legacy, v3).stdout.splitlines() == [
        f"migrated {a} (tutorial v1 → pi v3, 6 entries; original kept as a\\nb.jsonl.bak)",
        f"{c}: already pi v3, unchanged"]
    assert (tmp_path / "a\nb.jsonl.bak").read_bytes() == TUTORIAL_FILES[0].read_bytes()


def test_existing_backup_is_refused(run, tmp_path: Path) -> None:
    path = copy(TUTORIAL_FILES[0], tmp_path)
    (tmp_path / f"{path.name}.bak").write_bytes(b"an older backup\n")
    before = listing(tmp_path)
    result = run("migrate", path)
    assert result.exit_code == 2
    assert ".bak" in result.stderr and result.stderr.startswith("harnesskit: error:")
    assert listing(tmp_path) == before


@requires_shared
def test_one_refusal_does_not_stop_the_others(run, tmp_path: Path) -> None:
    good = copy(TUTORIAL_FILES[0], tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(V1_LARGE.read_bytes() + b"junk\n")
    result = run("migrate", bad, good)
    assert result.exit_code == 2
    assert (tmp_path / f"{good.name}.bak").exists()
    assert not (tmp_path / "bad.jsonl.bak").exists()
    assert str(load_session(good).dialect) == "pi v3"


@pytest.mark.parametrize("src", V3_FILES, ids=lambda p: p.stem)
def test_v3_files_untouched(run, tmp_path: Path, src: Path) -> None:
    path = copy(src, tmp_path)
    result = run("migrate", path)
    assert result.exit_code == 0
    assert "already" in result.stdout
    assert listing(tmp_path) == {src.name: src.read_bytes()}


def test_v3_file_with_a_bad_line_is_left_alone(run, tmp_path: Path) -> None:
    path = tmp_path / "v3.jsonl"
    path.write_bytes((V3_DIR / "s01_new.jsonl").read_bytes() + b"junk\n")
    before = listing(tmp_path)
    assert run("migrate", path).exit_code == 0
    assert listing(tmp_path) == before


def test_unreadable_inputs_are_refused(run, tmp_path: Path) -> None:
    for args in ([tmp_path / "missing.jsonl"], [tmp_path]):
        result = run("migrate", *args)
        assert result.exit_code == 2
        assert result.stderr.startswith("harnesskit: error:")
        assert "Traceback" not in result.output
    v99 = tmp_path / "v99.jsonl"
    objects = read_objects(V3_FILES[0])
    objects[0]["version"] = 99
    write_lines(v99, objects)
    data = v99.read_bytes()
    result = run("migrate", v99)
    assert result.exit_code == 2 and "99" in result.stderr
    assert v99.read_bytes() == data and not (tmp_path / "v99.jsonl.bak").exists()


def test_big_integers_and_unicode_survive(run, tmp_path: Path) -> None:
    n = 2**80 + 1
    path = tmp_path / "v1.jsonl"
    header = {"type": "session", "id": "s-big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    entry = {"type": "custom", "timestamp": "2026-01-01T00:00:00.000Z", "customType": "t",
             "data": {"n": n, "text": "héllo 你好 \u2028 😀"}}
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry, ensure_ascii=False) + "\n", encoding="utf-8")
    assert run("migrate", path).exit_code == 0
    migrated = json.loads(path.read_bytes().splitlines()[1])
    assert migrated["data"] == {"n": n, "text": "héllo 你好 \u2028 😀"}


def test_v2_file(run, tmp_path: Path) -> None:
    objects = read_objects(V3_FILES[0])
    objects[0]["version"] = 2
    message = next(o for o in objects if o["type"] == "message")
    message["message"] = {**message["message"], "role": "hookMessage", "customType": "x", "display": True}
    path = write_lines(tmp_path / "v2.jsonl", objects)
    assert run("migrate", "--check", path).exit_code == 1
    assert run("migrate", path).exit_code == 0
    migrated = read_objects(path)
    assert migrated[0]["version"] == 3
    assert [o.get("id") for o in migrated] == [o.get("id") for o in objects]
    assert [o["message"]["role"] for o in migrated if o["type"] == "message"][0] == "custom"
