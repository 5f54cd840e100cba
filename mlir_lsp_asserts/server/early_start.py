"""The language server's first answers, before pygls is imported (issue 37).

Importing pygls and lsprotocol (attrs classes for the whole protocol, and cattrs) costs about
half a second of CPU (`import lsprotocol.types` alone 0.4 s), more than an editor's first wait
should be: `initialize` answered within 100 ms of the spawn, a small document's diagnostics
within 200 ms. So `mlir-lsp --stdio` starts here, with the standard library and the package's
pure core only (tests/test_early_start.py fails when this phase loads pygls, lsprotocol,
cattrs, attrs or the dispatch code), while a thread of its own imports the pygls server:

- `initialize` is answered at once, as pygls would answer those params (`capabilities.py`);
- each `textDocument/didOpen` of a document is checked and its diagnostics published as the
  pygls server's first publish of it would be (`diagnostics_json.publish_params_json`), with the
  settings read as the server reads them: `initializationOptions` and
  `workspace/didChangeConfiguration` (`options.read_options`), then the file's config file
  (`file_settings.for_uri`);
- every frame, those included, is kept, in order; nothing else is answered.

When the import is done, the pygls server takes over (`Handoff`, `transport.run_stdio`): it reads
the kept frames first, then the stream, so it ends in the state it would have had without this
phase (client capabilities, settings, open documents, pull or push, the real parser's run and
the count scheduled for each opened document). It does not send its own answer to an
`initialize` answered here (a client sees one response per id), and it drops its first publish
of a document published here when that is the same text (the client has it already; one that
differs is sent, and logged).

What is in doubt is left to the pygls server: params that do not read as the protocol says
(a document's version outside its 32-bit integer), a second
`initialize`, a body above EARLY_MAX_BYTES or not UTF-8, and after a `shutdown` or `exit`,
nothing more is answered or published here. A closed stdin is kept like a frame (the pygls
server then ends as it does at the end of its input). `--tcp` does not come here.

The work is ordered for the interpreter's one lock (the GIL): the first frame (an editor sends
`initialize` right after the spawn) is answered before anything is imported; then this phase's
own imports (the checker, the settings); then the frames that came meanwhile (the `didOpen` an
editor sends after `initialized`); and only when none is waiting does the import of pygls start,
so that it does not halve the speed of the first check.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

from .. import __version__
from .capabilities import initialize_result, readable
from .framing import FrameReader, message_frame, widen_pipe, write_all

log = logging.getLogger(__name__)

# Bodies above this are kept unread for the pygls server (below held_resources.LIFT_MIN_BYTES, so
# a body read here is the body the server reads: no resource section is lifted out of it).
EARLY_MAX_BYTES = 4 << 20
# How long the first frame is waited for before this phase's own imports start.
FIRST_FRAME_SECONDS = 0.05
PUBLISH = "textDocument/publishDiagnostics"
# The protocol's `integer` (a document's version): lsprotocol refuses a didOpen outside it.
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
EXIT_IMPORT_FAILED = 2

Frame = bytes | bytearray | None  # a body; None: the end of the stream


class _Stopped:
    """The reader's last item after the handoff: from here the pygls server reads the stream."""


STOPPED = _Stopped()


class _Imported:
    """The import thread's outcome: the server's entry (`app.run_server`), or why it failed."""

    def __init__(self, run: Callable[..., int] | None, error: BaseException | None = None):
        self.run, self.error = run, error


class _Reader(threading.Thread):
    """Reads frames into the inbox until the handoff, then stops after the frame it was reading."""

    def __init__(self, frames: FrameReader, inbox: queue.SimpleQueue):
        super().__init__(name="mlir-lsp-early-reader", daemon=True)
        self.frames, self.inbox = frames, inbox
        self.handoff = threading.Event()

    def run(self) -> None:
        while True:
            try:
                frame = self.frames.frame()
            except BaseException as e:  # noqa: BLE001 - the pygls server meets it where it would have
                self.inbox.put(e)
                return
            self.inbox.put(frame)
            if frame is None:
                return
            # Not held here while the next frame is awaited: a 50 MB didOpen would stay in memory
            # beside the text the server made of it (the model-shaped file's peak: 4.2x the file).
            frame = None
            if self.handoff.is_set():
                self.inbox.put(STOPPED)
                return


