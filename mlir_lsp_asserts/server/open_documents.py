"""The server's open documents: each a `LiveText` (pieces, checked piece by piece) plus the
reason it is not checked, when it is not (binary content, too large)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..config import Settings
from ..incremental.live_text import LiveText
from ..source import SourceError, decode

# Past this a document is not checked live (the CLI still checks it): one message says so.
MAX_LIVE_CHARS = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What background work (compiles, the real parser) needs: an immutable text and its version."""

    uri: str
    version: int | None
    source: str

    @property
    def path(self) -> str | None:
        return uri_path(self.uri)


def uri_path(uri: str) -> str | None:
    u = urlparse(uri)
    return str(Path(unquote(u.path))) if u.scheme == "file" else None


class OpenDocument:
    __slots__ = ("uri", "live", "error", "raw")

    def __init__(self, uri: str, version: int | None, text: str, settings: Settings):
        self.uri = uri
        self._reset(version, text, settings)

    def _reset(self, version: int | None, text: str, settings: Settings) -> None:
        self.error = _why_unchecked(text)
        self.live = LiveText("" if self.error else text, settings, version=version)
        self.raw = text if self.error else None  # what the client sent, for snapshots

    @property
    def version(self) -> int | None:
        return self.live.version

    def change(self, changes, version: int | None) -> None:
        """Apply LSP content changes (each with a range, or a whole text)."""
        for ch in changes:
            rng = getattr(ch, "range", None)
            if rng is None:
                self._reset(version, ch.text, self.live.settings)
            elif not self.error:  # an unchecked text: only a whole replacement can change it
                self.live.apply_change(((rng.start.line, rng.start.character), (rng.end.line, rng.end.character)),
                                       ch.text)
        self.live.version = version

    def parts(self) -> list[tuple[str, int, int]]:
        """The text as immutable spans (string, start, end), without copying the pieces."""
        if self.error:
            return [(self.raw, 0, len(self.raw))]
        return [(p._own, 0, len(p._own)) if p._own is not None else (p._base, p._start, p._end)
                for p in self.live.pieces]

    @property
    def size(self) -> int:
        return len(self.raw) if self.error else sum(p.size for p in self.live.pieces)

    def snapshot(self) -> Snapshot:
        return Snapshot(self.uri, self.version, self.raw if self.error else self.live.text)


def _why_unchecked(text: str) -> str | None:
    if len(text) > MAX_LIVE_CHARS:
        return (f"mlir-lsp: this document is {len(text) / 2**20:.0f} MB, above the live limit of "
                f"{MAX_LIVE_CHARS / 2**20:.0f} MB; it is not checked while editing (run `mlir-lsp --check` on it)")
    if "\x00" in text[:65536]:
        try:
            decode(text.encode("utf-8", "surrogatepass"))
        except SourceError as e:
            return str(e)
        return ("mlir-lsp: this is MLIR bytecode shown as raw bytes; open its textual form with the "
                "`mlirLsp/bytecodeToText` request (the VS Code command \"mlir-lsp: show bytecode as text\")")
    return None
