"""The running language servers of one engine (``servers.LangServers`` makes this on the
first question): one per server and workspace, started on first use, stopped when idle and
at exit; what the tools and the check ask, in plain data.

Before each question the server is told the pending text of the files it serves that the
run changed (and of the files it has open), read through the workspace as the agent reads
them, so every answer is about the workspace with the agent's edits. Servers answer in
parallel; one that fails is named in ``Answer.failures`` and never stops the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from agentls.base.text_positions import code_points, units_of
from agentls.langservers.client import ServerClient
from agentls.langservers.results import (
    SEVERITY,
    Answer,
    FileProblems,
    Place,
    Problem,
    mark_new,
    with_new,
)
from agentls.langservers.running_server import LangServer, ServerFailed
from agentls.langservers.server_launch import server_launch
from agentls.langservers.specs import FleetOwner, ServerSpec
from agentls.workspace.fence import FenceError, Workspace

log = logging.getLogger(__name__)

IDLE_CHECK_S = 30.0
BASELINES_KEPT = 256
SYMBOL_KINDS = {k.value: k.name.lower() for k in lsp.SymbolKind}


class Fleet:
    """The servers started for ``owner`` (its settings and its choice of servers), keyed by
    server name and workspace roots."""

    def __init__(self, owner: FleetOwner) -> None:
        self.owner = owner
        self._servers: dict[tuple[str, tuple[Path, ...]], LangServer] = {}
        self._baselines: dict[tuple[str, str, str], list[Problem]] = {}
        self._reaper: asyncio.Task[None] | None = None

    def server(self, spec: ServerSpec, ws: Workspace) -> LangServer:
        key = (spec.name, tuple(ws.roots))
        current = self._servers.get(key)
        if current is not None and current.spec != spec:  # its settings changed
            self._servers.pop(key)
            self._spawn(current.stop())
            current = None
        if current is None:
            roots = tuple(ws.roots)
            deny = ws.deny
            owner = self.owner

            def launcher() -> Any:
                return server_launch(spec, owner.sandbox, Workspace(roots, deny=deny),
                                     secret_env=owner.secret_env, environ=owner.environ)

            current = self._servers[key] = LangServer(spec, roots, launcher)
            self._start_reaper()
        return current

    def servers(self) -> list[LangServer]:
        return list(self._servers.values())

    # -- the questions ---------------------------------------------------------------------

    async def diagnostics(self, ws: Workspace, paths: Sequence[Path], *, compare: bool = True,
                          timeout: float | None = None) -> Answer:
        """Each file's problems from every server that serves it; with ``compare``, those
        not there in the file's text before the run changed it are marked new."""
        answer = Answer(files=[FileProblems(ws.display_path(p)) for p in paths])
        by_path = {p: f for p, f in zip(paths, answer.files, strict=True)}

        async def one(spec: ServerSpec) -> None:
            mine = [p for p in paths if spec.serves(p)]
            if not mine:
                return
            server = self.server(spec, ws)
            texts = await self._texts(ws, server, mine)
            bases = await asyncio.to_thread(self._bases, ws, mine) if compare else {}

            async def ask(client: ServerClient) -> dict[Path, list[Problem]]:
                found: dict[Path, list[Problem]] = {}
                for path in mine:
                    if texts.get(path) is None:
                        continue
                    raw = await server.document_diagnostics(client, path)
                    found[path] = self._problems(ws, path, raw, texts[path] or "", spec.name)
                return found

            found = await server.exchange(texts, ask, "diagnostics", timeout)
            for path, problems in found.items():
                base = bases.get(path)
                if compare and base is not None:
                    before = await self._baseline(ws, server, path, base, texts, timeout)
                    problems = mark_new(problems, before)
                elif compare:  # a new file: everything in it is new
                    problems = [with_new(p) for p in problems]
                by_path[path].problems += problems
                by_path[path].servers.append(spec.name)

        await self._each(ws, one, answer)
        for item in answer.files:
            item.problems.sort(key=lambda p: (p.line, p.column))
        return answer

    async def definition(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        return await self._locations(ws, path, line, column, "definition",
                                     lambda c, p: c.text_document_definition_async(
                                         lsp.DefinitionParams(text_document=p[0],
                                                              position=p[1])))

    async def references(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        return await self._locations(ws, path, line, column, "references",
                                     lambda c, p: c.text_document_references_async(
                                         lsp.ReferenceParams(
                                             text_document=p[0], position=p[1],
                                             context=lsp.ReferenceContext(
                                                 include_declaration=True))))

    async def hover(self, ws: Workspace, path: Path, line: int, column: int) -> Answer:
        answer = Answer()

        async def one(spec: ServerSpec) -> None:
            if not spec.serves(path) or answer.text:
                return
            found = await self._ask_at(
                spec, ws, path, line, column, "hover_provider", "hover",
                lambda c, p: c.text_document_hover_async(
                    lsp.HoverParams(text_document=p[0], position=p[1])))
            answer.servers.append(spec.name)
            if found is not None and not answer.text:
                answer.text = hover_text(found.contents)

        await self._each(ws, one, answer, sequential=True)
        return answer

    async def workspace_symbols(self, ws: Workspace, query: str) -> Answer:
        answer = Answer()

        async def one(spec: ServerSpec) -> None:
            server = self.server(spec, ws)
            texts = await self._texts(ws, server, [])

            async def ask(client: ServerClient) -> Any:
                if not _offers(server, "workspace_symbol_provider"):
                    return None
                return await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=query))

            found = await server.exchange(texts, ask, "workspace/symbol")
            if found is None:
                return
            answer.servers.append(spec.name)
            for symbol in found:
                location = symbol.location
                if not isinstance(location, lsp.Location):
                    continue
                place = await asyncio.to_thread(self._place, ws, location)
                if place is not None:
                    answer.places.append(Place(
                        place.path, place.line, place.column, place.line_text, symbol.name,
                        SYMBOL_KINDS.get(symbol.kind, ""), symbol.container_name or ""))

        await self._each(ws, one, answer)
        return answer

    async def _locations(self, ws: Workspace, path: Path, line: int, column: int, what: str,
                         request: Callable[[ServerClient, tuple[Any, Any]], Awaitable[Any]]
                         ) -> Answer:
        answer = Answer()
        capability = {"definition": "definition_provider",
                      "references": "references_provider"}[what]

        async def one(spec: ServerSpec) -> None:
            if not spec.serves(path) or answer.places:
                return
            found = await self._ask_at(spec, ws, path, line, column, capability,
                                       f"textDocument/{what}", request)
            if found is None:
                return
            answer.servers.append(spec.name)
            items = list(found) if isinstance(found, list | tuple) else [found]
            for item in items:
                location = (lsp.Location(uri=item.target_uri, range=item.target_selection_range)
                            if isinstance(item, lsp.LocationLink) else item)
                place = await asyncio.to_thread(self._place, ws, location)
                if place is not None and place not in answer.places:
                    answer.places.append(place)

        await self._each(ws, one, answer, sequential=True)
        return answer

    async def _ask_at(self, spec: ServerSpec, ws: Workspace, path: Path, line: int,
                      column: int, capability: str, what: str,
                      request: Callable[[ServerClient, tuple[Any, Any]], Awaitable[Any]]
                      ) -> Any:
        """One server's answer about a place in ``path`` (the model's 1-based line and
        column), over the pending text; None when it does not offer ``capability``."""
        server = self.server(spec, ws)
        texts = await self._texts(ws, server, [path])
        position = position_at(texts.get(path) or "", line, column)

        async def ask(client: ServerClient) -> Any:
            if not _offers(server, capability):
                return None
            return await request(client, (lsp.TextDocumentIdentifier(uri=path.as_uri()),
                                          position))

        return await server.exchange(texts, ask, what)

    async def _each(self, ws: Workspace, one: Callable[[ServerSpec], Awaitable[None]],
                    answer: Answer, *, sequential: bool = False) -> None:
        """Ask every server (in order when the first answer is enough); a failure is noted."""
        async def guarded(spec: ServerSpec) -> None:
            try:
                await one(spec)
            except ServerFailed as exc:
                answer.failures[spec.name] = str(exc)
            except FenceError as exc:
                answer.failures[spec.name] = exc.message

        specs = self.owner.specs(ws)
        if sequential:
            for spec in specs:
                await guarded(spec)
        else:
            await asyncio.gather(*(guarded(s) for s in specs))

    # -- texts, baselines, places ----------------------------------------------------------

    async def _texts(self, ws: Workspace, server: LangServer, paths: Sequence[Path]
                     ) -> dict[Path, str | None]:
        """The text each file has for the agent now (None: deleted or hidden): the given
        files, the files this server serves that the run changed, and those it has open."""
        changed = [c.path for c in ws.changeset.changes() if server.spec.serves(c.path)]
        changed += [c.old_path for c in ws.changeset.changes()
                    if c.old_path is not None and server.spec.serves(c.old_path)]
        wanted = list(dict.fromkeys([*paths, *changed, *server.open_paths()]))
        return await asyncio.to_thread(_read_all, ws, wanted)

    @staticmethod
    def _bases(ws: Workspace, paths: Sequence[Path]) -> dict[Path, str]:
        """The text each changed file had before the run (absent: new, or not changed: then
        its own text is the baseline, so nothing in it is new)."""
        out: dict[Path, str] = {}
        for path in paths:
            base = ws.changeset.base(path)
            if base is None:
                with contextlib.suppress(FenceError, OSError):
                    out[path] = ws.read_text(ws.resolve(str(path)))
            elif base.text is not None:
                out[path] = base.text
        return out

    async def _baseline(self, ws: Workspace, server: LangServer, path: Path, base: str,
                        texts: Mapping[Path, str | None], timeout: float | None
                        ) -> list[Problem]:
        """The problems of ``path`` with its text from before the run (kept per text)."""
        now = texts.get(path)
        key = (server.spec.name, str(path), hashlib.sha256(base.encode()).hexdigest())
        if key in self._baselines:
            return self._baselines[key]
        if now == base:
            return []  # the same text: the caller's problems are the baseline, none new

        async def ask(client: ServerClient) -> list[Problem]:
            raw = await server.document_diagnostics(client, path)
            return self._problems(ws, path, raw, base, server.spec.name)

        before = await server.exchange({**texts, path: base}, ask, "diagnostics", timeout)
        # Put the pending text back, so the next question needs no change.
        await server.exchange(dict(texts), _no_question, "didChange", timeout)
        self._baselines[key] = before
        while len(self._baselines) > BASELINES_KEPT:
            self._baselines.pop(next(iter(self._baselines)))
        return before

    @staticmethod
    def _problems(ws: Workspace, path: Path, raw: Sequence[lsp.Diagnostic], text: str,
                  source: str) -> list[Problem]:
        lines = text.splitlines()
        display = ws.display_path(path)
        out = []
        for d in raw:
            row = d.range.start.line
            line_text = lines[row] if row < len(lines) else ""
            out.append(Problem(
                display, row + 1, column_of(line_text, d.range.start.character) + 1,
                SEVERITY.get(int(d.severity or 1), "error"), d.message.strip(),
                d.source or source, "" if d.code is None else str(d.code), line_text))
        return out

    @staticmethod
    def _place(ws: Workspace, location: lsp.Location) -> Place | None:
        path = Path(location.uri.removeprefix("file://"))
        row = location.range.start.line
        if not ws.is_visible(path):
            return Place(f"{path} (outside the workspace)", row + 1,
                         location.range.start.character + 1)
        try:
            text = ws.read_text(ws.resolve(str(path)))
        except (FenceError, OSError):
            return None
        lines = text.splitlines()
        line_text = lines[row] if row < len(lines) else ""
        return Place(ws.display_path(path), row + 1,
                     column_of(line_text, location.range.start.character) + 1, line_text)

    # -- life --------------------------------------------------------------------------

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(
                self._reap(), name="agentls-langservers-idle")

    async def _reap(self) -> None:
        while self._servers:
            await asyncio.sleep(min(IDLE_CHECK_S, self.owner.config.idle_stop_s))
            await self.stop_idle()

    async def stop_idle(self) -> None:
        now = time.monotonic()
        for server in list(self._servers.values()):
            if server.running and not server.lock.locked() and \
                    now - server.last_used >= self.owner.config.idle_stop_s:
                log.info("language server %s idle for %.0f s: stopped", server.spec.name,
                         now - server.last_used)
                await server.stop()

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        task.add_done_callback(_log_failure)

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        await asyncio.gather(*(s.stop() for s in self._servers.values()),
                             return_exceptions=True)
        self._servers.clear()


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("stopping a language server failed: %s", task.exception())


