"""The as-you-type features' shared part (lsp/services/as_you_type.py): the first settings load
the engine part only when they switch the feature on; settings that leave it off tell "off"
without importing it (those imports would queue before a first chat's, right after a
restart); a loaded part follows new settings and its old client is closed; a status is told
once per change."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from agentls.lsp.services.as_you_type import AsYouType

STATUS = "agentls/testStatus"


class FakeProtocol:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


class FakeServer:
    def __init__(self) -> None:
        self.resolved: object | None = None
        self.settings = "settings"
        self.protocol = FakeProtocol()
        self.spawned: list[Coroutine[Any, Any, Any]] = []

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> object:
        self.spawned.append(coroutine)
        coroutine.close()
        return object()

    def told(self) -> list[str]:
        return [params["status"] for method, params in self.protocol.sent if method == STATUS]


class OldClient:
    async def aclose(self) -> None:
        pass


class Part:
    """An engine part: follows the settings it is given, hands back its old client."""

    def __init__(self) -> None:
        self.followed: list[Any] = []

    def use_settings(self, settings: Any) -> OldClient | None:
        self.followed.append(settings)
        return OldClient() if len(self.followed) > 1 else None


def feature(server: FakeServer, active: list[bool]) -> AsYouType[Part]:
    async def load() -> Part:
        return Part()

    return AsYouType(server, load, lambda: active[0], STATUS)  # type: ignore[arg-type]


def test_off_settings_tell_off_and_load_nothing() -> None:
    server, active = FakeServer(), [False]
    typing = feature(server, active)
    typing.follow_settings(None)
    assert server.told() == [] and server.spawned == []  # no settings yet
    server.resolved = object()
    typing.follow_settings(None)
    typing.follow_settings(None)
    assert server.told() == ["off"] and server.spawned == []  # told once


def test_settings_that_switch_it_on_load_it_once() -> None:
    server, active = FakeServer(), [False]
    typing = feature(server, active)
    server.resolved = object()
    typing.follow_settings(None)
    active[0] = True
    typing.follow_settings(None)
    typing.follow_settings(None)  # the load under way follows them when it is done
    assert server.told() == ["off"] and len(server.spawned) == 1


def test_a_loaded_part_follows_settings_and_its_old_client_is_closed() -> None:
    server, active = FakeServer(), [True]
    typing = feature(server, active)
    server.resolved = object()
    part = Part()
    typing.follow_settings(part)
    assert part.followed == ["settings"] and server.spawned == []  # no old client yet
    typing.follow_settings(part)
    assert len(part.followed) == 2
    assert [c.cr_code.co_name for c in server.spawned] == ["aclose"]  # type: ignore[attr-defined]


def test_a_status_is_told_once_per_change() -> None:
    server = FakeServer()
    typing = feature(server, [True])
    for status in ("off", "idle", "idle", "waiting", "idle", "idle"):
        typing.tell(status, "")
    typing.tell("error", "no server")
    typing.tell("error", "no server")
    typing.tell("error", "another")
    assert server.told() == ["off", "idle", "waiting", "idle", "error", "error"]
