"""What the parts of a live text (editing.py, big_function.py) read and ask of the text that owns
them: its pieces and the few operations on them. `live_text.LiveText` is the one owner; the parts
name this narrow view, never the facade, so they stand below it."""

from __future__ import annotations

from typing import Protocol

from ..config import Settings
from .building import PieceMaker
from .pieces import Piece


class PieceOwner(Protocol):
    settings: Settings
    version: int | None
    min_piece_chars: int
    pieces: list[Piece]
    exact: bool
    maker: PieceMaker

    @property
    def text(self) -> str: ...

    def rebuild(self, text: str, exact: bool = False) -> None: ...

    def relines(self) -> None: ...

    def text_changed(self) -> None: ...

    def locate(self, line: int, character: int) -> tuple[int, int]: ...
