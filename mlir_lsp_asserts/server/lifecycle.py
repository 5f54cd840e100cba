"""The server's life: initialize (settings from initializationOptions, a watch on the client's
process), initialized (settings pulled with workspace/configuration, the warm-up, the workspace
scan), configuration changes, shutdown; and stopping every child process whichever way the
server ends."""

from __future__ import annotations

import asyncio
import logging
import os
import threading

from lsprotocol import types

from ..processes import remove_dead_temp_folders
from . import file_settings, guards, workspace_feature
from .options import SECTION, read_options

log = logging.getLogger(__name__)
# What a signal leaves the server to stop its children before it exits (an editor waits ~5 s).
STOP_SECONDS = 3.0


def apply_options(ls, options) -> bool:
    """Apply the `mlirLsp` settings (from initializationOptions or workspace/configuration).
    A bad value gets a message and keeps what it was; returns whether anything was applied."""
    new = read_options(options, ls.options, ls.warn, lambda v: guards.compiler_path_problem(ls, v))
    if new is None:
        return False
    old, ls.options = ls.options, new
    if new.dispatch.compiler_path != old.dispatch.compiler_path:
        ls.dispatch.counter = None
    if not new.workspace.watch:
        workspace_feature.stop(ls)
    elif not old.workspace.watch:  # turned back on
        workspace_feature.start(ls)
    ls.parser_diagnostics.enabled = new.parser_diagnostics
    if new.rules != old.rules:
        with ls.lock:
            for uri, doc in ls.documents.items():
                ls.documents[uri] = doc.with_settings(file_settings.for_uri(ls, uri))
    return True


async def pull_configuration(ls) -> None:
    """Ask the client for the `mlirLsp` section (workspace/configuration), when it can answer.
    Settings the client pushes (didChangeConfiguration) while the answer is on its way are kept
    over the answer: the early start (early_start.py) publishes before this request is sent, so a
    client that reacts to its first diagnostics with a push may push before it sees the request."""
    caps = ls.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return
    pushed = ls.settings_pushed
    try:
        got = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
    except Exception as e:  # noqa: BLE001 - a client that cannot answer keeps what we have
        log.info("workspace/configuration failed: %s", e)
        return
    if ls.settings_pushed != pushed:
        log.info("workspace/configuration: kept the settings pushed while the answer was on its way")
        return
    if got and isinstance(got[0], dict) and got[0]:
        apply_options(ls, got[0])
        republish(ls)


def initialize(ls, params: types.InitializeParams):
    ls.event_loop = asyncio.get_event_loop()  # background threads publish through it
    threading.Thread(target=_remove_dead_folders, name="mlir-lsp-tmp-cleanup", daemon=True).start()
    apply_options(ls, params.initialization_options)
    if params.process_id:
        _exit_with_client(ls, params.process_id)


def _remove_dead_folders() -> None:
    """The temporary folders a killed server (or CLI) left, a copy of a document in each."""
    if removed := remove_dead_temp_folders():
        log.info("removed %d temporary folders of processes that are gone: %s", len(removed), ", ".join(removed))


async def initialized(ls, params: types.InitializedParams):
    threading.Thread(target=_warm_up, args=(ls,), name="mlir-lsp-warm-up", daemon=True).start()
    await pull_configuration(ls)
    workspace_feature.start(ls)
    await workspace_feature.watch_config_files(ls)


WARM_UP_TEXT = """func.func @f(%t: tensor<4xi64>, %w: tensor<77xf16>) -> tensor<4xf16> {
  %c77 = arith.constant 77 : index
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e : tensor<4xf16>) {
  ^bb0(%in: i64, %out: f16):
    %i = arith.index_cast %in : i64 to index
    %lt = arith.cmpi slt, %i, %c77 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %in, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %x = tensor.extract %w[%i] : tensor<77xf16>
    linalg.yield %x : f16
  } -> tensor<4xf16>
  return %r : tensor<4xf16>
}
"""


# The client is quiet this long (no message read or being read) before the warm-up starts.
WARM_UP_AFTER_QUIET_SECONDS = 0.5


def _warm_up(ls) -> None:
    """Check and fix a small gather once, in the background, so that the first real code action
    does not pay for building the op grammar's parser and compiling the fixes' patterns. It waits
    for the client to be quiet: editors send their first didOpen right after `initialized`, and
    a warm-up holding the interpreter slows the reading of a large one (each read of the pipe
    waits for the interpreter)."""
    quiet = getattr(ls.protocol, "quiet", None)
    stop = getattr(ls, "_stop_event", None) or threading.Event()  # pygls's; set by start_io (stdio)
    if quiet is not None and not quiet.wait(WARM_UP_AFTER_QUIET_SECONDS, stop):
        return
    try:
        from ..checker import check_text

        check_text(WARM_UP_TEXT)
    except Exception:  # noqa: BLE001 - a warm-up that fails only leaves the first request slower
        log.debug("warm-up failed", exc_info=True)


async def did_change_configuration(ls, params: types.DidChangeConfigurationParams):
    # Push-style clients send the settings; pull-style ones (VS Code) send null: ask them.
    if apply_options(ls, params.settings):
        ls.settings_pushed += 1
    else:
        await pull_configuration(ls)
    republish(ls)


def republish(ls) -> None:
    """New settings: every open document's diagnostics again (`file_settings.republish`)."""
    file_settings.republish(ls, list(ls.documents))


def _exit_with_client(ls, pid: int) -> None:
    """Exit when the editor's process is gone (it may die without closing our stdin)."""
    def watch():
        import time

        while True:
            time.sleep(3)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.warning("client process %d is gone; exiting", pid)
                stop_and_exit(ls, 0)
            except PermissionError:
                pass
    threading.Thread(target=watch, name="client-watch", daemon=True).start()


def stop_background(ls) -> None:
    """Kill every child we started (compiles, real-parser runs, the Model Explorer viewer) and
    stop the watcher: no process outlives the server, whichever way it ends. The kills come
    first and take no lock (a signal handler runs this on the thread that may hold one)."""
    ls.parser_diagnostics.stop()
    ls.dispatch.stop()
    ls.dispatch_graph.stop()
    workspace_feature.stop(ls)


def stop_and_exit(ls, code: int) -> None:
    """`stop_background`, given STOP_SECONDS on a thread of its own, then the process ends. A
    signal handler runs on the main thread between two bytecodes of whatever it was doing, maybe
    holding a lock the stopping needs: waiting on it there would never end."""
    stopper = threading.Thread(target=stop_background, args=(ls,), name="mlir-lsp-stop", daemon=True)
    stopper.start()
    stopper.join(STOP_SECONDS)
    os._exit(code)


def stop_on_signals(ls) -> None:
    """SIGTERM or SIGHUP (an editor that ends its process group, a closed terminal): stop every
    child first (the Model Explorer viewer runs in a session of its own, so the signal does not
    reach it), then exit."""
    import signal

    def stop(signum, _frame):
        log.warning("%s: stopping", signal.Signals(signum).name)
        stop_and_exit(ls, 128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def shutdown(ls, params):
    stop_background(ls)



def setup(server) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.SHUTDOWN)(shutdown)
