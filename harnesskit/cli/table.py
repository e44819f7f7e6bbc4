"""Tables rendered row by row with widths fixed up front, measured in display width.

tabulate needs every row before it prints the first (it computes widths and infers a type for every
cell); a session can have a million rows. Here the widths are chosen first (from the terminal, or
from the rows when a small table has them all), so each row is one line printed as it comes, cut to
fit: CJK and other wide characters count two columns, combining marks none.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

#: the --format choices: every one streams (tabulate's other formats need the whole table first)
FORMATS = ("simple", "plain", "github", "grid", "psql", "tsv")
ELLIPSIS = "…"
#: the widths a table is drawn in (--width, $COLUMNS): from one column (every width is drawn, cut with
#: …) to 10,000, wider than any screen, so a mistyped width cannot pad each row with gigabytes
MIN_WIDTH, MAX_WIDTH = 1, 10_000
#: at most how many rows `-n` asks for: more than any store holds, and within the 64-bit integers SQLite
#: (search's LIMIT) and orjson (list's cache key) take, where 10**20 was an internal error
ROWS = (1, 1_000_000_000)


_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


_NARROW: set[str] = set()  # characters met so far that take one column (→, …, box drawing: the common ones)


@lru_cache(maxsize=4096)
def char_width(ch: str) -> int:
    from wcwidth import wcwidth  # imported at the first wide character: it costs a tenth of a second

    width = max(wcwidth(ch), 0)
    if width == 1:
        _NARROW.add(ch)
    return width


def terminal_width(fallback: int) -> int:
    """The terminal's columns ($COLUMNS first, as shutil reads it), held within MIN_WIDTH..MAX_WIDTH:
    an absurd $COLUMNS (shutil ignores one that is not a positive number) must not size a row."""
    return min(max(shutil.get_terminal_size((fallback, 24)).columns, MIN_WIDTH), MAX_WIDTH)


def load_widths() -> None:
    """Import what char_width needs now, before a forked worker starts: both processes then have it (at
    the first wide character each imported it, some 40 modules), and no import is under way when a
    Ctrl-C comes (one landing as an import ends is printed by CPython as an ignored exception)."""
    char_width("→")


def display_width(text: str) -> int:
    if text.isascii():
        return len(text)
    first = _NOT_ASCII.search(text).start()  # type: ignore[union-attr]
    if text[first + 1:].isascii():  # one character beyond ASCII (a summary's arrow): no list, no set
        ch = text[first]
        return len(text) if ch < "\u0300" or ch in _NARROW else len(text) - 1 + char_width(ch)
    others = _NOT_ASCII.findall(text)  # found in C: the ASCII majority costs nothing here
    if max(others) < "\u0300" or _NARROW.issuperset(others):  # (below the combining marks: one column each)
        return len(text)
    return len(text) - len(others) + sum(map(char_width, others))


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` display columns, an ellipsis marking the cut. Only the first
    `width` characters are measured, so a long text costs no more than a short one."""
    if len(text) * 2 <= width:  # no character takes more than two columns: it fits, unmeasured
        return text
    return fit_measured(text, width)[0]


def fit_measured(text: str, width: int) -> tuple[str, int]:
    """(`text` cut to `width` columns, its display width)."""
    if width <= 0:
        return "", 0
    n = len(text)
    if text.isascii():
        return (text, n) if n <= width else (text[: width - 1] + ELLIPSIS, width)
    end = min(n, width)
    used = display_width(text[:end])
    if end == n and used <= width:
        return text, used
    while end and used > width - 1:
        end -= 1
        used -= char_width(text[end])
    return text[:end] + ELLIPSIS, used + 1


