"""Sessions as Parquet tables, for asking questions of many machines' sessions at once.

Each export writes files of its own (`TABLE/part-<export id>.parquet` under the output directory,
the id fresh each time) and never touches another's, so many machines can export in parallel into
one bucket and the directory of their outputs is one dataset. Rows are written in batches, so
memory stays what one batch needs whatever the sessions' size. The schema is SCHEMA below; it is
documented in the README, and columns are only ever added.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harnesskit.session.catalog import count as int64
from harnesskit.session.catalog import json_text, storable
from harnesskit.session.migrate import iso_to_ms
from harnesskit.session.reader import Diagnostic
from harnesskit.session.usage import message_cost

from . import stream_entries

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
SCHEMA: dict[str, pa.Schema] = {
    "sessions": pa.schema([("file", _S), ("harness", _S), ("session_id", _S), ("cwd", _S), ("name", _S),
                           ("created_ms", _I), ("parent_session", _S), ("entries", _I), ("messages", _I),
                           ("export_id", _S)]),
    "entries": pa.schema([("file", _S), ("session_id", _S), ("position", _I), ("entry_id", _S), ("parent_id", _S),
                          ("type", _S), ("timestamp", _S), ("json", _S)]),
    "messages": pa.schema([("file", _S), ("session_id", _S), ("position", _I), ("entry_id", _S), ("role", _S),
                           ("time_ms", _I),
                           ("provider", _S), ("model", _S), ("stop_reason", _S), ("text", _S)]),
    "tool_calls": pa.schema([("file", _S), ("session_id", _S), ("entry_id", _S), ("call_id", _S), ("name", _S),
                             ("arguments", _S), ("result_entry_id", _S), ("is_error", _B)]),
    "usage": pa.schema([("file", _S), ("session_id", _S), ("entry_id", _S), ("time_ms", _I), ("provider", _S),
                        ("model", _S), ("input", _I), ("output", _I), ("cache_read", _I), ("cache_write", _I),
                        ("total_tokens", _I), ("cost", _F), ("cost_recorded", _B)]),
}
BATCH_ROWS = 5_000  # rows held per table before they go out: entries' JSON is most of it


def _json_text(entry: dict) -> str:
    from harnesskit.session.writer import encode

    return encode(entry)[:-1].decode()


def _s(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text") \
        if isinstance(content, list) else ""


@dataclass
class _Table:
    writer: pq.ParquetWriter
    schema: pa.Schema
    rows: list[tuple] = field(default_factory=list)

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            columns = list(zip(*self.rows, strict=True))
            arrays = {}
            for f, col in zip(self.schema, columns, strict=True):
                # what a session file may hold and Parquet cannot: lone surrogates, integers beyond 64 bits
                if f.type == pa.string():
                    col = [storable(v) for v in col]
                elif f.type == pa.int64():
                    col = [None if v is None else int64(v) for v in col]
                arrays[f.name] = pa.array(col, type=f.type)
            self.writer.write_table(pa.table(arrays, schema=self.schema))
            self.rows.clear()


@dataclass
class ExportStats:
    export_id: str
    sessions: int = 0
    entries: int = 0
    messages: int = 0
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that are no session we read, with why


def export_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def write_dataset(paths: Iterable[Path], out: Path, warn: Callable[[Diagnostic], None]) -> ExportStats:
    """Export sessions into the dataset directory `out` (files of this export's own)."""
    from harnesskit.session.loader import SessionError

    stats = ExportStats(export_id())
    tables: dict[str, _Table] = {}
    temps: list[tuple[Path, Path]] = []
    for name, schema in SCHEMA.items():
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / f"part-{stats.export_id}.parquet"
        temp = directory / f".part-{stats.export_id}.parquet.tmp"  # readers of the dataset skip dot files
        tables[name] = _Table(pq.ParquetWriter(temp, schema, compression="zstd"), schema)
        temps.append((temp, final))
    try:
        for path in paths:
            try:
                _export_one(path, tables, stats, warn)
            except SessionError as error:
                stats.skipped.append(str(error))
        for table in tables.values():
            table.flush()
            table.writer.close()
        for temp, final in temps:
            os.replace(temp, final)  # a dataset never shows half an export
            stats.files.append(final)
    except BaseException:
        for table in tables.values():
            table.writer.close()
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        raise
    return stats


def _export_one(path: Path, tables: dict[str, _Table], stats: ExportStats, warn: Callable[[Diagnostic], None]) -> None:
    from harnesskit.session.formats import sniff

    harness = sniff(path)
    header, entries = stream_entries(path, warn)
    file = str(path)
    sid = _s(header.get("id"))
    pending_calls: dict[str, tuple] = {}  # tool calls waiting for their result, by call id
    count = messages = 0
    name = None
    for position, (entry, raw) in enumerate(entries):
        count += 1
        entry_id = _s(entry.get("id"))
        tables["entries"].add((file, sid, position, entry_id, _s(entry.get("parentId")), _s(entry.get("type")),
                               _s(entry.get("timestamp")), raw.decode() if raw is not None else _json_text(entry)))
        if entry.get("type") == "session_info" and isinstance(entry.get("name"), str):
            name = entry["name"].strip() or None
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict):
            continue
        role = _s(message.get("role"))
        stamp = message.get("timestamp")
        time_ms = int64(stamp) if isinstance(stamp, int | float) and not isinstance(stamp, bool) \
            else iso_to_ms(entry.get("timestamp"))
        messages += 1
        tables["messages"].add((file, sid, position, entry_id, role, time_ms, _s(message.get("provider")),
                                _s(message.get("model")), _s(message.get("stopReason")),
                                _text(message.get("content"))))
        if role == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    call_id = _s(block.get("id")) or ""
                    pending_calls[call_id] = (file, sid, entry_id, call_id, _s(block.get("name")),
                                              json_text(block.get("arguments")))
            usage = message.get("usage")
            if isinstance(usage, dict):
                _add_usage(tables["usage"], file, sid, entry_id, time_ms, message, usage)
        elif role == "toolResult":
            call = pending_calls.pop(_s(message.get("toolCallId")) or "", None)
            if call is not None:
                tables["tool_calls"].add((*call, entry_id, bool(message.get("isError"))))
    for call in pending_calls.values():  # calls that never got a result
        tables["tool_calls"].add((*call, None, None))
    tables["sessions"].add((file, harness, sid, _s(header.get("cwd")), name, iso_to_ms(header.get("timestamp")),
                            _s(header.get("parentSession")), count, messages, stats.export_id))
    stats.sessions += 1
    stats.entries += count
    stats.messages += messages


def _add_usage(table: _Table, file: str, sid: str | None, entry_id: str | None, time_ms: int | None,
               message: dict, usage: dict) -> None:
    from harnesskit.session.catalog import UsageRow, _cost

    counts = [int64(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")]
    total = int64(usage.get("totalTokens")) or sum(counts)
    own = _cost(usage, counts)
    row = UsageRow(file, sid, None, "pi", entry_id, time_ms, _s(message.get("provider")), _s(message.get("model")),
                   *counts, total, own)
    table.add((file, sid, entry_id, time_ms, row.provider, row.model, *counts, total, message_cost(row),
               own is not None))
