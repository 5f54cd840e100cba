"""Server-initiated `$/progress` for background work (a compile, a workspace scan): created
only if the client supports it, and given up quietly if the client refuses. Each piece of work
gets a token of its own, forgotten at its end: pygls keeps every token it created (a Future
each) and refuses to create one it still holds."""

from __future__ import annotations

import uuid

from lsprotocol import types

from .protocol import Server


class Progress:
    def __init__(self, ls: Server, kind: str, title: str):
        self.ls, self.title, self.started = ls, title, False
        self.token = f"mlir-lsp-{kind}-{uuid.uuid4().hex}"

    def begin(self) -> None:
        caps = self.ls.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return
        try:
            self.ls.work_done_progress.create(self.token).result(timeout=5)
            begin = types.WorkDoneProgressBegin(title=self.title, cancellable=False)
            self.ls.work_done_progress.begin(self.token, begin)
            self.started = True
        except Exception:  # noqa: BLE001 - a client that refuses progress
            self.started = False

    def report(self, message: str, percentage: int) -> None:
        if self.started:
            try:
                self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                    message=message, percentage=percentage))
            except Exception:  # noqa: BLE001
                pass

    def end(self) -> None:
        if self.started:
            try:
                self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message="done"))
            except Exception:  # noqa: BLE001
                pass
            self.ls.work_done_progress.tokens.pop(self.token, None)