@dataclass
class Layout:
    """A table's format and column widths; `head()`, `row(cells)` and `end()` give its lines."""

    fmt: str
    widths: list[int]
    right: Sequence[bool]  # right-aligned columns (numbers)
    headers: Sequence[str]
    _made: str = field(default="", repr=False)
    _made_for: list[int] = field(default_factory=list, repr=False)

    def _cells(self, cells: Sequence[str]) -> list[str]:
        out = []
        for c, w, r in zip(cells, self.widths, self.right, strict=True):
            if c.isascii():  # the common case, in C: cut and pad by length
                if len(c) > w:
                    c = c[: w - 1] + ELLIPSIS if w > 0 else ""
                out.append(c.rjust(w) if r else c.ljust(w))
            else:
                c, used = fit_measured(c, w)
                gap = " " * (w - used)
                out.append(gap + c if r else c + gap)
        return out

    def _rule(self, fill: str, edge: str, cross: str) -> str:
        return edge + cross.join(fill * (w + 2) for w in self.widths) + edge

    def template(self) -> str:
        """A str.format template for every column but the last, with the separator after it: a row
        whose first cells are ASCII (the common case) is formatted in C."""
        if self._made_for != self.widths:
            specs = [f"{{{i}:{'>' if r else '<'}{w}}}" for i, (w, r) in enumerate(zip(self.widths[:-1], self.right,
                                                                                        strict=False))]
            boxed = self.fmt not in ("simple", "plain")
            self._made = "| " + " | ".join(specs) + " | " if boxed else "  ".join(specs) + "  "
            self._made_for = list(self.widths)
        return self._made

    def line(self, cells: Sequence[str]) -> str:
        if self.fmt == "tsv":
            return "\t".join(fit(c, w) for c, w in zip(cells, self.widths, strict=True))
        first = cells[:-1]
        if "".join(first).isascii():
            widths = self.widths
            cut = [c if len(c) <= w else c[: w - 1] + ELLIPSIS for c, w in zip(first, widths, strict=False)]
            last, used = fit_measured(cells[-1], widths[-1])
            gap = " " * (widths[-1] - used)
            if self.fmt in ("simple", "plain"):
                return self.template().format(*cut) + (gap + last if self.right[-1] else last)
            return self.template().format(*cut) + (gap + last if self.right[-1] else last + gap) + " |"
        padded = self._cells(cells)
        if self.fmt in ("simple", "plain"):
            return "  ".join(padded).rstrip()
        return "| " + " | ".join(padded) + " |"

    def head(self) -> list[str]:
        top = self.line(self.headers)
        if self.fmt == "simple":
            return [top, "  ".join("-" * w for w in self.widths)]
        if self.fmt == "github":
            return [top, self._rule("-", "|", "|")]
        if self.fmt == "psql":
            return [self._rule("-", "+", "+"), top, self._rule("-", "|", "+")]
        if self.fmt == "grid":
            return [self._rule("-", "+", "+"), top, self._rule("=", "+", "+")]
        return [top]

    def row(self, cells: Sequence[str]) -> str:
        text = self.line(cells)
        return text + "\n" + self._rule("-", "+", "+") if self.fmt == "grid" else text

    def end(self) -> list[str]:
        return [self._rule("-", "+", "+")] if self.fmt == "psql" else []

    def overhead(self) -> int:
        """Columns a row takes besides its cells."""
        n = len(self.widths)
        if self.fmt == "tsv":
            return n - 1
        if self.fmt in ("simple", "plain"):
            return 2 * (n - 1)
        return 3 * (n - 1) + 4


def flexible(fmt: str, headers: Sequence[str], widths: list[int], right: Sequence[bool], flex: int,
             total: int | None, minimum: int = 10) -> Layout:
    """A layout whose column `flex` takes what `total` columns leave (None: no limit, 1000 columns)."""
    layout = Layout(fmt, [*widths], right, headers)
    if total is None:
        layout.widths[flex] = 1000
        return layout
    least = max(minimum, display_width(headers[flex]))
    sized = layout.widths
    # too narrow for every column at its width: the widest of the others give way first (to 8 columns)
    while sum(w for i, w in enumerate(sized) if i != flex) + layout.overhead() + least > total:
        widest = max((i for i in range(len(sized)) if i != flex), key=sized.__getitem__)
        if sized[widest] <= 8:
            break
        sized[widest] -= 1
    others = sum(w for i, w in enumerate(sized) if i != flex)
    sized[flex] = max(total - others - layout.overhead(), least)
    return layout


def fitted(fmt: str, headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
           flex: int | None = None, total: int | None = None) -> Layout:
    """A layout for rows that are all known: each column as wide as its widest cell; column `flex`
    (if given) is cut so a row fits `total`."""
    widths = [max([display_width(h), *(display_width(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    if flex is None:
        return Layout(fmt, widths, right, headers)
    layout = flexible(fmt, headers, widths, right, flex, total)
    layout.widths[flex] = min(layout.widths[flex], widths[flex])
    return layout


def render(layout: Layout, rows: Iterable[Sequence[str]]) -> Iterable[str]:
    yield from layout.head()
    for cells in rows:
        yield layout.row(cells)
    yield from layout.end()
