"""An HTTP client that holds every streamed model request to an overall deadline and a reply size
cap (contract §7), whatever the server does.

The client library's timeouts are per read: a server that trickles keep-alive bytes never trips
them, and nothing bounds how much a reply may send. Here each request gets a watchdog thread that
shuts the connection's socket down at the deadline (a silent server: the blocked read returns at
once), and every chunk received checks the clock (a trickling server) and counts the bytes (an
endless one). Connections are not kept alive between requests, so the watchdog always knows the
socket from the moment it is connected (headers trickled on a reused connection would escape it).
"""

from __future__ import annotations

import importlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import openai


class ReplyCut(Exception):
    """The request passed its deadline or its size cap; ``message`` is one readable line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def httpx_module() -> ModuleType:
    """The httpx the openai client is built on (openai 3 ships it as ``httpx2``, older releases use ``httpx``)."""
    for cls in openai.DefaultHttpxClient.__mro__[1:]:
        root = cls.__module__.partition(".")[0]
        if root.startswith("httpx"):
            return importlib.import_module(root)
    raise ImportError("the openai client is not built on httpx")


class _Watchdog:
    """Shuts the request's sockets down once `deadline` seconds have passed since it started."""

    def __init__(self, deadline: float) -> None:
        self.started = time.monotonic()
        self.deadline = deadline
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(deadline, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)

    def expired(self) -> bool:
        return self.fired or time.monotonic() - self.started > self.deadline

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def guarded_client(deadline: float, max_bytes: int, *, read_timeout: float, connect_timeout: float,
                   describe: Callable[[], str]) -> Any:
    """An ``openai.DefaultHttpxClient`` whose streamed responses raise ReplyCut past either limit.
    `describe()` names the server in the messages."""
    httpx = httpx_module()

    def too_late() -> ReplyCut:
        return ReplyCut(f"timed out after {deadline:g}s (request_timeout) without a complete reply from {describe()}")

    class GuardedBody(httpx.SyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, inner: Any, dog: _Watchdog) -> None:
            self._inner, self._dog = inner, dog

        def __iter__(self) -> Iterator[bytes]:
            received = 0
            try:
                for data in self._inner:
                    received += len(data)
                    if received > max_bytes:
                        raise ReplyCut(f"the reply from {describe()} passed max_reply_bytes ({max_bytes} bytes); "
                                       "cut there")
                    if self._dog.expired():
                        raise too_late()
                    yield data
            except ReplyCut:
                raise
            except Exception as exc:
                if self._dog.fired:  # the watchdog shut the socket: a silent server
                    raise too_late() from None
                if isinstance(exc, httpx.TimeoutException):
                    raise ReplyCut(f"timed out after {read_timeout:g}s of silence from {describe()}") from None
                raise
            if self._dog.fired:
                raise too_late()

        def close(self) -> None:
            self._dog.cancel()
            self._inner.close()

    class GuardedClient(openai.DefaultHttpxClient):  # type: ignore[misc, valid-type]
        def send(self, request: Any, **kwargs: Any) -> Any:
            dog = _Watchdog(deadline)
            outer = request.extensions.get("trace")

            def trace(name: str, info: dict[str, Any]) -> None:
                if name.endswith((".connect_tcp.complete", ".start_tls.complete")):
                    stream = info.get("return_value")
                    sock = stream.get_extra_info("socket") if stream is not None else None
                    if isinstance(sock, socket.socket):
                        dog.watch(sock)
                if outer is not None:
                    outer(name, info)

            request.extensions = {**request.extensions, "trace": trace}
            try:
                response = super().send(request, **kwargs)
            except Exception:
                dog.cancel()
                if dog.fired:
                    raise too_late() from None
                raise
            response.stream = GuardedBody(response.stream, dog)
            return response

    # the deadline is the watchdog's; a read timeout only ends a long silence sooner
    timeout = httpx.Timeout(read_timeout, connect=min(connect_timeout, deadline))
    # identity: the cap counts the bytes the reply really holds, never a compressed form of them
    return GuardedClient(timeout=timeout, limits=httpx.Limits(max_keepalive_connections=0),
                         headers={"Accept-Encoding": "identity"})
