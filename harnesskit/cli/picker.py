"""`continue --pick`: choose a session in the terminal (pi's -r, Claude Code's --resume).

Newest first; typing filters by name and first message (every word must appear); Up/Down move,
Enter resumes, Esc or Ctrl-C leaves without choosing.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from harnesskit.session.format import shown_time
from harnesskit.session.store import Summary


def _printable(text: str) -> str:
    """One line with no control characters: names and prompts come from untrusted files."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in " ".join(text.split()))


def label(summary: Summary) -> str:
    when = shown_time(summary.modified)
    said = _printable(summary.name or summary.first_user or "(no message yet)")
    return f"{when:<16}  {summary.messages:>4} msgs  {said}"


def matches(summary: Summary, query: str) -> bool:
    haystack = f"{summary.name or ''} {summary.first_user or ''}".casefold()
    return all(word in haystack for word in query.casefold().split())


def pick(summaries: list[Summary], title: str) -> Path | None:
    """The path chosen, or None when the user left without choosing."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import Dimension, HSplit, Layout, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
    from prompt_toolkit.layout.processors import BeforeInput

    state = {"selected": 0}
    query = Buffer(multiline=False, on_text_changed=lambda _: state.update(selected=0))

    def shown() -> list[Summary]:
        return [s for s in summaries if matches(s, query.text)]

    def rows() -> list[tuple[str, str]]:
        visible = shown()
        if not visible:
            return [("class:dim", "  no session matches\n")]
        out = []
        for i, summary in enumerate(visible[:200]):
            chosen = i == state["selected"]
            out.append(("reverse" if chosen else "", f"{'>' if chosen else ' '} {label(summary)}\n"))
        return out

    keys = KeyBindings()

    @keys.add("up")
    def _up(event: object) -> None:
        state["selected"] = max(state["selected"] - 1, 0)

    @keys.add("down")
    def _down(event: object) -> None:
        state["selected"] = min(state["selected"] + 1, max(len(shown()) - 1, 0))

    @keys.add("enter")
    def _enter(event) -> None:  # noqa: ANN001 - prompt_toolkit's KeyPressEvent
        visible = shown()
        event.app.exit(result=visible[state["selected"]].path if visible else None)

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    @keys.add("c-d")
    def _leave(event) -> None:  # noqa: ANN001
        event.app.exit(result=None)

    layout = Layout(HSplit([
        Window(FormattedTextControl(f"{title}: type to filter, Up/Down to move, Enter to resume, Esc to leave"),
               height=1),
        Window(BufferControl(query, input_processors=[BeforeInput("filter> ")]), height=1),
        Window(FormattedTextControl(rows), wrap_lines=False, height=Dimension(min=1, max=20)),
    ]), focused_element=query)
    app: Application[Path | None] = Application(layout=layout, key_bindings=keys, full_screen=False,
                                                erase_when_done=True)
    return app.run()
