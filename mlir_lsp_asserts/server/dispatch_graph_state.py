"""What the server keeps for `mlirLsp.showDispatchGraph` (`ls.dispatch_graph`): its one Model
Explorer viewer, the folder of the graph files, and the graph compiles running."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..processes import temp_folder

if TYPE_CHECKING:  # imported by the first graph asked for, not when the server starts (issue 37)
    from ..dispatch.count import DispatchCounter
    from ..graph_viewer import Viewer


class GraphViewerState:
    """The server's one Model Explorer (`ls.dispatch_graph`) and the graph builds running."""

    def __init__(self):
        self.lock = threading.Lock()  # the fields below; held for no longer than reading them
        self.starting = threading.Lock()  # one Model Explorer start at a time (up to 90 s)
        self.viewer: Viewer | None = None
        self.folder: Path | None = None
        self.building: dict[str, DispatchCounter] = {}  # uri -> the counter compiling its graph
        self.stopped = False

    def graph_file(self, uri: str) -> Path:
        """The graph JSON of one document, in the server's temporary folder."""
        from ..graph_viewer import ViewerUnavailable

        with self.lock:
            if self.stopped:
                raise ViewerUnavailable("the server is shutting down")
            if self.folder is None:
                self.folder = Path(temp_folder("graphs"))
            folder = self.folder
        stem = Path(uri.rsplit("/", 1)[-1]).stem or "document"
        return folder / f"{stem}-{hashlib.sha1(uri.encode()).hexdigest()[:10]}.json"

    def show(self, graph: Path, select: str | None, graph_id: str | None, expand: list[str] | None = None) -> str:
        """The URL of `graph` (`select` selected in the graph `graph_id`, the layers `expand`
        open) on the server's viewer, started on the first call (and again if it died): one
        Model Explorer serves every graph file, read on each page load."""
        from ..graph_viewer import ViewerUnavailable, open_viewer

        with self.starting:
            with self.lock:
                if self.stopped:
                    raise ViewerUnavailable("the server is shutting down")
                dead, self.viewer = self.viewer, None
                if dead is not None and dead.running():
                    self.viewer = dead
                    return dead.url_for(graph, select, graph_id, expand)
            if dead is not None:
                dead.stop()  # died: what it started goes too
            # Started without `self.lock`: a stop meanwhile does not wait for it (the viewer
            # ends itself with its parent, see graph_viewer._serve) and is seen below.
            viewer = open_viewer(graph, select_node=select, graph_id=graph_id, expand=expand)
            with self.lock:
                if not self.stopped:
                    self.viewer = viewer
                    return viewer.url
            viewer.stop()
            raise ViewerUnavailable("the server is shutting down")

    def stop(self) -> None:
        """Stop the viewer and the graph compiles, remove the graph files (shutdown, exit)."""
        with self.lock:
            self.stopped = True
            viewer, self.viewer = self.viewer, None
            building, self.building = list(self.building.values()), {}
            folder, self.folder = self.folder, None
        for counter in building:
            counter.cancel_all()
        if viewer is not None:
            viewer.stop()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
