"""Text from outside (a session file, a model's reply) made safe for where it goes.

Two sinks, two rules. A terminal must never receive a control character it would act on (ESC
starts a sequence that can retitle the window or rewrite the screen, C1 0x9b is a one-byte CSI,
CR overwrites a line) nor a lone surrogate (no encoding can write it), nor an invisible character
that changes what the text around it shows (a bidi override reorders a line: "Trojan Source"):
`visible` spells each one out, so ``"\\x1b]0;pwned\\x07"`` shows as the text ``\\x1b]0;pwned\\x07``.
JSON must stay exact: `escape_json` rewrites the control characters and lone surrogates inside an
already-serialised JSON text as ``\\uXXXX`` escapes, which decode to the very same string.

Both are pure and cheap when there is nothing to replace (inspect prints millions of rows through
them): a C-level test first, the regex only for text that may need it.
"""

from __future__ import annotations

import re

# Invisible characters that change how the text around them shows: the bidi marks, embeddings,
# overrides and isolates (U+061C, U+200E-F, U+202A-E, U+2066-9), the line and paragraph separators,
# the zero-width space and no-break space (U+200B, U+FEFF: a hidden difference between two names),
# the deprecated format controls and the interlinear annotations. Not ZWNJ/ZWJ (U+200C-D): words of
# Persian and Indic scripts, and emoji sequences, need them.
_INVISIBLE = "\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u206f\ufeff\ufff9-\ufffb"
# C0 except tab and newline, DEL, C1, the surrogate range (only lone ones exist in a Python str
# decoded from JSON: a valid pair is decoded to one code point), and the invisible ones above.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{_INVISIBLE}]")
# What JSON serialisers leave raw (they always escape C0) and a terminal acts on: DEL, C1, lone
# surrogates. The invisible ones stay as they are in JSON: its readers decode an escape to the same
# character anyway, and finding their lead bytes (common: e2 is every dash and curly quote) would
# cost the --json lanes a pattern search over every chunk (0.5 s per 100 MB).
_JSON_RAW = re.compile("[\x7f-\x9f\ud800-\udfff]")


# The invisible characters and C1 as UTF-8 bytes (C0 and DEL are one byte each): C1 is c2 80..9f,
# and every invisible one starts with d8, e2 or ef.
_RAW_UTF8 = re.compile(rb"\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8b\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xaf]"
                       rb"|\xef\xbb\xbf|\xef\xbf[\xb9-\xbb]")
LEAD_BYTES = b"\xc2\xd8\xe2\xef"


def raw_in_json(data: bytes) -> bool:
    """Whether UTF-8 JSON text holds a character `escape_json` rewrites (orjson writes no lone
    surrogate): DEL is 7f and C1 is c2 80..9f. A byte search: both bytes are rare in text."""
    return b"\x7f" in data or b"\xc2" in data


def raw_utf8(data: bytes) -> bool:
    """Whether UTF-8 bytes hold a character beyond C0 and DEL that `visible` spells out."""
    return _RAW_UTF8.search(data) is not None


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible(text: str) -> str:
    """`text` with every control character but newline and tab (and every lone surrogate and
    invisible reordering character) written as its escape (``\\x1b``, ``\\x9b``, ``\\ud800``,
    ``\\u202e``); unchanged when there is none."""
    return text if text.isprintable() else _UNSAFE.sub(_spelled, text)  # a C loop first: most text is


def spelled(text: str) -> str:
    """`text` (a file name, or text from a file) on one line of output: `visible`, with newline and
    tab spelled ``\\n`` and ``\\t`` as an error line spells them. A name may hold any character but /
    and NUL: raw, a newline in it would split a `file:line:` record, or forge a row of its own."""
    return text if text.isprintable() else visible(text).replace("\n", "\\n").replace("\t", "\\t")


def escape_json(dumped: str) -> str:
    """A serialised JSON text with DEL, C1 and lone surrogates as ``\\uXXXX`` escapes.

    Such characters can only occur inside JSON strings (the syntax outside them is ASCII), where
    an escape denotes the same character: the value is unchanged, the text is safe to print and,
    for lone surrogates, encodable at all (as JSON.stringify writes them)."""
    return _JSON_RAW.sub(_json_escape, dumped)


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(value: object) -> object:
    """A JSON-like value with every lone surrogate replaced by U+FFFD: what a UTF-8 request body can
    carry (a session may hold one, valid JSON; a server cannot be sent it). Iterative: a session may
    nest a message as deep as the reader reads (1024 levels), deeper than Python's recursion."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if not isinstance(value, list | dict):
        return value
    root: list[object] = [None]
    stack: list[tuple[object, list | dict, object]] = [(value, root, 0)]  # (source, container, key)
    while stack:
        source, into, key = stack.pop()
        if isinstance(source, str):
            into[key] = _SURROGATE.sub("\ufffd", source)  # type: ignore[index]
        elif isinstance(source, list):
            copy: list[object] = [None] * len(source)
            into[key] = copy  # type: ignore[index]
            stack.extend((item, copy, i) for i, item in enumerate(source))
        elif isinstance(source, dict):
            mapping: dict[str, object] = dict.fromkeys(source)
            into[key] = mapping  # type: ignore[index]
            stack.extend((item, mapping, k) for k, item in source.items())
        else:
            into[key] = source  # type: ignore[index]
    return root[0]


def one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line, whitespace collapsed; with a `limit`, only as much of it as shows more
    than `limit` characters (so a megabyte tool output is never joined to show a row)."""
    if limit is None or len(text) <= limit + 8:
        return squeezed(text)
    size = limit + 8
    while True:
        head = squeezed(text[:size])
        if len(head) > limit or size >= len(text):
            return head
        size *= 4


def squeezed(text: str) -> str:
    """`" ".join(text.split())`: each run of whitespace one space, none at the ends. Most text needs
    no split: when its only whitespace is spaces and newlines, none of them side by side but at the
    ends, it is the text with each newline a space and its ends stripped, found by C loops without a
    list of words. ASCII text (most of it) is proven free of the other whitespace by a memchr for
    each of those characters (all of them a third of isprintable's loop over the text); any other
    text by isprintable (a printable text has no whitespace but the space)."""
    flat = (text.replace("\n", " ") if "\n" in text else text).strip(" ")
    if flat.isascii():  # str.split's ASCII whitespace: space, \t \n \v \f \r and \x1c-\x1f
        if not ("  " in flat or "\t" in flat or "\r" in flat or "\x0b" in flat or "\x0c" in flat
                or "\x1c" in flat or "\x1d" in flat or "\x1e" in flat or "\x1f" in flat):
            return flat
    elif flat.isprintable() and "  " not in flat:
        return flat
    return " ".join(text.split())
