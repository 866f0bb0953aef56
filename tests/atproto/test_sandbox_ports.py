"""Which ports and schemas a sandbox network takes (finding 25.2): a network whose schema is
named after its port moves off taken ports (`tests/test_sandbox_demo.py` starts one); one
with a fixed schema, such as the tests' own, never does."""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest

from phi.atproto.errors import SandboxStartFailed
from phi.atproto.sandbox import Sandbox, SandboxConfig, schema_for
from phi.config import Settings

pytestmark = pytest.mark.anyio


def test_each_port_has_its_own_schema() -> None:
    assert schema_for(2582) == "phi_sandbox"  # the default network's, as before
    assert schema_for(2586) == "phi_sandbox_cfig"
    assert len({schema_for(port) for port in range(2582, 2700, 4)}) == 30
    config = SandboxConfig(
        cache_dir=Settings(_env_file=None).resolved_sandbox_cache(),
        state_dir=Settings(_env_file=None).home / "sandbox",
        base_port=2590,
    )
    assert config.schema_name == "phi_sandbox_cfja"
    assert replace(config, schema="mine").schema_name == "mine"


@pytest.mark.timeout(900)  # on a fresh clone, the first `up` installs the network
async def test_a_network_with_a_fixed_schema_keeps_its_ports() -> None:
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", 0))
        other_program.listen()
        port = other_program.getsockname()[1]
        config = SandboxConfig(
            cache_dir=Settings(_env_file=None).resolved_sandbox_cache(),
            state_dir=Settings(_env_file=None).home / "sandbox",
            base_port=port,
            schema="phi_fixed",
        )
        said: list[str] = []
        with pytest.raises(SandboxStartFailed, match=rf"port {port} \(plc\) is already in use"):
            await Sandbox(config).up(say=said.append)
    assert said == []
