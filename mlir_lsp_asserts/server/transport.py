"""pygls's transport, adapted: the protocol (open documents are ours, shutdown cancels queued
requests safely, notifications whose params are already JSON), stdout written one message at a
time, stdin bodies read as text with a document's resource section lifted out first.

No frame ends the server (`MlirLspProtocol.receive`): a body that is not UTF-8 is read with
replacement characters (a document whose text had such bytes says so: one MLS001 at the first);
one that is not JSON, not an object or not a message is logged and skipped, and a request among
them with a readable id gets a JSON-RPC error, as does a request after `shutdown` (-32600). The
frames themselves are read by `framing.FrameReader`.

On stdio the server starts after `early_start.py` has answered the first messages: it reads the
frames that phase kept, then the stream (`run_stdio`'s `handoff`), sends no second answer to a
request answered there, and no second copy of a publish sent there (`MlirLspProtocol.take_over`).
An `initialize` answered there whose params lsprotocol refuses deeper down than that phase looks
is read without the parts that do not read (`readable_part`): the client was told it is
initialized."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcMethodNotFound
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .diagnostics_json import notification_frame, params_prefix
from .framing import PIPE_BYTES as PIPE_BYTES
from .framing import FrameReader, widen_pipe, write_all
from .held_resources import lift

log = logging.getLogger(__name__)


class Quiet:
    """When the client last sent a message, and whether one is being read now: work of the server's
    own that can wait (the warm-up) waits until the client has been quiet a while, so that it does
    not take the interpreter from the reading of an editor's first, possibly 490 MB, didOpen."""

    def __init__(self):
        self.since = time.monotonic()
        self.reading = False

    def heard(self) -> None:
        self.reading, self.since = False, time.monotonic()

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        """Wait until no message is being read and none came for `seconds`; False if `stop` came."""
        while not stop.is_set():
            left = self.since + seconds - time.monotonic()
            if not self.reading and left <= 0:
                return True
            stop.wait(0.05 if self.reading else left)
        return False


class Frames(Protocol):
    """Where bodies come from: a `FrameReader`, or the early start's frames then the stream."""

    on_length: Callable[[], None]

    def frame(self) -> bytes | bytearray | None: ...


class Handoff(Protocol):
    """What the early start (`early_start.Handoff`) hands the server: its frames (those it kept,
    then the stream), the ids of the requests it answered, the publishes it sent (uri -> params)."""

    frames: Frames
    answered: set
    published: dict[str, str]


class Body(NamedTuple):
    """A message body as text; `bad` is (offset, value) of its first byte that is not UTF-8."""

    text: str
    bad: tuple[int, int] | None = None


# At most this many parts of a message are dropped to make it read (`readable_part`).
MAX_DROPPED_PARTS = 32


def readable_part(converter, data: dict, kind: type):
    """(`data` structured as `kind`, the parts dropped to make it read: "what @ $.params.x.y"),
    each part that cattrs names as not reading removed (its field; its list whole; for a required
    field missing, the object holding it), or None when `data` does not read after that. `data`
    is not changed."""
    import copy

    from cattrs import transform_error
    from cattrs.errors import ClassValidationError

    data = copy.deepcopy(data)
    dropped: list[str] = []
    for _ in range(MAX_DROPPED_PARTS):
        try:
            return converter.structure(data, kind), dropped
        except ClassValidationError as e:
            errors = transform_error(e, path="$")
        except Exception:  # noqa: BLE001 - not a field's type: nothing to drop
            return None
        if not any(_drop(data, error) for error in errors):
            return None
        dropped += [e for e in errors if e not in dropped]
    return None


