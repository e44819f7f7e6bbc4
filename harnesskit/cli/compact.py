"""`harnesskit compact`: summarise a session's older messages into a `compaction` entry, as
`/compact` does in a chat, appended through the writer under the session's lock."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from harnesskit.agent.models import model_spec
from harnesskit.agent.summarize import SummaryError

from . import compacting
from .conversation import open_live
from .errors import FOUND_PROBLEMS, Fail, warn
from .options import ChatOptions, make_model, settings_from
from .refs import regular
from .screen import echo


@click.command("compact")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--instructions", metavar="TEXT", help="What the summary should focus on.")
@click.option("--keep-recent", "keep_recent", type=click.IntRange(min=1), metavar="TOKENS",
              help="Keep about this many tokens of the newest messages (default: config, pi's 20000).")
@click.option("--model", metavar="M", help="The model that writes the summary (default: the session's, else config).")
@click.option("--base-url", metavar="URL", help="OpenAI-compatible server (else OPENAI_BASE_URL).")
def compact(file: Path, instructions: str | None, keep_recent: int | None, model: str | None,
            base_url: str | None) -> None:
    """Summarise FILE's older messages so the context starts again small.

    Everything before the cut (the newest messages, about keep-recent tokens, stay verbatim;
    a tool result is never cut from its call) is summarised by the model, and a pi `compaction`
    entry is appended at the leaf: from then on the context is the summary, then the kept
    messages. A session another process is writing is refused; a failed summary writes nothing
    (exit 1). Nothing to summarise is not an error (exit 0, says so).

    \b
    Examples:
      harnesskit compact session.jsonl
      harnesskit compact session.jsonl --instructions "keep the numbers computed"
      harnesskit compact session.jsonl --keep-recent 2000 --model openai:llama3
    """
    options = ChatOptions(prompts=(), model=model, base_url=base_url, session_dir=None, no_session=False,
                          fsync=None, tools="")
    settings = settings_from(options)
    if keep_recent is not None:
        limits = settings.compaction
        settings.compaction = dataclasses.replace(
            limits, settings=dataclasses.replace(limits.settings, keep_recent_tokens=keep_recent))
    live = open_live(regular(file), settings)
    try:
        restored = model_spec(live.context().model, settings.providers)
        spec = settings.model_spec if settings.model_given or restored is None else restored
        summarizer = make_model(spec, settings)
        if restored is None and not settings.model_given and live.context().model:
            warn(f"the session's model is not one harnesskit runs; {spec} writes the summary")
        try:
            done = compacting.compact(live, summarizer, settings.compaction, instructions)
        except SummaryError as error:
            raise Fail(f"{file}: {error}; nothing was written", FOUND_PROBLEMS) from None
        except OSError as error:
            raise Fail(f"{file}: cannot write the session: {error.strerror or error}") from None
    finally:
        live.close()
    if done is None:
        echo(f"{file}: nothing to compact (the context fits in the "
                   f"{settings.compaction.settings.keep_recent_tokens} tokens a compaction keeps)")
        return
    echo(f"{file}: compacted {done.summarised} messages into a summary (entry {done.entry['id']}); "
               f"kept {done.kept}, tokens before {done.entry['tokensBefore']}, now ~{done.tokens_after}")
