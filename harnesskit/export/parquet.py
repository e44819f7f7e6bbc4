"""Sessions as Parquet tables, for asking questions of many machines' sessions at once.

Each export writes files of its own (`TABLE/part-<export id>.parquet` under the output directory,
the id fresh each time, and `part-<export id>-<n>.parquet` for the second half of a big file, which
a forked worker writes) and never touches another's, so many machines can export in parallel into
one bucket and the directory of their outputs is one dataset. Rows are written in batches, so
memory stays what one batch needs whatever the sessions' size. The schema is SCHEMA below; it is
documented in the README, and columns are only ever added.
"""

from __future__ import annotations

import gc
import os
import socket
import tempfile
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
from msgspec import UnsetType

from harnesskit.session.catalog import _INT64, UsageRow, _cost, json_text, recorded_cost, storable
from harnesskit.session.catalog import count as int64
from harnesskit.session.format import session_name
from harnesskit.session.migrate import iso_to_ms
from harnesskit.session.reader import Diagnostic
from harnesskit.session.split import reap
from harnesskit.session.usage import message_cost

from . import stream_entries, tail

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

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
CODEC = "snappy"  # the tables' compression: see the README (Parquet) for why
_WRITERS = 2  # threads writing the tables (independent writers): encoding and zstd beside the reading
# columns of few distinct values, dictionary-encoded; the others (ids, texts, JSON) gain nothing from it
_DICTIONARY = ["file", "session_id", "harness", "cwd", "type", "role", "provider", "model", "stop_reason", "name",
               "export_id"]

# min/max statistics (what lets a reader skip row groups) for every column but the long texts, whose
# min and max no query filters on and which cost the writers a comparison of every value
_STATISTICS = {table: [f.name for f in schema if f.name not in ("json", "text", "arguments")]
               for table, schema in SCHEMA.items()}


def _json_text(entry: dict) -> str:
    from harnesskit.session.writer import encode

    return encode(entry)[:-1].decode()


