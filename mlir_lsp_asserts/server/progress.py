"""Server-initiated `$/progress` for background work (a compile, a workspace scan): created
only if the client supports it, and given up quietly if the client refuses. Each token is
forgotten at its end: pygls keeps every token it created (a Future each) and refuses to create
one it still holds."""

from __future__ import annotations

from lsprotocol import types

from .protocol import Server


class Progress:
    def __init__(self, ls: Server, token: str, title: str):
        self.ls, self.token, self.title, self.started = ls, token, title, False

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