def _drop(data: dict, error: str) -> bool:
    """Remove from `data` the part `error` (cattrs: "what @ $.params.text_document.hover") names;
    False when there is none to remove (the part is the message's own or its params)."""
    what, _, path = error.rpartition(" @ ")
    keys = [k.split("[", 1)[0] for k in path.split(".")[1:]]
    cut = next((i for i, k in enumerate(path.split(".")[1:]) if "[" in k), None)
    if cut is not None:
        keys = keys[:cut + 1]  # a list with an item that does not read: the list
    elif what.startswith("required field missing"):
        keys = keys[:-1]  # the object without it
    keys = [re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k) for k in keys]
    if len(keys) < 2:
        return False
    parent: Any = data
    for k in keys[:-1]:
        parent = parent.get(k) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or keys[-1] not in parent:
        return False
    if keys == ["params", "capabilities"]:
        parent["capabilities"] = {}  # required: the client says it supports nothing
    elif keys == ["params", "processId"]:
        parent["processId"] = None  # required, and may be null
    else:
        del parent[keys[-1]]
    return True


class _OneLineForUnreadParams(logging.Filter):
    """pygls logs a traceback for each message whose params do not read; `receive` says the same
    in one line (which message, what the client got)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Unable to deserialize message"):
            return True
        # pygls passes the traceback as the message's argument: only params that do not read
        # (ClassValidationError) are ours to say; an internal error keeps its traceback
        return "ClassValidationError" not in record.getMessage()


ONE_LINE_FOR_UNREAD_PARAMS = _OneLineForUnreadParams()


class MlirLspProtocol(LanguageServerProtocol):
    """pygls's protocol, but open documents are ours: its workspace keeps no copy of them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(ONE_LINE_FOR_UNREAD_PARAMS)
        # uri -> the first byte that was not UTF-8, of documents whose text the client sent so
        self.undecodable_bytes: dict[str, int] = {}
        self.quiet = Quiet()
        self.answered_early: set = set()  # request ids the early start answered (`take_over`)
        self.published_early: dict[str, str] = {}  # uri -> the params the early start published

    def take_over(self, handoff: Handoff) -> None:
        """After the early start: its answers are not sent again."""
        self.answered_early = set(handoff.answered)
        self.published_early = dict(handoff.published)

    def _send_response(self, msg_id, result=None, error=None):
        """pygls's, but not for a request the early start answered (its `initialize`): a client
        sees one response per id. The request itself was handled as any other."""
        if msg_id in self.answered_early:
            self.answered_early.discard(msg_id)
            return
        super()._send_response(msg_id, result, error)

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

    def receive(self, body: Body) -> None:
        """One message body, whatever it holds: what is not a message is logged and skipped."""
        try:
            data = json.loads(body.text)
        except (ValueError, RecursionError) as e:
            return log.warning("skipped a message that is not JSON (%s): %.60r", str(e)[:80], body.text)
        if not isinstance(data, dict):
            return log.warning("skipped a message that is not a JSON object: %.60r", body.text)
        rid = data.get("id")
        rid = rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) and "method" in data else None
        if data.get("jsonrpc") != self.VERSION or not isinstance(data.get("method", ""), str):
            return self._refuse(rid, JsonRpcInvalidRequest, "not a JSON-RPC 2.0 message", body)
        try:
            message = self.structure_message(data)
        except JsonRpcException:
            if (message := self._initialize_in_part(data, rid)) is None:
                return self._unread(data, rid, body)
        if self._shutdown and rid is not None and data.get("method") != types.EXIT:
            return self._refuse(rid, JsonRpcInvalidRequest, "the server is shut down: only `exit` is read", body)
        self._note_undecodable(message, body)
        try:
            self.handle_message(message)
        except Exception:  # noqa: BLE001 - pygls answers requests whose handler fails; this is the rest
            log.exception("a message could not be handled: %.60r", body.text)

    def _unread(self, data: dict, rid, body: Body) -> None:
        """A message whose params lsprotocol refuses: an error for a request, a log line for the rest."""
        method = data.get("method", "")
        if self.get_message_type(method) or method in self.fm.features or method in self.fm.builtin_features:
            return self._refuse(rid, JsonRpcInvalidParams, f"the params of {method!r} do not read", body)
        return self._refuse(rid, JsonRpcMethodNotFound, f"unknown method {method!r}", body)

    def _initialize_in_part(self, data: dict, rid):
        """An `initialize` the early start answered (its params looked right where that phase
        looks) whose params lsprotocol refuses deeper down: `clientInfo` without a name, a
        capability of the wrong type. The client was told it is initialized, so the server reads
        what it can, without the parts that do not read (`readable_part`), and logs them. None
        when it is not such a message, or when nothing readable is left."""
        if data.get("method") != types.INITIALIZE or rid not in self.answered_early:
            return None
        found = readable_part(self._converter, data, types.InitializeRequest)
        if found is None:
            return None
        message, dropped = found
        log.warning("the client's initialize params do not read as the protocol says; the server "
                    "goes on without %s", "; ".join(dropped))
        return message

    def _refuse(self, rid, error: type[JsonRpcException], why: str, body: Body) -> None:
        log.warning("skipped a message: %s: %.60r", why, body.text)
        if rid is not None:
            self._send_response(rid, None, error(why).to_response_error())

    def _note_undecodable(self, message, body: Body) -> None:
        """Documents opened or changed by a body with bytes that are not UTF-8 (see `undecodable`)."""
        method = getattr(message, "method", None)
        if method not in (types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE):
            return
        uri = message.params.text_document.uri
        if body.bad is not None and method != types.TEXT_DOCUMENT_DID_CLOSE:
            self.undecodable_bytes[uri] = body.bad[1]
            log.warning("%s: the text holds bytes that are not UTF-8 (the first: 0x%02X at byte %d of the message); "
                        "read as U+FFFD", uri, body.bad[1], body.bad[0])
        elif method != types.TEXT_DOCUMENT_DID_CHANGE:  # a clean open, or a close, forgets it
            self.undecodable_bytes.pop(uri, None)

    def undecodable(self, doc) -> list[types.Diagnostic]:
        """One MLS001 at the document's first U+FFFD, when its text came with bytes that are not UTF-8."""
        if (byte := self.undecodable_bytes.get(doc.uri)) is None:
            return []
        line = 0
        for s, a, b in doc.parts():
            if (i := s.find("\ufffd", a, b)) == -1:
                line += s.count("\n", a, b)
                continue
            nl = s.rfind("\n", a, i)
            line += s.count("\n", a, i)
            head = s[(nl + 1 if nl != -1 else a):i]  # when a piece starts mid-line the column is approximate
            at = types.Position(line, len(head.encode("utf-16-le")) // 2)
            return [types.Diagnostic(
                types.Range(at, types.Position(at.line, at.character + 1)),
                f"mlir-lsp: the client sent this text with bytes that are not UTF-8 (the first: 0x{byte:02X}); "
                "they are read as U+FFFD, the first of them here", severity=types.DiagnosticSeverity.Error,
                code="MLS001", source="mlir-lsp")]
        return []

    def send_notification_json(self, method: str, params_json: str) -> None:
        """Send a notification whose params are already JSON text (see `MlirLspServer.publish`)."""
        if self.writer is None or self._published_early(method, params_json):
            return
        res = self.writer.write(notification_frame(method, params_json))
        if inspect.isawaitable(res):
            asyncio.ensure_future(res)

    def _published_early(self, method: str, params_json: str) -> bool:
        """Whether this is the first publish of a document the early start published, and the
        same text (then the client has it already). A first one that differs is sent."""
        if method != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS or not self.published_early:
            return False
        for uri, sent in list(self.published_early.items()):
            if params_json.startswith(params_prefix(uri)):
                del self.published_early[uri]
                if sent == params_json:
                    return True
                log.warning("%s: the first diagnostics differ from the early start's; sent again", uri)
        return False


class LockedStdoutWriter(StdoutWriter):
    """pygls's stdout writer, one message at a time: answers of threaded requests are written
    from their worker threads, and two large ones written at once interleaved on the pipe (the
    client read "Invalid control character" 128 KB into a message).

    A message written after `exit` closed the stream (the answer of a request still running
    then) is dropped with one log line: pygls reported the failed write by writing a message
    to the same stream, recursively (11 MB of tracebacks, and a server that never exited when
    nobody read its stderr)."""

    def __init__(self, stdout):
        super().__init__(stdout)
        self._lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        with self._lock:
            self.closed = True
            super().close()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.closed:
                return log.info("the client's stream is closed; a message of %d bytes was not sent", len(data))
            try:
                write_all(self._stdout, data)  # pygls's own write ignores a short one
            except BrokenPipeError:
                raise  # the client is gone: pygls and `run_stdio` end the server on it
            except (ValueError, OSError):  # closed under us, or the stream failed: said once
                self.closed = True
                log.info("the client's stream is closed; a message of %d bytes was not sent", len(data))


class TextStdinReader(StdinAsyncReader):
    """Gives pygls each message body as text, decoded in the reading thread with the bytes let go
    at once: `json.loads` of bytes decodes to a temporary string of its own, so a 50 MB didOpen
    would otherwise be held three times (bytes, that string, the parsed text) at its peak. The
    frames are read by `framing.FrameReader` (headers as the spec says, a bad one skipped, a length
    above its bound refused), and a document's resource section is lifted out of a body first
    (`held_resources.lift`): no copy of the section is made."""

    def __init__(self, stdin, executor, on_length=lambda: None, frames: Frames | None = None):
        super().__init__(stdin, executor)
        widen_pipe(stdin)
        self.frames: Frames = FrameReader(stdin) if frames is None else frames
        self.frames.on_length = on_length

    def frame(self):
        """The next message body (`Body`), None at the end of the stream."""
        def read() -> Body | None:
            raw = self.frames.frame()
            if raw is None:
                return None
            body = lift(raw)
            try:
                return Body(body.decode("utf-8"))  # the fast path; surrogatepass only where needed
            except UnicodeDecodeError:
                pass
            try:
                return Body(body.decode("utf-8", "surrogatepass"))
            except UnicodeDecodeError as e:  # not UTF-8 at all: read, and said (`MlirLspProtocol.undecodable`)
                return Body(body.decode("utf-8", "replace"), (e.start, body[e.start]))
        return self.loop.run_in_executor(self.executor, read)


async def serve(stop_event: threading.Event, reader: TextStdinReader, protocol: MlirLspProtocol) -> None:
    """pygls's message loop (`pygls.io_.run_async`), with each body handed to `protocol.receive`."""
    while not stop_event.is_set():
        body = await reader.frame()
        if body is None:
            break
        protocol.receive(body)
        protocol.quiet.heard()


def undecodable(ls, doc) -> list[types.Diagnostic]:
    """The server's diagnostic source for texts sent with bytes that are not UTF-8."""
    protocol = ls.protocol
    return protocol.undecodable(doc) if isinstance(protocol, MlirLspProtocol) else []


def run_stdio(server, stop_event: threading.Event, stdin=None, stdout=None, handoff: Handoff | None = None) -> int:
    """pygls's stdio loop, with message bodies read as text (`TextStdinReader`); returns the
    process's exit status: `exit`'s (1 without a `shutdown` before it), 0 when stdin closes.
    With a `handoff` (`early_start.py`), the frames it kept come first."""
    server.protocol.set_writer(LockedStdoutWriter(stdout or sys.stdout.buffer))
    protocol = server.protocol
    if handoff is not None:
        protocol.take_over(handoff)
    reader = TextStdinReader(stdin or sys.stdin.buffer, server.thread_pool,
                             on_length=lambda: setattr(protocol.quiet, "reading", True),
                             frames=handoff.frames if handoff is not None else None)
    code = 0
    try:
        asyncio.run(serve(stop_event, reader, protocol))
    except BrokenPipeError:
        log.error("the client's connection is gone; shutting down")
    except KeyboardInterrupt:
        pass
    except SystemExit as e:  # pygls's `exit`: 0 after a `shutdown`, else 1 (the LSP spec)
        code = e.code if isinstance(e.code, int) else 0
    finally:
        server.shutdown()
    return code
