"""The workspace as the server sees it: the folders the client opened (in its order), the
first of them (its ``.agentls/state.db`` holds the sessions), the negotiated position
encoding, and a run's fenced ``Workspace`` fed the editor's unsaved buffers.

One part of the ``ServerContext`` (lsp/services/server_context.py), implemented here so the
composition root
(lsp/server.py) only composes; features reach it as ``ls.roots``, ``ls.new_workspace()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

from agentls.lsp.services.server_context import ServerContext

if TYPE_CHECKING:
    from agentls.workspace.fence import Workspace


class WorkspaceRoots(ServerContext):
    @property
    def roots(self) -> list[Path]:
        """The workspace folders, in the client's order (the root URI when there are none)."""
        uris = [f.uri for f in self.workspace.folders.values()] or (
            [self.workspace.root_uri] if self.workspace.root_uri else [])
        paths = [to_fs_path(uri) for uri in uris if uri.startswith("file:")]
        return [Path(p) for p in paths if p]

    @property
    def root(self) -> Path | None:
        """The first workspace folder: its ``.agentls/state.db`` holds the sessions."""
        roots = self.roots
        return roots[0] if roots else None

    @property
    def root_uri(self) -> str | None:
        root = self.root
        return root.as_uri() if root is not None else None

    @property
    def position_encoding(self) -> str:
        """The negotiated encoding: "utf-16" (LSP's default) or "utf-8" when offered."""
        encoding = self.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or "utf-16").lower()

    def new_workspace(self) -> Workspace:
        """A run's fenced Workspace over every root, fed the editor's unsaved buffers."""
        from agentls.lsp.services import documents
        from agentls.workspace.fence import Workspace

        workspace = Workspace(self.roots)
        documents.feed(self, workspace)
        return workspace
