"""What the server's features read and ask of the server object: its state and the few pygls
calls they make. `app.MlirLspServer` is the one server; the features name this narrow view, never
`app.py` (which imports every feature), so the server's modules import one way.

Only state modules that stand below the features are named here (options, documents, the dispatch
state, the graph viewer); a feature's own state (the parser's diagnostics, the workspace watch)
is reached through its feature module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from lsprotocol import types

from ..config import Settings
from .disk_files_state import DiskFiles
from .dispatch_graph_state import GraphViewerState
from .dispatch_state import DispatchState
from .open_documents import OpenDocument, Snapshot, Stamp
from .options import ServerOptions


class Server(Protocol):
    options: ServerOptions
    dispatch: DispatchState
    dispatch_graph: GraphViewerState
    disk_files: DiskFiles

    @property
    def settings(self) -> Settings: ...

    # pygls's own
    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def workspace(self) -> Any: ...

    @property
    def work_done_progress(self) -> Any: ...

    @property
    def protocol(self) -> Any: ...  # `protocol.notify(method, params)`: a notification of our own

    def feature(self, *args: Any, **kwargs: Any) -> Callable[..., Any]: ...

    def command(self, *args: Any, **kwargs: Any) -> Callable[..., Any]: ...

    def thread(self) -> Callable[..., Any]: ...

    def window_show_message(self, params: types.ShowMessageParams) -> None: ...

    def window_show_document(self, params: types.ShowDocumentParams) -> Any: ...

    def workspace_code_lens_refresh(self, params: None) -> Any: ...

    # the server's own (app.py)
    def in_loop(self, fn: Callable[..., Any], *args: Any) -> None: ...

    def document(self, uri: str) -> OpenDocument | None: ...

    def snapshot(self, uri: str) -> Snapshot | None: ...

    def snapshot_parts(self, uri: str) -> tuple[Stamp, list[tuple[str, int, int]]] | None: ...

    def publish(self, uri: str, refresh_pull: bool = False) -> None: ...
