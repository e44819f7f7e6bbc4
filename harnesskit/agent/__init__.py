"""The agent: context + model + tools -> events.

Nothing here touches files or imports the session layer; the caller subscribes to the events
(``MessageEnd`` in particular) and decides where messages are saved.
"""
