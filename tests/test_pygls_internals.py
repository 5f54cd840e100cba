"""Issue 29, defect 10: the server leans on pygls internals (server/transport.py, app.py), so
pyproject pins the minor release they were read from (`pygls>=2.1,<2.2`). This test reads each
name we use, with the shape we use it in: a pygls that moves one fails here, not in an editor."""

from __future__ import annotations

import inspect
import threading
from importlib.metadata import version

from pygls import io_
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.server import JsonRPCServer

from mlir_lsp_asserts.server.transport import MlirLspProtocol


def test_pygls_is_the_minor_release_the_server_was_written_for():
    assert version("pygls").startswith("2.1."), version("pygls")


def test_the_stdio_loop_and_its_reader_and_writer():
    assert {"stop_event", "reader", "protocol", "logger", "error_handler"} <= set(
        inspect.signature(io_.run_async).parameters)
    assert list(inspect.signature(io_.StdinAsyncReader.__init__).parameters)[1:3] == ["stdin", "executor"]
    reader = io_.StdinAsyncReader(None, None)  # type: ignore[arg-type]
    assert hasattr(reader, "stdin") and hasattr(reader, "executor") and isinstance(
        inspect.getattr_static(io_.StdinAsyncReader, "loop"), property)
    assert callable(io_.StdinAsyncReader.readexactly)
    assert list(inspect.signature(io_.StdoutWriter.__init__).parameters)[1:] == ["stdout"]
    assert callable(io_.StdoutWriter.write)


def test_the_protocol_fields_our_shutdown_and_writer_use():
    server = LanguageServer("probe", "0")
    protocol = server.protocol
    assert isinstance(protocol._request_futures, dict)
    assert isinstance(protocol._shutdown, bool)
    assert hasattr(protocol, "msg_id") and hasattr(protocol, "writer") and callable(protocol.set_writer)
    assert isinstance(protocol.CONTENT_TYPE, str) and isinstance(protocol.CHARSET, str)
    assert isinstance(protocol.fm.features, dict)
    assert isinstance(server.work_done_progress.tokens, dict)  # server/progress.py forgets its tokens there


def test_each_method_we_override_is_pyglss_handler_of_the_same_lsp_method():
    ours = {name: getattr(fn, "method_name", None) for name, fn in vars(MlirLspProtocol).items()
            if getattr(fn, "method_name", None)}
    assert "lsp_shutdown" in ours
    for name, method in ours.items():
        assert getattr(getattr(LanguageServerProtocol, name, None), "method_name", None) == method, name


def test_the_server_stop_event_pyglss_shutdown_sets():
    server = LanguageServer("probe", "0")
    assert "_stop_event" in vars(server)  # app.MlirLspServer.start_io sets it
    server._stop_event = threading.Event()
    server.shutdown()
    assert server._stop_event.is_set()
    assert callable(server.report_server_error) and hasattr(JsonRPCServer, "thread_pool")



def test_every_response_goes_through_send_response():
    """transport.MlirLspProtocol._send_response drops pygls's answer to a request the early start
    answered: pygls must build each response, result or error, in that one method."""
    from pygls.protocol import json_rpc, language_server

    assert list(inspect.signature(json_rpc.JsonRPCProtocol._send_response).parameters) == [
        "self", "msg_id", "result", "error"]
    own = inspect.getsource(json_rpc.JsonRPCProtocol._send_response)
    everywhere = inspect.getsource(json_rpc) + inspect.getsource(language_server)
    for made in ("ResponseErrorMessage(id=", "response_type(\n"):
        assert everywhere.count(made) == own.count(made) == 1, made