def _s(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _text(content: object) -> str:
    if content.__class__ is list:
        if len(content) == 1:  # most messages: one block
            block = content[0]
            if block.__class__ is dict and block.get("type") == "text":
                text = block.get("text", "")
                return text if text.__class__ is str else str(text)
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


_LANE = True  # the msgspec lane for message lines; tests turn it off to hold the two to one another


def _lane() -> Callable[[bytes], object | None] | None:
    """A message line decoded by msgspec into typed.py's export Structs (fewer and smaller objects
    than orjson's dicts, read as attributes), for `_fill_rows`' first branch; None for a line it does
    not take exactly, which is read as before: what msgspec refuses (not a message entry, a value the
    schemas do not allow, not JSON), and a toolCall whose arguments orjson cannot write (an integer
    beyond 64 bits, which orjson reads as a float and msgspec as an int; a lone surrogate). The
    arguments are replaced by their JSON text, written once. Off (None) where the recursion limit would
    let msgspec nest deeper than the reader does (typed.py)."""
    import sys

    from harnesskit.session.reader import MAX_DEPTH

    if not _LANE or sys.getrecursionlimit() > MAX_DEPTH:
        return None
    import orjson

    from harnesskit.session import typed

    decode, refused, entry_class, assistant, call = (typed.decode_export, typed.Refused, typed.ExportEntry,
                                                     typed.ExportAssistant, typed.ToolCall)
    dumps = orjson.dumps

    def take(line: bytes) -> object | None:
        try:
            entry = decode(line)
        except refused:
            return None
        if entry.__class__ is not entry_class:
            return None
        message = entry.message
        if message.__class__ is assistant:
            for block in message.content:
                if block.__class__ is call:
                    try:
                        block.arguments = dumps(block.arguments).decode()
                    except TypeError:
                        return None
        return entry

    return take


@dataclass
class _Table:
    """One table's rows (tuples, or for the big tables values column by column; turned into Arrow
    columns in C at `flush`), written out as a row group per batch. The writing (encoding, compression:
    the C++ writer, which lets go of the GIL) runs on `pool` (two threads: the tables' writers are
    independent) while the next batch is read; one batch per table is in flight at most, so memory
    stays bounded."""

    writer: pq.ParquetWriter
    schema: pa.Schema
    pool: ThreadPoolExecutor
    rows: list[tuple] = field(default_factory=list)
    columns: list[list] = field(default_factory=list)  # or the values column by column (the big tables)
    pending: Future | None = None
    # The big tables' leading columns (file, session_id) hold one value per session: they are kept as
    # runs [values, first row] (see `run`) and built as repeated scalars, not a value per row.
    runs: list[list] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.columns = [[] for _ in self.schema]

    def run(self, *values: object) -> None:
        """The rows appended to `columns` from now on have `values` in the leading columns (whose
        lists stay empty)."""
        self.runs.append([values, len(self.columns[len(values)])])

    def held(self) -> int:
        """Rows gathered column by column."""
        return len(self.columns[len(self.runs[0][0])]) if self.runs else len(self.columns[0])

    def flush(self) -> None:
        columns = zip(*self.rows, strict=True) if self.rows else self._columns() if self.held() else None
        if columns is not None:
            arrays = [c if isinstance(c, pa.Array) else _array(c, f.type)
                      for f, c in zip(self.schema, columns, strict=True)]
            batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
            self.rows.clear()
            for column in self.columns:
                column.clear()
            if self.runs:
                self.runs[:] = [[self.runs[-1][0], 0]]  # the last session's rows go on in the next batch
            self.wait()
            self.pending = self.pool.submit(self.writer.write_batch, batch)

    def _columns(self) -> list:
        """The columns of the rows gathered column by column, the leading ones built from `runs`."""
        if not self.runs:
            return self.columns
        count = self.held()
        ends = [start for _, start in self.runs[1:]] + [count]
        spans = [(values, end - start) for (values, start), end in zip(self.runs, ends, strict=True) if end > start]
        leading = [pa.concat_arrays([pa.repeat(_array([values[i]], self.schema[i].type)[0], rows)
                                     for values, rows in spans]) for i in range(len(self.runs[0][0]))]
        return [*leading, *self.columns[len(leading):]]

    def wait(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self.writer.close()


def _array(column: tuple, kind: pa.DataType) -> pa.Array:
    """A column as Arrow, taking the values as they come when they fit (the common case, converted
    in C). A string column may hold what the entry held (a number, a list, a lone surrogate, which
    no UTF-8 encodes): then each value goes through `_string`."""
    try:
        if column[0].__class__ is bytes:  # lines as written
            return _lines(column, kind)
        return pa.array(column, type=kind)
    except (pa.ArrowTypeError, pa.ArrowInvalid, UnicodeEncodeError):
        if kind != pa.string():
            raise
        return pa.array([_string(v) for v in column], type=kind)


def _lines(column: list, kind: pa.DataType) -> pa.Array:
    """A column of lines as written (bytes), as Arrow text checked as UTF-8 in one pass. Joined once
    into the values buffer, which Arrow takes as it is, with their offsets: converted value by value,
    the lines were copied again each time Arrow's buffer grew (6% of a process's instructions)."""
    try:
        data = b"".join(column)
    except TypeError:  # a text among the lines (an entry that was no line: a migrated one)
        data = None
    if data is None or len(data) >= 1 << 31 or kind != pa.string():  # (int32 offsets)
        return pa.array(column, type=pa.binary()).cast(kind)
    offsets = array("i", accumulate(map(len, column), initial=0))
    lines = pa.Array.from_buffers(kind, len(column), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    lines.validate(full=True)  # UTF-8: ArrowInvalid otherwise, as the cast raises
    return lines


def _string(value: object) -> str | None:
    """A string column's value: text as it is (a lone surrogate made U+FFFD), anything else null."""
    if value.__class__ is bytes:  # a line as written
        return value.decode(errors="replace")  # type: ignore[union-attr]
    return storable(value) if isinstance(value, str) else None


@dataclass
class ExportStats:
    export_id: str
    sessions: int = 0
    entries: int = 0
    messages: int = 0
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that are no session we read, with why
    workers: int = 0  # processes started for the second halves of big files (each one's parts numbered)


def export_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _open_tables(out: Path, names: Iterable[str], part: str, pool: ThreadPoolExecutor,
                 temps: list[tuple[Path, Path]]) -> dict[str, _Table]:
    """A writer per table into `TABLE/.part-<part>.parquet.tmp` (readers of the dataset skip dot
    files), each noted in `temps` with its final name before it exists."""
    tables: dict[str, _Table] = {}
    for name in names:
        (out / name).mkdir(parents=True, exist_ok=True)
        temp, final = _part(out, name, part)
        temps.append((temp, final))
        tables[name] = _Table(pq.ParquetWriter(temp, SCHEMA[name], compression=CODEC, use_dictionary=_DICTIONARY,
                                               write_statistics=_STATISTICS[name]), SCHEMA[name], pool)
    return tables


def _part(out: Path, table: str, part: str) -> tuple[Path, Path]:
    """A part file's name while it is written (a dot file, which readers skip) and when complete."""
    return out / table / f".part-{part}.parquet.tmp", out / table / f"part-{part}.parquet"


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(_WRITERS, thread_name_prefix="parquet")


def write_dataset(paths: Iterable[Path], out: Path, warn: Callable[[Diagnostic], None]) -> ExportStats:
    """Export sessions into the dataset directory `out` (files of this export's own)."""
    from harnesskit.session.loader import SessionError

    stats = ExportStats(export_id())
    temps: list[tuple[Path, Path]] = []
    tables: dict[str, _Table] = {}
    workers: list[_Worker] = []
    try:
        tables = _open_tables(out, SCHEMA, stats.export_id, _pool(), temps)
        for path in paths:
            try:
                _export_one(path, out, tables, stats, warn, temps, workers)
            except SessionError as error:
                stats.skipped.append(str(error))
        for table in tables.values():
            table.flush()
        for table in tables.values():
            table.close()
        for temp, final in temps:
            os.replace(temp, final)  # a dataset never shows half an export
            stats.files.append(final)
    except BaseException:
        for worker in workers:
            worker.stop()
        for table in tables.values():
            try:
                table.close()
            except Exception:  # noqa: BLE001 - the first error is the one to raise
                pass
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
        raise
    finally:
        for table in tables.values():
            table.pool.shutdown()
    return stats


# a tool call (file, session, entry, call id, name, arguments) waiting for its result
_Call = tuple[str, str | None, str | None, str, str | None, str]
_UNNAMED = object()  # no session_info in a worker's half named the session


@dataclass
class _Worker:
    """A forked process exporting the entries from `cut` on into part files of its own (entries,
    messages, usage: rows that depend on no earlier entry but for their position), while this one
    exports the entries before it. Its positions assume every line before `cut` after the header is
    an entry; it sends the tool calls, results and diagnostics of its half in order through the
    unnamed file `events`, for this process to take them up as if it had read them itself."""

    cut: int
    conn: Connection
    process: BaseProcess
    events: BinaryIO
    temps: list[tuple[Path, Path]]

    def stop(self) -> None:
        self.process.terminate()
        reap(self.conn, self.process)
        self.events.close()
        for temp, _ in self.temps:
            temp.unlink(missing_ok=True)

    def result(self) -> tuple | None:
        """("done", position it gave its first entry, entries, messages, whether it named the
        session, the name) once the worker is done, or None when it failed."""
        try:
            answer = self.conn.recv()
        except (EOFError, OSError):
            return None
        return answer if answer[0] == "done" else None


def _export_one(path: Path, out: Path, tables: dict[str, _Table], stats: ExportStats,
                warn: Callable[[Diagnostic], None], temps: list[tuple[Path, Path]], workers: list[_Worker]) -> None:
    """One session's rows: the entries in this process, or (a big v3 file, two cores) the first
    half here and the second in a forked `_Worker`, giving the rows one process gives."""
    from harnesskit.session.formats import sniff

    harness = sniff(path)
    file = str(path)
    split: list[_Worker] = []

    def choose(fp: BinaryIO, header: dict, header_line: int) -> int | None:
        from harnesskit.session.split import fork_worker, split_point, worth_splitting

        if not worth_splitting(fp, fp.tell()):
            return None
        for table in tables.values():  # no thread may run across a fork: the writers' go
            table.wait()
        tables["entries"].pool.shutdown()
        pool = _pool()
        for table in tables.values():
            table.pool = pool
        cut = split_point(fp, fp.tell())
        if cut is None:
            return None
        stats.workers += 1
        part = f"{stats.export_id}-{stats.workers}"
        events = tempfile.TemporaryFile(dir=out)  # unnamed: nothing is left of it, however this ends
        own = [_part(out, table, part) for table in _WORKER_TABLES]
        started = fork_worker(_work, (path, cut, header_line, _s(header.get("id")), out, part, events), duplex=False)
        if started is None:
            events.close()
            return None
        workers.append(_Worker(cut, *started, events, own))
        split.append(workers[-1])
        return cut

    lane = _lane()
    header, entries = stream_entries(path, warn, choose, lane)
    sid = _s(header.get("id"))
    pending: dict[str, _Call] = {}  # tool calls waiting for their result, by call id
    add_call = tables["tool_calls"].rows.append

    def on_call(call_id: str, call: _Call) -> None:
        pending[call_id] = call

    def on_result(call_id: str, result_id: str | None, is_error: bool) -> None:
        call = pending.pop(call_id, None)
        if call is not None:
            add_call((*call, result_id, is_error))

    count, messages, name = _fill(entries, tables, file, sid, 0, on_call, on_result, None)
    if split:
        worker = split[0]
        done = worker.result()
        if done is not None and done[1] == count:
            _replay(worker.events, tables["tool_calls"], on_call, on_result, warn)
            worker.events.close()
            reap(worker.conn, worker.process)
            temps += worker.temps
            count, messages = count + done[2], messages + done[3]
            name = done[5] if done[4] else name
        else:  # a line before the cut was no entry (or the worker failed): the rest is read here
            worker.stop()
            number, rest = tail(path, worker.cut, warn, lane)
            more, more_messages, name = _fill(rest, tables, file, sid, count, on_call, on_result, name)
            count, messages = count + more, messages + more_messages
        workers.remove(worker)
    for call in pending.values():  # calls that never got a result
        add_call((*call, None, None))
    tables["sessions"].rows.append((file, harness, sid, _s(header.get("cwd")), name, iso_to_ms(header.get("timestamp")),
                                    _s(header.get("parentSession")), count, messages, stats.export_id))
    stats.sessions += 1
    stats.entries += count
    stats.messages += messages


_WORKER_TABLES = ("entries", "messages", "usage")
_EVENTS_AT_ONCE = 1_000


def _work(path: Path, cut: int, header_line: int, sid: str | None, out: Path, part: str, events: BinaryIO,
          conn: Connection) -> None:
    """The forked half (see `_Worker`): export [cut, end) into its own part files, then answer."""
    import pickle

    try:
        held: list[tuple] = []

        def emit(event: tuple) -> None:
            held.append(event)
            if len(held) >= _EVENTS_AT_ONCE:
                pickle.dump(held, events, pickle.HIGHEST_PROTOCOL)
                held.clear()

        tables = _open_tables(out, _WORKER_TABLES, part, _pool(), [])  # the parent renames them
        number, entries = tail(path, cut, lambda d: emit(("w", d)), _lane())
        first = number - header_line
        count, messages, name = _fill(_while_parent(entries, os.getppid()), tables, str(path), sid, first,
                                      lambda call_id, call: emit(("c", call_id, call)),
                                      lambda call_id, rid, err: emit(("r", call_id, rid, err)), _UNNAMED)
        for table in tables.values():
            table.flush()
        for table in tables.values():
            table.close()
        pickle.dump(held, events, pickle.HIGHEST_PROTOCOL)
        events.flush()
        conn.send(("done", first, count, messages, name is not _UNNAMED, None if name is _UNNAMED else name))
    except BaseException as error:  # noqa: BLE001 - the parent reads this half itself
        try:
            conn.send(("failed", repr(error)))
        except OSError:  # the parent is gone
            pass


def _while_parent(entries: Iterable[tuple], parent: int) -> Iterator[tuple]:
    """The entries, as long as the process that forked this one lives (killed, it takes up nothing
    of this one's work: its part files stay temporary, so this one need not finish them)."""
    for number, item in enumerate(entries):
        if not number & 4095 and os.getppid() != parent:
            raise SystemExit(1)
        yield item


def _replay(events: BinaryIO, calls: _Table, on_call: Callable, on_result: Callable,
            warn: Callable[[Diagnostic], None]) -> None:
    """The worker's tool calls, results and diagnostics, taken up in its file order."""
    import pickle

    events.seek(0)
    while True:
        try:
            held = pickle.load(events)
        except EOFError:
            return
        for event in held:
            kind = event[0]
            if kind == "c":
                on_call(event[1], event[2])
            elif kind == "r":
                on_result(event[1], event[2], event[3])
            else:
                warn(event[1])
        if len(calls.rows) >= BATCH_ROWS:
            calls.flush()


def _fill(entries: Iterable[tuple[dict, bytes | None]], tables: dict[str, _Table], file: str, sid: str | None,
          first: int, on_call: Callable[[str, _Call], None], on_result: Callable[[str, str | None, bool], None],
          name: object) -> tuple[int, int, object]:
    """`_fill_rows` with the cyclic garbage collector paused: the rows' values and the entries'
    dicts hold no cycles, and its passes over the objects a batch holds were about 5% of the
    export's CPU (the collector runs again, and collects whatever there is, once this returns)."""
    if not gc.isenabled():
        return _fill_rows(entries, tables, file, sid, first, on_call, on_result, name)
    gc.disable()
    try:
        return _fill_rows(entries, tables, file, sid, first, on_call, on_result, name)
    finally:
        gc.enable()


def _fill_rows(entries: Iterable[tuple[dict, bytes | None]], tables: dict[str, _Table], file: str, sid: str | None,
               first: int, on_call: Callable[[str, _Call], None],
               on_result: Callable[[str, str | None, bool], None], name: object) -> tuple[int, int, object]:
    """The entries' rows (their positions from `first`), with each tool call and result handed to
    `on_call`/`on_result` in file order; (entries, messages, the session's name after them). The
    loop is the export's cost, so it appends each entry's values to the columns as they are (they
    are checked column by column at `_Table.flush`)."""
    count = messages = 0
    # the two big tables' values go column by column (no tuple per row, no transposing them back),
    # file and session as runs
    tables["entries"].run(file, sid)
    tables["messages"].run(file, sid)
    e_position, e_id, e_parent, e_type, e_stamp, e_json = (c.append for c in tables["entries"].columns[2:])
    m_position, m_id, m_role, m_time, m_provider, m_model, m_stop, m_text = (
        c.append for c in tables["messages"].columns[2:])
    held = tables["entries"].columns[2]
    add_usage = tables["usage"].rows.append
    from harnesskit.session import typed

    lane_entry, assistant, result, call, text_block = (typed.ExportEntry, typed.ExportAssistant,
                                                       typed.ExportToolResult, typed.ToolCall, typed.Text)
    for position, (entry, raw) in enumerate(entries, first):
        count += 1
        if entry.__class__ is lane_entry:  # a message line of `_lane`: the dict branch below, on Structs
            entry_id = entry.id
            e_position(position)
            e_id(entry_id)
            e_parent(entry.parentId)
            e_type("message")
            e_stamp(entry.timestamp)
            e_json(raw)
            if len(held) >= BATCH_ROWS:
                for table in tables.values():
                    table.flush()
            message = entry.message
            stamp = message.timestamp
            if stamp.__class__ is int and -_INT64 < stamp:  # (at most 2**63 - 1: typed.py)
                time_ms = stamp
            elif stamp is None:
                time_ms = iso_to_ms(entry.timestamp)
            else:
                time_ms = int64(stamp)
            messages += 1
            content = message.content
            m_position(position)
            m_id(entry_id)
            m_time(time_ms)
            if content.__class__ is str:
                m_text(content)
            elif len(content) == 1:
                block = content[0]
                m_text(block.text if block.__class__ is text_block else "")
            else:
                m_text("\n".join([block.text for block in content if block.__class__ is text_block]))
            kind = message.__class__
            if kind is assistant:
                m_role("assistant")
                m_provider(message.provider)
                m_model(message.model)
                m_stop(message.stopReason)
                for block in content:
                    if block.__class__ is call:
                        call_id = block.id or ""
                        on_call(call_id, (file, sid, entry_id, call_id, block.name, block.arguments))
                add_usage(_typed_usage_row(file, sid, entry_id, time_ms, message))
                continue
            m_provider(None)
            m_model(None)
            m_stop(None)
            if kind is result:
                m_role("toolResult")
                on_result(message.toolCallId or "", entry_id, message.isError)
            else:
                m_role("user")
            continue
        get = entry.get
        entry_id = get("id")
        kind = get("type")
        e_position(position)
        e_id(entry_id)
        e_parent(get("parentId"))
        e_type(kind)
        e_stamp(get("timestamp"))
        e_json(raw if raw is not None else _json_text(entry))
        if len(held) >= BATCH_ROWS:
            for table in tables.values():
                table.flush()
        if kind != "message":
            if kind == "session_info":
                name = session_name(entry, name)  # type: ignore[arg-type]
            continue
        message = get("message")
        if message.__class__ is not dict:
            continue
        role = message.get("role")
        stamp = message.get("timestamp")
        if stamp.__class__ is int and -_INT64 < stamp < _INT64:
            time_ms = stamp
        elif isinstance(stamp, int | float) and not isinstance(stamp, bool):
            time_ms = int64(stamp)
        else:
            time_ms = iso_to_ms(get("timestamp"))
        messages += 1
        content = message.get("content")
        m_position(position)
        m_id(entry_id)
        m_role(role)
        m_time(time_ms)
        m_provider(message.get("provider"))
        m_model(message.get("model"))
        m_stop(message.get("stopReason"))
        m_text(_text(content))
        if role == "assistant":
            own_id = entry_id if entry_id.__class__ is str else _s(entry_id)
            if content.__class__ is list:
                for block in content:
                    if block.__class__ is dict and block.get("type") == "toolCall":
                        call_id = _s(block.get("id")) or ""
                        on_call(call_id, (file, sid, own_id, call_id, _s(block.get("name")),
                                          json_text(block.get("arguments"))))
            usage = message.get("usage")
            if usage.__class__ is dict:
                add_usage(_usage_row(file, sid, own_id, time_ms, message, usage))
        elif role == "toolResult":
            on_result(_s(message.get("toolCallId")) or "", entry_id if entry_id.__class__ is str else _s(entry_id),
                      bool(message.get("isError")))
    return count, messages, name


def _typed_usage_row(file: str, sid: str | None, entry_id: str, time_ms: int | None, message: object) -> tuple:
    """`_usage_row` of a typed.py ExportAssistant: its counts are ints within 64 bits (typed.py),
    so only -2**63, which int64() makes 0, needs a look."""
    usage = message.usage  # type: ignore[attr-defined]
    counts = [usage.input, usage.output, usage.cacheRead, usage.cacheWrite]
    if not -_INT64 < min(counts):
        counts = [int64(n) for n in counts]
    total = usage.totalTokens
    if not -_INT64 < total:
        total = 0
    total = total or sum(counts)
    cost = usage.cost
    own = None if cost.__class__ is UnsetType else recorded_cost(cost.total, counts)  # (an unset total: no class)
    return _priced(file, sid, entry_id, time_ms, message.provider, message.model,  # type: ignore[attr-defined]
                   counts, total, own)


def _usage_row(file: str, sid: str | None, entry_id: str | None, time_ms: int | None, message: dict,
               usage: dict) -> tuple:
    get = usage.get
    counts = [get("input"), get("output"), get("cacheRead"), get("cacheWrite")]
    total = get("totalTokens")
    # int64() skipped for the common counts (ints in range): this runs for every assistant message
    if not (all(n.__class__ is int for n in counts) and -_INT64 < min(counts) and max(counts) < _INT64):
        counts = [int64(n) for n in counts]
    if total.__class__ is not int or not -_INT64 < total < _INT64:
        total = int64(total)
    total = total or sum(counts)
    own = _cost(usage, counts)
    provider, model = message.get("provider"), message.get("model")
    provider = provider if provider.__class__ is str else _s(provider)
    model = model if model.__class__ is str else _s(model)
    return _priced(file, sid, entry_id, time_ms, provider, model, counts, total, own)


def _priced(file: str, sid: str | None, entry_id: str | None, time_ms: int | None, provider: str | None,
            model: str | None, counts: list[int], total: int, own: float | None) -> tuple:
    """A usage row: its own cost where it recorded one, else priced as `harnesskit usage` prices it."""
    cost = own if own is not None else \
        message_cost(UsageRow(file, sid, None, "pi", entry_id, time_ms, provider, model, *counts, total, own))
    return (file, sid, entry_id, time_ms, provider, model, *counts, total, cost, own is not None)
