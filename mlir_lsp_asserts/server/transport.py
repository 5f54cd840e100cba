"""pygls's transport, adapted: the protocol (open documents are ours, shutdown cancels queued
requests safely, notifications whose params are already JSON), stdout written one message at a
time, stdin bodies read as text with a document's resource section lifted out first."""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading

from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .held_resources import lift

log = logging.getLogger(__name__)


class MlirLspProtocol(LanguageServerProtocol):
    """pygls's protocol, but open documents are ours: its workspace keeps no copy of them."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls's, cancelling the requests still running over a copy of their table: a
        cancelled request's callback removes it from the table (and a finishing thread may
        too), which made pygls's own loop fail the shutdown ("dictionary changed size during
        iteration") when requests were queued behind a compile."""
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    def send_notification_json(self, method: str, params_json: str) -> None:
        """Send a notification whose params are already JSON text (see `MlirLspServer.publish`)."""
        if self.writer is None:
            return
        body = f'{{"jsonrpc": "2.0", "method": "{method}", "params": {params_json}}}'
        data = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n{body}"
        res = self.writer.write(data.encode(self.CHARSET))
        if inspect.isawaitable(res):
            asyncio.ensure_future(res)


class LockedStdoutWriter(StdoutWriter):
    """pygls's stdout writer, one message at a time: answers of threaded requests are written
    from their worker threads, and two large ones written at once interleaved on the pipe (the
    client read "Invalid control character" 128 KB into a message)."""

    def __init__(self, stdout):
        super().__init__(stdout)
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            super().write(data)


class TextStdinReader(StdinAsyncReader):
    """Gives pygls each message body as text, decoded in the reading thread with the bytes let go
    at once: `json.loads` of bytes decodes to a temporary string of its own, so a 50 MB didOpen
    would otherwise be held three times (bytes, that string, the parsed text) at its peak. A
    document's resource section is lifted out of the body first (`held_resources.lift`)."""

    def readexactly(self, n: int):
        def read() -> str:
            body = lift(self.stdin.read(n))
            try:
                return body.decode("utf-8")  # the fast path; surrogatepass only where needed
            except UnicodeDecodeError:
                return body.decode("utf-8", "surrogatepass")
        return self.loop.run_in_executor(self.executor, read)


def run_stdio(server, stop_event: threading.Event, stdin=None, stdout=None) -> None:
    """pygls's stdio loop, with message bodies read as text (`TextStdinReader`)."""
    server.protocol.set_writer(LockedStdoutWriter(stdout or sys.stdout.buffer))
    reader = TextStdinReader(stdin or sys.stdin.buffer, server.thread_pool)
    try:
        asyncio.run(run_async(stop_event=stop_event, reader=reader, protocol=server.protocol,
                              logger=log, error_handler=server.report_server_error))
    except BrokenPipeError:
        log.error("the client's connection is gone; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
