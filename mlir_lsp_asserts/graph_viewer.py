"""Google's Model Explorer on one dispatch graph: its real server as a child process on
127.0.0.1, loading the graph JSON through mlir-lsp's adapter extension
(`model_explorer_adapter`), and the URL that opens it (a node selected when asked).

    viewer = open_viewer(Path("g.json"), select_node="_initializer_1_dispatch_0")
    print(viewer.url)
    ...
    viewer.stop()          # the server and whatever it started: its whole process group

Model Explorer is an optional extra (`pip install 'mlir-lsp[graph]'`); without it, or when its
server does not answer in time, `open_viewer` raises `ViewerUnavailable` with what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from .model_explorer_adapter import ADAPTER_ID, INSTALL_HINT, MODULE
from .processes import temp_folder

HOST = "127.0.0.1"
START_TIMEOUT = 90.0


class ViewerUnavailable(Exception):
    """Model Explorer is not installed, or its server did not start (the message says which)."""


def available() -> bool:
    """Whether `model_explorer` can be imported (also False when it is blocked in sys.modules)."""
    if "model_explorer" in sys.modules:
        return sys.modules["model_explorer"] is not None
    import importlib.util

    try:
        return importlib.util.find_spec("model_explorer") is not None
    except (ImportError, ValueError):
        return False


def free_port() -> int:
    """A port no one listens on now (8080 avoided: Model Explorer hunts for another there)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port != 8080:
            return port


def viewer_url(port: int, graph_json: Path, select_node: str | None = None, graph_id: str | None = None,
               expand: list[str] | None = None) -> str:
    """The page that loads `graph_json` through our adapter, `select_node` selected (in the
    graph `graph_id`, else the first) and the layers `expand` (namespaces) open."""
    data: dict = {"models": [{"url": str(graph_json.resolve()), "adapterId": ADAPTER_ID}]}
    if select_node or expand:
        opened = [f"{ns}___group___" for ns in expand or []]  # Model Explorer's ids of layers
        data["uiState"] = {"paneStates": [{"deepestExpandedGroupNodeIds": opened, "selectedNodeId": select_node or "",
                                           "selectedGraphId": graph_id or "", "selectedCollectionLabel": "",
                                           "widthFraction": 1, "selected": True}]}
    return f"http://{HOST}:{port}/?data={quote(json.dumps(data, separators=(',', ':')))}"


@dataclass
class Viewer:
    url: str
    port: int
    process: subprocess.Popen
    log: Path  # the server's output (stdout and stderr)
    _folder: str

    def url_for(self, graph_json: Path, select_node: str | None = None, graph_id: str | None = None,
                expand: list[str] | None = None) -> str:
        """Another graph (or node) on the same server."""
        return viewer_url(self.port, graph_json, select_node, graph_id, expand)

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """End the server's process group (TERM, then KILL after 5 s) and remove its files."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        else:  # the leader is gone; what it started may not be
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _child_env() -> dict[str, str]:
    """The environment of the server: this package importable (also from a source checkout),
    output unbuffered (the log is read when it fails)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex((HOST, port)) == 0


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/check_health", timeout=2) as r:
            return r.read() == b"model_explorer_ok"
    except (OSError, urllib.error.URLError):
        return False


def _last_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def open_viewer(graph_json: Path, select_node: str | None = None, port: int | None = None,
                graph_id: str | None = None, timeout: float = START_TIMEOUT, expand: list[str] | None = None) -> Viewer:
    """Start Model Explorer's server on `graph_json` (a graph JSON, or an MLIR file our adapter
    counts) and wait until it answers; `select_node`, `graph_id`, `expand`: see `viewer_url`."""
    if not available():
        raise ViewerUnavailable(f"Model Explorer is not installed: {INSTALL_HINT}")
    graph_json = Path(graph_json)
    if not graph_json.is_file():
        raise ViewerUnavailable(f"{graph_json}: no such graph file")
    if port is not None and _in_use(port):
        raise ViewerUnavailable(f"port {port} of {HOST} is in use")
    port = port or free_port()
    folder = temp_folder("viewer")
    log = Path(folder) / "model-explorer.log"
    argv = [sys.executable, "-m", __name__, str(os.getpid()), "--host", HOST, "--port", str(port),
            "--no_open_in_browser", f"--extensions={MODULE}"]  # Model Explorer's command line, see _serve
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=_child_env(), cwd=folder, start_new_session=True)
    viewer = Viewer(viewer_url(port, graph_json, select_node, graph_id, expand), port, proc, log, folder)
    deadline = time.monotonic() + timeout
    try:
        while not _answers(port):
            if proc.poll() is not None:
                said = _last_line(log)
                raise ViewerUnavailable(f"Model Explorer exited (code {proc.returncode}) before it answered"
                                        + (f": {said}" if said else ""))
            if time.monotonic() > deadline:
                raise ViewerUnavailable(f"Model Explorer did not answer on {HOST}:{port} within {timeout:.0f} s")
            time.sleep(0.2)
    except BaseException:
        viewer.stop()
        raise
    return viewer


def _serve(argv: list[str]) -> None:
    """Child mode (`python -m mlir_lsp_asserts.graph_viewer PARENT_PID ARGS...`): Model Explorer's
    own command line with ARGS, ended with its whole process group when the process that started
    it is gone, even when that one was killed with SIGKILL (no handler of its own runs then): the
    viewer runs in a session of its own, so nothing else would stop it."""
    import runpy
    import threading

    parent = int(argv[0])

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.killpg(os.getpgrp(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()
    sys.argv = ["model-explorer", *argv[1:]]
    runpy.run_module("model_explorer", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