async def _no_question(client: ServerClient) -> None:
    return None


def _read_all(ws: Workspace, paths: Sequence[Path]) -> dict[Path, str | None]:
    out: dict[Path, str | None] = {}
    for path in paths:
        if ws.changeset.is_deleted(path) and ws.changeset.current_text(path) is None:
            out[path] = None
            continue
        try:
            out[path] = ws.read_text(ws.resolve(str(path)))
        except (FenceError, OSError):
            out[path] = None
    return out


def _offers(server: LangServer, capability: str) -> bool:
    caps = server.capabilities
    return caps is not None and getattr(caps, capability, None) not in (None, False)


def position_at(text: str, line: int, column: int) -> lsp.Position:
    """1-based line and character column -> LSP's 0-based line and UTF-16 character."""
    lines = text.splitlines()
    row = max(line - 1, 0)
    line_text = lines[row] if row < len(lines) else ""
    return lsp.Position(line=row, character=units_of(line_text[:max(column - 1, 0)], "utf-16"))


def column_of(line_text: str, utf16: int) -> int:
    """LSP's UTF-16 character -> the 0-based index of the character in the line."""
    return code_points(line_text, utf16, "utf-16")


def hover_text(contents: Any) -> str:
    if isinstance(contents, lsp.MarkupContent):
        return contents.value
    if isinstance(contents, str):
        return contents
    if isinstance(contents, lsp.MarkedStringWithLanguage):
        return contents.value
    if isinstance(contents, list):
        return "\n".join(hover_text(c) for c in contents)
    return ""
