"""Resource sections of open documents, held as they arrived and never read.

A client that sends whole texts (Neovim, Emacs, Helix) opens a 490 MB export with its weights
inline as one 490 MB `didOpen`. Decoding that message and parsing its JSON costs seconds and a
second and third copy of the text, all for a hex section nobody checks. So the reader of the
client's messages *lifts* the section out of a large `didOpen`/`didChange` body before the JSON is
parsed: `\\n{-#` is found with one `bytes.find`, the end of the JSON string with a few finds of `"`,
and the section's escaped bytes are replaced by a short marker line. The document then receives
its IR part plus the marker, and takes the section from here (`HeldTail`): it stays the message's
bytes, still JSON-escaped, until something needs it as text (a dispatch count, an edit inside
it), which then pays for the one `json.loads` it needs.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict

# Bodies, and sections, smaller than this are parsed as they are (a small section lifted out would
# keep a 47 MB message alive for 3 KB of metadata).
LIFT_MIN_BYTES = 8 * 1024 * 1024
MARKER = "{-# mlir-lsp: resources held apart, id "
_MARKER_AT_END = re.compile(re.escape(MARKER) + r"(\d+) #-}\Z")
# The JSON-escaped end of a closed section: `#-}` then blanks (\n, \r, \t escaped, or spaces).
_CLOSED_END = re.compile(rb"#-\}(?:\\[nrt]| )*\Z")
# Held sections not (yet) taken by a document: a message that is not handled drops its own.
KEEP = 4


class HeldTail:
    """A document's resource section: a span of a str, or of JSON-escaped message bytes."""

    __slots__ = ("_data", "_lo", "_hi", "escaped", "closed")

    def __init__(self, base: str | bytes | bytearray, start: int, end: int, closed: bool):
        self._data, self._lo, self._hi = base, start, end
        self.escaped = not isinstance(base, str)
        self.closed = closed

    @property
    def size(self) -> int:
        return self._hi - self._lo

    def text(self) -> str:
        """The section as text (for a JSON-held one: its one `json.loads`, done on demand)."""
        if isinstance(self._data, str):  # not escaped
            return self._data[self._lo:self._hi]
        return json.loads(b'"' + self._data[self._lo:self._hi] + b'"')


class _Held:
    def __init__(self):
        self.lock = threading.Lock()
        self.items: OrderedDict[int, HeldTail] = OrderedDict()
        self.serial = 0

    def put(self, tail: HeldTail) -> int:
        with self.lock:
            self.serial += 1
            self.items[self.serial] = tail
            while len(self.items) > KEEP:
                self.items.popitem(last=False)
            return self.serial

    def take(self, key: int) -> HeldTail | None:
        with self.lock:
            return self.items.pop(key, None)


HELD = _Held()


def lift(body: bytes | bytearray) -> bytes | bytearray:
    """`body` with the resource section of its document text lifted out (see the module's doc),
    or `body` itself when it is small, not a document's text, or has no such section."""
    if len(body) < LIFT_MIN_BYTES:
        return body
    at = body.find(b"\\n{-#")
    if at == -1:
        return body
    start = at + 2  # the section's `{-#`; the IR part keeps its last line end
    close = _string_end(body, start)
    if close is None or close - start < LIFT_MIN_BYTES or not _is_document_message(body, close):
        return body
    key = HELD.put(HeldTail(body, start, close, _CLOSED_END.search(body, max(start, close - 4096), close) is not None))
    return body[:start] + f"{MARKER}{key} #-}}".encode() + body[close:]


def _string_end(body: bytes | bytearray, pos: int) -> int | None:
    """Offset of the `"` that ends the JSON string `pos` is in (one that no backslash escapes)."""
    q = body.find(b'"', pos)
    while q != -1:
        slashes = 0
        while body[q - 1 - slashes] == 0x5C:  # backslash
            slashes += 1
        if slashes % 2 == 0:
            return q
        q = body.find(b'"', q + 1)
    return None


def _is_document_message(body: bytes | bytearray, close: int) -> bool:
    """A didOpen or a didChange: its method is named before its params or after the text."""
    head, rest = body[:512], body[close:close + 4096]
    return any(m in head or m in rest for m in (b'"textDocument/didOpen"', b'"textDocument/didChange"'))


def held_tail_of(text: str) -> tuple[int, HeldTail] | None:
    """(where the marker starts, the held section) when `text` ends with a lifting marker."""
    if not text.endswith(" #-}") or MARKER not in text[-len(MARKER) - 32:]:
        return None
    m = _MARKER_AT_END.search(text, len(text) - len(MARKER) - 32)
    if m is None:
        return None
    tail = HELD.take(int(m.group(1)))
    return None if tail is None else (m.start(), tail)



def restored(text: str) -> str | None:
    """`text` (a ranged change's, which the reader may lift as it lifts a whole text) with its
    held section put back in place of the marker; None when it has no marker. The entry is taken:
    nothing stays held."""
    held = held_tail_of(text)
    return None if held is None else text[:held[0]] + held[1].text()
