"""The server's open documents: each a `LiveText` (pieces, checked piece by piece) plus the
reason it is not checked, when it is not (binary content, too large).

A document whose text ends in a resource section (an export with its weights inline: 400 KB of
IR, 490 MB of hex) keeps only its IR part in the `LiveText`; the section stays where the client's
message put it, in the text received or in the message's bytes (`held_resources.py`), and is
never split, checked or copied. An
edit inside the IR part costs what it costs in a small file; one that reaches into the section
(rare: nobody types in a weight) reads the document again."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..config import Settings
from ..incremental.live_text import LiveText
from ..source import SourceError, decode
from ..syntax.lines import LineIndex
from ..syntax.resource_section import NOT_CLOSED, tail_of_text
from .held_resources import LIFT_MIN_BYTES, HeldTail, held_tail_of, restored

# Past this much IR a document is not checked live (the CLI still checks it): one message says
# so. A resource section does not count: it is never read.
MAX_LIVE_CHARS = 128 * 1024 * 1024


# Which text a result belongs to: (the document's opening, its LSP version). A document closed and
# reopened may come back at the same version with another text (clients restart at 1): a compile
# or parse of the old text that finishes after the close must never be taken for the new one's.
Stamp = tuple[int, int | None]
_openings = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What background work (compiles, the real parser) needs: an immutable text, its version
    and its opening (see `Stamp`)."""

    uri: str
    version: int | None
    source: str
    opened: int = 0

    @property
    def stamp(self) -> Stamp:
        return (self.opened, self.version)

    @property
    def path(self) -> str | None:
        return uri_path(self.uri)


def uri_path(uri: str) -> str | None:
    u = urlparse(uri)
    return str(Path(unquote(u.path))) if u.scheme == "file" else None


class OpenDocument:
    __slots__ = ("uri", "live", "error", "raw", "tail", "opened")

    def __init__(self, uri: str, version: int | None, text: str, settings: Settings, opened: int | None = None):
        self.uri = uri
        self.opened = next(_openings) if opened is None else opened  # see Stamp
        self._reset(version, text, settings)

    def _reset(self, version: int | None, text: str, settings: Settings) -> None:
        tail: HeldTail | None = None
        if (held := held_tail_of(text)) is not None:
            ir, tail = text[:held[0]], held[1]
        elif (found := tail_of_text(text)) is not None and found.end - found.start >= LIFT_MIN_BYTES:
            ir, tail = text[:found.start], HeldTail(text, found.start, found.end, found.closed)
        else:
            ir = text
        self.error = _why_unchecked(ir)
        self.live = LiveText("" if self.error else ir, settings, version=version)
        self.raw = (ir if tail is None else ir + tail.text()) if self.error else ""  # for snapshots
        self.tail = None if self.error else tail

    def with_settings(self, settings: Settings) -> OpenDocument:
        """The same text checked with other settings (the resource section is not copied)."""
        if self.error or self.tail is None:
            s = self.snapshot()
            return OpenDocument(self.uri, s.version, s.source, settings, self.opened)
        doc = OpenDocument(self.uri, self.version, self.live.text, settings, self.opened)
        doc.tail = self.tail
        return doc

    @property
    def version(self) -> int | None:
        return self.live.version

    @property
    def stamp(self) -> Stamp:
        """(opening, version): what results of this text are kept under (see `Stamp`)."""
        return (self.opened, self.live.version)

    @property
    def tail_line(self) -> int | None:
        """The line the resource section starts on (the IR part ends with a line end)."""
        return None if self.tail is None else self.live.line_count - 1

    def change(self, changes, version: int | None) -> None:
        """Apply LSP content changes (each with a range, or a whole text)."""
        for ch in changes:
            rng = getattr(ch, "range", None)
            if rng is None:
                self._reset(version, ch.text, self.live.settings)
            elif (whole := restored(ch.text)) is not None:  # a large paste whose section the reader lifted
                self._reset(version, _spliced(self.snapshot().source, rng, whole), self.live.settings)
            elif self.error:
                continue  # an unchecked text: only a whole replacement can change it
            elif self.tail is not None and max(rng.start.line, rng.end.line) >= self.tail_line:
                self._reset(version, _spliced(self.snapshot().source, rng, ch.text), self.live.settings)
            else:
                self.live.apply_change(((rng.start.line, rng.start.character), (rng.end.line, rng.end.character)),
                                       ch.text)
        self.live.version = version

    def parts(self) -> list[tuple[str, int, int]]:
        """The IR as immutable spans (string, start, end), without copying the pieces; a
        resource section is left out (the real parser reads the IR without the blobs' bytes)."""
        if self.error:
            return [(self.raw, 0, len(self.raw))]
        return self.live.spans()

    @property
    def size(self) -> int:
        if self.error:
            return len(self.raw)
        return self.live.size + (self.tail.size if self.tail else 0)

    def tail_problem(self) -> tuple[int, str] | None:
        """(line, message) when the resource section is not closed (a truncated export)."""
        line = self.tail_line
        if line is None or self.tail is None or self.tail.closed:
            return None
        return line, NOT_CLOSED + " (the document ends inside its resources)"

    def snapshot(self) -> Snapshot:
        if self.error:
            return Snapshot(self.uri, self.version, self.raw, self.opened)
        text = self.live.text
        if self.tail is not None:
            text += self.tail.text()
        return Snapshot(self.uri, self.version, text, self.opened)


def _spliced(text: str, rng, new_text: str) -> str:
    """`text` with an LSP range replaced (a whole-text operation, for the rare edit that touches a
    resource section)."""
    lines = LineIndex(text)
    a = lines.offset(rng.start.line, rng.start.character)
    b = lines.offset(rng.end.line, rng.end.character)
    a, b = min(a, b), max(a, b)
    return text[:a] + new_text + text[b:]


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
