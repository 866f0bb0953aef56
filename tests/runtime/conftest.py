"""Fixtures of the runtime tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


@pytest.fixture
async def health() -> AsyncIterator[dict[str, int]]:
    """Three loopback health URLs answering the status set per path."""
    codes = {"/pds": 200, "/relay": 200, "/feed": 200}

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        code = codes[head.split()[1]]
        writer.write(
            f"HTTP/1.1 {code} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    codes["port"] = server.sockets[0].getsockname()[1]
    async with server:
        yield codes
