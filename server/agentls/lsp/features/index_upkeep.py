"""Keeping the workspace's search index current while the editor works.

Saved files (``textDocument/didSave``) and files the client reports as created, changed or
deleted (``workspace/didChangeWatchedFiles``) are collected, debounced, and indexed in a
worker thread, so no request waits for it; a large pass (the first one at start-up, or many
files at once) shows ``$/progress``, which the person can cancel. Nothing happens in a
workspace that has no index yet: the agent's first ``search_semantic`` (or ``agentls
index``) creates it, and from then on the server keeps it current.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from agentls.lsp.services.server_context import ServerContext

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.2
LARGE_PASS_FILES = 50  # show $/progress from this many files on


class IndexKeeper:
    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.pending: set[Path] = set()
        self.full_pass = False
        self.started = False
        self._worker: asyncio.Task[None] | None = None
        self._cancel = threading.Event()
        self.passes = 0  # finished passes (tests wait on it through agentls logs)

    def _index_exists(self) -> bool:
        root = self.server.root
        return root is not None and (root / ".agentls" / "index.db").is_file()

    def on_settings(self) -> None:
        if not self.started and self._index_exists():
            self.started = True
            self.full_pass = True  # catch up with what changed while the editor was closed
            self._kick()

    def changed(self, uris: list[str]) -> None:
        if not self._index_exists():
            return
        for uri in uris:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            if path:
                self.pending.add(Path(path))
        self._kick()

    def _kick(self) -> None:
        if self._worker is None or self._worker.done():
            self._worker = self.server.spawn(self._drain())

    async def _drain(self) -> None:
        while self.pending or self.full_pass:
            await asyncio.sleep(DEBOUNCE_S)  # a burst of saves becomes one pass
            paths = None if self.full_pass else sorted(self.pending)
            self.full_pass = False
            self.pending.clear()
            await self._pass(paths)

    async def _pass(self, paths: list[Path] | None) -> None:
        from agentls.lsp.services.work_done import RunProgress

        engine = await self.server.engine()
        search = await asyncio.to_thread(engine.agent.search_hub.get,
                                         self.server.new_workspace())
        progress = None
        if paths is None or len(paths) >= LARGE_PASS_FILES:
            progress = RunProgress(self.server, "AgentLS: indexing", self._cancel.set)
            await progress.start("reading files")
        loop = asyncio.get_running_loop()

        def report(phase: str, done: int, total: int) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress.report, f"{phase} {done}/{total}")

        self._cancel.clear()
        try:
            stats = await asyncio.to_thread(search.update, paths, progress=report,
                                            cancelled=self._cancel.is_set)
        finally:
            if progress is not None:
                progress.end("index updated")
        self.passes += 1
        log.info("search index updated: %d files read, %d removed, %d chunks embedded in "
                 "%.2f s", stats.files_changed, stats.files_removed, stats.vectors_added,
                 stats.seconds)
        for warning in stats.warnings:
            log.warning("search index: %s", warning)


def setup(server: ServerContext) -> None:
    keeper = IndexKeeper(server)
    server.settings_listeners.append(keeper.on_settings)
    # didSave / didChangeWatchedFiles are registered once, in documents.py, which fans out.
    server.file_listeners.append(keeper.changed)

    server.index_keeper = keeper  # type: ignore[attr-defined]

