"""The as-you-type features' shared part (lsp/services/as_you_type.py): the first settings load
the engine part only when they switch the feature on; settings that leave it off tell "off"
without importing it (those imports would queue before a first chat's, right after a
restart)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from agentls.lsp.services.as_you_type import AsYouType


class FakeServer:
    def __init__(self) -> None:
        self.resolved: object | None = None
        self.spawned: list[Coroutine[Any, Any, Any]] = []

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> object:
        self.spawned.append(coroutine)
        coroutine.close()
        return object()


def feature(server: FakeServer, active: list[bool]) -> tuple[AsYouType[str], list[str]]:
    told: list[str] = []

    async def load() -> str:
        return "engine part"

    typing: AsYouType[str] = AsYouType(server, load, lambda: active[0],  # type: ignore[arg-type]
                                       lambda: told.append("off"))
    return typing, told


def test_off_settings_tell_off_and_load_nothing() -> None:
    server, active = FakeServer(), [False]
    typing, told = feature(server, active)
    assert typing.new_settings(loaded=False) is False and told == []  # no settings yet
    server.resolved = object()
    assert typing.new_settings(loaded=False) is False
    assert told == ["off"] and server.spawned == []


def test_settings_that_switch_it_on_load_it_once() -> None:
    server, active = FakeServer(), [False]
    typing, told = feature(server, active)
    server.resolved = object()
    typing.new_settings(loaded=False)
    active[0] = True
    typing.new_settings(loaded=False)
    typing.new_settings(loaded=False)  # the load under way follows them when it is done
    assert told == ["off"] and len(server.spawned) == 1
    assert typing.new_settings(loaded=True) is True
