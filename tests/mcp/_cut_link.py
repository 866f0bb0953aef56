"""A loopback TCP relay whose link can be cut and restored: a laptop losing its server.

The relay keeps its port while cut (a connection is accepted and reset at once, as a
dropped network or a stopped server looks to the client), so the client's configured URL
stays right when the link comes back; stopping and restarting the server would move it to
another port.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType
from typing import Self

__all__ = ["CutLink"]


def _reset(conn: socket.socket) -> None:
    # Linger 0: closing sends a reset, not an orderly end, as a lost link does.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


class CutLink:
    """Relay 127.0.0.1:`port` to 127.0.0.1:`target`; `cut()` and `restore()` the link."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._live: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._listener.close()
        self.cut()

    def cut(self) -> None:
        """Reset every open connection and every new one until `restore`."""
        self._cut.set()
        with self._lock:
            live, self._live = self._live, []
        for conn in live:
            with contextlib.suppress(OSError):  # already closed by its other end
                _reset(conn)

    def restore(self) -> None:
        self._cut.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            if self._cut.is_set():
                _reset(client)
                continue
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._live += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the link was cut, or one end went away: the other end sees it
