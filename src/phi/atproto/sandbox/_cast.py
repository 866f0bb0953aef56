"""The sandbox's cast: who lives on the local network, and the file that says how to log in."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from phi.atproto._session import ClientConfig
from phi.errors import InvalidInput

__all__ = ["CAST", "CastMember", "CastRole", "SandboxAccount", "SandboxInfo", "cast_env"]


@dataclass(frozen=True, kw_only=True)
class CastRole:
    """One account the launcher creates on every start."""

    name: str
    """Short name, used on the command line (`phi sandbox say alice ...`)."""
    handle: str
    """The handle (the PDS reserves some names, `operator` among them)."""
    password: str
    """The account password (known, so a person can log in from any client)."""
    display_name: str
    """Profile display name."""
    description: str
    """Profile bio."""
    pds: Literal["main", "elsewhere"] = "main"
    """Which PDS holds the account: the network's own (the AppView reads it first hand), or
    a second one, as an account hosted anywhere else on the network is."""


CAST: tuple[CastRole, ...] = (
    CastRole(
        name="phi",
        handle="phi.test",
        password="sandbox-phi",
        display_name="phi",
        description="the bot",
    ),
    CastRole(
        name="operator",
        handle="phi-operator.test",
        password="sandbox-operator",
        display_name="Operator",
        description="phi's owner",
    ),
    CastRole(
        name="alice",
        handle="alice.test",
        password="sandbox-alice",
        display_name="Alice",
        description="likes birds",
    ),
    CastRole(
        name="bob",
        handle="bob.test",
        password="sandbox-bob",
        display_name="Bob",
        description="likes boats",
    ),
    CastRole(
        name="faraway",
        handle="faraway.elsewhere",
        password="sandbox-faraway",
        display_name="Faraway",
        description="lives on another PDS",
        pds="elsewhere",
    ),
)
"""phi, its owner, two people to talk to it, and one person on a second PDS."""

CastMember = str
"""A cast member's short name: `phi`, `operator`, `alice`, `bob` or `faraway`."""


class SandboxAccount(BaseModel):
    """One account as the launcher wrote it to the cast file."""

    model_config = ConfigDict(frozen=True)

    name: str
    handle: str
    did: str
    password: str
    app_password: str
    pds_url: str | None = None
    """The account's PDS when it is not the network's own (`SandboxInfo.pds_url`)."""


class SandboxInfo(BaseModel):
    """The cast file: where the running network is and how to log in to it."""

    model_config = ConfigDict(frozen=True)

    plc_url: str
    pds_url: str
    appview_url: str
    hook_url: str
    pid: int
    accounts: dict[str, SandboxAccount]
    feeds: dict[str, str] = {}
    """The custom feeds the network serves, by name: their generator records' AT-URIs."""

    def account(self, name: str) -> SandboxAccount:
        """The account of cast member `name` (`phi`, `operator`, `alice`, `bob`)."""
        try:
            return self.accounts[name]
        except KeyError:
            known = ", ".join(sorted(self.accounts))
            raise InvalidInput(f"no cast member {name!r}; the cast is {known}") from None

    def client_config(self, name: str, *, nsid_prefix: str = "io.phi") -> ClientConfig:
        """How to log in as cast member `name` with its app password.

        phi follows the consent rule for mentions (its owner is `operator`); the people
        may tag anyone, as any Bluesky client lets them.
        """
        account = self.account(name)
        return ClientConfig(
            pds_url=account.pds_url or self.pds_url,
            plc_url=self.plc_url,
            handle=account.handle,
            password=account.app_password,
            nsid_prefix=nsid_prefix,
            owner_handle=self.account("operator").handle if "operator" in self.accounts else None,
            mention_policy="consent" if name == "phi" else "anyone",
        )

    @classmethod
    def read(cls, path: Path) -> SandboxInfo:
        """Read the cast file the launcher wrote."""
        return cls.model_validate(json.loads(path.read_text()))


def cast_env(cast: tuple[CastRole, ...] = CAST) -> str:
    """The cast as the JSON the launcher reads from `PHI_SANDBOX_CAST`."""
    return json.dumps(
        [
            {
                "name": r.name,
                "handle": r.handle,
                "password": r.password,
                "displayName": r.display_name,
                "description": r.description,
                "pds": r.pds,
            }
            for r in cast
        ]
    )
