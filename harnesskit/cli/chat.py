"""`harnesskit chat`: a new session, then the conversation (cli/conversation.py drives it)."""

from __future__ import annotations

import click

from .conversation import Conversation, banner, interactive, screen_for, start_new
from .options import ChatOptions, chat_options, make_model, settings_from


@click.command("chat")
@chat_options
def chat(**kwargs: object) -> None:
    """Talk to a model; every message is appended to a new session file as it is finalised.

    Interactive with line editing when stdin is a terminal; with a pipe, each line is a prompt
    (acted on as it arrives); -p runs the given prompts and exits. Only the assistant's answer goes
    to stdout (--json: the agent's events as JSON Lines); tool lines, status and the session's path
    go to stderr. Type /help in a chat for its commands. Exit 1 after a model error, 130 after
    Ctrl-C during a -p prompt.

    \b
    Examples:
      harnesskit chat
      harnesskit chat -p "hello" -p "what is 12*8"
      printf 'hello\\nwhat is 2+2\\n' | harnesskit chat
      harnesskit chat --model openai:llama3 --base-url http://localhost:11434/v1
      harnesskit chat --model script:replies.yaml --no-session
      harnesskit chat -p "summarise README.md" > summary.txt
      harnesskit chat --json -p "what is 12*8" | jq -c 'select(.type == "tool_execution_end")'
      harnesskit chat --color never
    """
    options = ChatOptions(**kwargs)  # type: ignore[arg-type]
    settings = settings_from(options)
    model = make_model(settings.model_spec, settings)
    live = start_new(settings, model)
    screen = screen_for(options)
    if not options.prompts and interactive():
        banner(live, model, screen)
    raise SystemExit(Conversation(live, model, settings, screen).run(options.prompts))