class KeptFrames:
    """The pygls server's frames (`transport.TextStdinReader`): the ones read before the handoff,
    in order, then those the early reader read while it was stopping, then the stream itself."""

    def __init__(self, kept: deque, inbox: queue.SimpleQueue, frames: FrameReader):
        self.kept, self.inbox, self.frames = kept, inbox, frames
        self.direct = False

    @property
    def on_length(self) -> Callable[[], None]:
        return self.frames.on_length

    @on_length.setter
    def on_length(self, fn: Callable[[], None]) -> None:
        self.frames.on_length = fn

    def frame(self) -> Frame:
        if self.kept:
            item = self.kept.popleft()
        elif self.direct:
            return self.frames.frame()
        else:
            item = self.inbox.get()
            if item is STOPPED:
                self.direct = True
                return self.frames.frame()
        if isinstance(item, BaseException):
            raise item
        return item


class Handoff:
    """What the pygls server takes over (`transport.run_stdio`): the frames, the ids of the
    requests answered here (`initialize`), the publishes sent here (uri -> their params)."""

    def __init__(self, frames: KeptFrames):
        self.frames = frames
        self.answered: set[int | str] = set()
        self.published: dict[str, str] = {}


def _own_reader(stdin: BinaryIO) -> BinaryIO:
    """A buffered reader of stdin's file of our own, which the server reads from here on. The
    early reader reads ahead (it waits for a frame while the server handles the last one, an
    `exit` maybe); at the interpreter's exit a daemon thread waiting in a read holds its reader's
    lock, and the interpreter's own stdin, closed at exit, would then abort the process
    ("could not acquire lock ... at interpreter shutdown"). This one is never closed."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError, AttributeError):  # not a file (a test's BytesIO): read it as it is
        return stdin
    return open(fd, "rb", closefd=False)  # noqa: SIM115 - it lives as long as the process


def _request_id(msg: dict) -> int | str | None:
    rid = msg.get("id")
    return rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None


class EarlyStart:
    """The phase itself: `run` answers what it can until the import is done, then hands off."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, load_server: Callable[[], Callable[..., int]]):
        widen_pipe(stdin)
        self.stdout = stdout
        self.frames = FrameReader(_own_reader(stdin))
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.reader = _Reader(self.frames, self.inbox)
        self.load_server = load_server
        self.importer: threading.Thread | None = None
        self.kept: deque = deque()
        self.handoff = Handoff(KeptFrames(self.kept, self.inbox, self.frames))
        self.initialize_seen = False
        self.publishing = True  # False once something is in doubt: the pygls server publishes
        self.settings_given: list[Any] = []  # initializationOptions, then each didChangeConfiguration's
        self.uris: set[str] = set()  # documents a message named: published at most once, at their open

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> _Imported:
        """Answer frames until the pygls server is imported; its outcome (the handoff is ready)."""
        self.reader.start()
        try:
            self._take(self.inbox.get(timeout=FIRST_FRAME_SECONDS))
        except queue.Empty:
            pass
        self._load()
        while True:
            try:
                item = self.inbox.get(block=self.importer is not None)
            except queue.Empty:  # nothing waits: now the import may take the interpreter
                self.importer = threading.Thread(target=self._import, name="mlir-lsp-import", daemon=True)
                self.importer.start()
                continue
            if isinstance(item, _Imported):
                self.reader.handoff.set()
                return item
            self._take(item)

    def _import(self) -> None:
        try:
            self.inbox.put(_Imported(self.load_server()))
        except BaseException as e:  # noqa: BLE001 - said in one line by `serve`
            self.inbox.put(_Imported(None, e))

    def _load(self) -> None:
        """This phase's own imports (the checker, the settings, the documents), before pygls's."""
        try:
            from . import diagnostics_json, file_settings, open_documents, options  # noqa: F401
        except Exception:  # noqa: BLE001 - the pygls server imports them too, and says what fails
            log.warning("the early start cannot check documents", exc_info=True)
            self.publishing = False

    def _take(self, item: Any) -> None:
        self.kept.append(item)
        if item is None or isinstance(item, BaseException):
            self.publishing = False
            return
        try:
            self._answer(item)
        except Exception:  # noqa: BLE001 - the pygls server answers what this phase could not
            log.warning("the early start left a message to the server", exc_info=True)
            self.publishing = False

    # -- what is answered here -----------------------------------------------------------------
    def _answer(self, frame: bytes | bytearray) -> None:
        if len(frame) > EARLY_MAX_BYTES:
            self.publishing = False
            return
        try:
            text = bytes(frame).decode("utf-8")
        except UnicodeDecodeError:  # the server reads it with replacement characters, and says so
            self.publishing = False
            return
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            return  # skipped by the server too
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return  # skipped or refused by the server: nothing changes
        method, params = msg.get("method"), msg.get("params")
        if method == "initialize":
            self._initialize(msg, params)
        elif method in ("shutdown", "exit"):
            self.publishing = False
        elif method == "workspace/didChangeConfiguration":
            if isinstance(params, dict):
                self.settings_given.append(params.get("settings"))
            else:
                self.publishing = False
        elif method == "textDocument/didOpen":
            self._did_open(params)
        elif method in ("textDocument/didChange", "textDocument/didClose", "textDocument/didSave"):
            uri = params.get("textDocument", {}).get("uri") if isinstance(params, dict) else None
            if isinstance(params, dict) and isinstance(params.get("textDocument"), dict) and isinstance(uri, str):
                self.uris.add(uri)
            else:
                self.publishing = False

    def _initialize(self, msg: dict, params: Any) -> None:
        """Answered here when the pygls server would answer it the same: not after a `shutdown`,
        an `exit` or anything in doubt (`publishing` is False then), and only with params that
        read. Settings are read later, at the first didOpen (`options` is not imported before
        this answer): `read_options` takes any JSON without raising, which
        tests/test_vscode_settings.py checks on random settings."""
        rid = _request_id(msg)
        seen, self.initialize_seen = self.initialize_seen, True
        if seen or rid is None or not self.publishing or not readable(params):
            self.publishing = False
            return
        result = initialize_result(params, "mlir-lsp", __version__)
        self._write(json.dumps({"id": rid, "result": result, "jsonrpc": "2.0"}))
        self.handoff.answered.add(rid)
        self.settings_given.append(params.get("initializationOptions"))

    def _did_open(self, params: Any) -> None:
        td = params.get("textDocument") if isinstance(params, dict) else None
        if not isinstance(td, dict) or not isinstance(uri := td.get("uri"), str):
            self.publishing = False
            return
        first = uri not in self.uris
        self.uris.add(uri)
        version, text = td.get("version"), td.get("text")
        if not (first and self.publishing and self.handoff.answered and isinstance(text, str)
                and isinstance(td.get("languageId"), str) and isinstance(version, int)
                and not isinstance(version, bool) and INT32_MIN <= version <= INT32_MAX):
            return  # the server refuses a version out of the protocol's range: no publish of it
        from types import SimpleNamespace

        from .diagnostics_json import notification_frame, publish_params_json
        from .file_settings import for_uri
        from .open_documents import OpenDocument

        settings = for_uri(SimpleNamespace(settings=self._options().rules), uri)
        params_json = publish_params_json(OpenDocument(uri, version, text, settings))
        write_all(self.stdout, notification_frame(PUBLISH, params_json))
        self.handoff.published[uri] = params_json

    def _options(self):
        """The settings as `lifecycle.apply_options` has them after the same messages."""
        from .options import ServerOptions, read_options

        options = ServerOptions()
        for given in self.settings_given:
            if (new := read_options(given, options, lambda _message: None)) is not None:
                options = new
        return options

    def _write(self, body: str) -> None:
        write_all(self.stdout, message_frame(body))


def serve(load_server: Callable[[], Callable[..., int]], stdin: BinaryIO | None = None,
          stdout: BinaryIO | None = None) -> int:
    """Run the server on stdio: this phase until `load_server()` (the import of the pygls server,
    in a thread) returns its entry, then that entry with the handoff; the exit status."""
    early = EarlyStart(stdin or sys.stdin.buffer, stdout or sys.stdout.buffer, load_server)
    imported = early.run()
    if imported.run is None:
        why = imported.error
        print(f"mlir-lsp: error: the language server cannot start: {type(why).__name__}: {why} "
              "(reinstall mlir-lsp with its dependencies)", file=sys.stderr)
        return EXIT_IMPORT_FAILED
    return imported.run(None, handoff=early.handoff)
