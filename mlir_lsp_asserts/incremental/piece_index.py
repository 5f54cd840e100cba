"""What a document kept in pieces (live_text.py) keeps beside its piece list, so that an edit
never walks all the pieces: each piece's first line (`LineStarts`) and which pieces hold
findings (`FoundPieces`). Both are told of a splice (`replace(start, stop, ...)`: the pieces
start..stop became the new ones) and update only what it moved.

A 50 MB module of 85,000 small functions is 85,000 pieces: a Python walk over them costs
3-8 ms, more than the rest of an edit. Here an edit costs a bisect and a C-speed sum over one
block of at most `2 * BLOCK` counts, and the finding index costs what the findings after the
edit cost (a publish lists them all anyway).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

# Pieces per block of `LineStarts` (a block is split above twice this, merged below half).
BLOCK = 256


class LineStarts(Sequence[int]):
    """The first line of each piece, from the pieces' line counts, kept in blocks: each block its
    counts and their sum, and the first line of each block. `self[i]` and `piece_at(line)` are a
    bisect over the blocks and a sum within one; a splice rewrites one or two blocks and the
    blocks' first lines (a few hundred integers, summed in C)."""

    __slots__ = ("_blocks", "_sums", "_first_line", "_first_piece", "_count")

    def __init__(self, counts: Sequence[int] = ()):
        self._blocks: list[list[int]] = []
        self._sums: list[int] = []
        self._first_line: list[int] = []  # of each block
        self._first_piece: list[int] = []  # of each block
        self._count = 0
        self.reset(counts)

    def reset(self, counts: Sequence[int]) -> None:
        """Start again from every piece's line count (a whole read)."""
        counts = list(counts)
        self._blocks = [counts[k:k + BLOCK] for k in range(0, len(counts), BLOCK)] or [[]]
        self._sums = [sum(b) for b in self._blocks]
        self._count = len(counts)
        self._refirst(0)

    def _refirst(self, from_block: int) -> None:
        """Recompute the blocks' first lines and first pieces from block `from_block` on."""
        if from_block == 0:
            self._first_line = [0, *itertools.accumulate(self._sums)][:-1]
            self._first_piece = [0, *itertools.accumulate(map(len, self._blocks))][:-1]
            return
        k = from_block
        del self._first_line[k:], self._first_piece[k:]
        line = self._first_line[k - 1] + self._sums[k - 1]
        piece = self._first_piece[k - 1] + len(self._blocks[k - 1])
        self._first_line.extend(itertools.accumulate(self._sums[k:-1], initial=line))
        self._first_piece.extend(itertools.accumulate(map(len, self._blocks[k:-1]), initial=piece))

    def __len__(self) -> int:
        return self._count

    @property
    def total(self) -> int:
        """Line ends in all the pieces (the document's line count less one)."""
        return self._first_line[-1] + self._sums[-1]

    def _block_of(self, i: int) -> int:
        return bisect.bisect_right(self._first_piece, i) - 1

    def __getitem__(self, i: int) -> int:  # type: ignore[override]  # one index, no slices
        """The first line of piece `i` (negative: from the end)."""
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        k = self._block_of(i)
        return self._first_line[k] + sum(self._blocks[k][:i - self._first_piece[k]])

    def piece_at(self, line: int) -> int:
        """The index of the piece holding `line` (clamped into the pieces; 0 when there are none)."""
        if self._count == 0:
            return 0
        line = max(line, 0)
        k = max(0, bisect.bisect_right(self._first_line, line) - 1)
        block = self._blocks[k]
        starts = list(itertools.accumulate(block[:-1], initial=self._first_line[k]))
        # the last piece that starts at or before the line (pieces of no line end share a start)
        j = bisect.bisect_right(starts, line) - 1
        return min(self._first_piece[k] + max(j, 0), self._count - 1)

    def replace(self, start: int, stop: int, counts: Sequence[int]) -> None:
        """Pieces start..stop were replaced by pieces of these line counts."""
        counts = list(counts)
        if self._count == 0 or start >= self._count:
            k = len(self._blocks) - 1
            self._rewrite(k, k + 1, self._blocks[k] + counts)
            return
        k = self._block_of(start)
        m = self._block_of(max(start, stop - 1))
        base = self._first_piece[k]
        merged = list(itertools.chain.from_iterable(self._blocks[k:m + 1]))
        merged[start - base:stop - base] = counts
        self._rewrite(k, m + 1, merged)

    def _rewrite(self, k: int, end: int, counts: list[int]) -> None:
        """Blocks k..end become `counts`, in blocks (merged with a neighbour when small, split when
        large); then the sums, and the first lines from block k on."""
        if len(counts) < BLOCK // 2:
            if end < len(self._blocks):
                counts, end = counts + self._blocks[end], end + 1
            elif k > 0:
                counts, k = self._blocks[k - 1] + counts, k - 1
        new = [counts[x:x + BLOCK] for x in range(0, len(counts), BLOCK)] if len(counts) > 2 * BLOCK else [counts]
        new = [b for b in new if b] or ([[]] if end - k == len(self._blocks) else [])  # none left: one empty
        self._blocks[k:end] = new
        self._sums[k:end] = [sum(b) for b in new]
        self._refirst(min(k, len(self._blocks) - 1))
        self._count = self._first_piece[-1] + len(self._blocks[-1])


class FoundPieces:
    """The pieces that hold findings, in order: their indices, first lines and numbers of
    findings (three parallel lists), and the total number of findings."""

    __slots__ = ("indices", "lines", "counts", "total")

    def __init__(self) -> None:
        self.indices: list[int] = []
        self.lines: list[int] = []  # the first line of each of those pieces
        self.counts: list[int] = []  # how many findings each holds
        self.total = 0

    def reset(self, counts: Sequence[int], newlines: Sequence[int]) -> None:
        """Start again from every piece's number of findings and of line ends."""
        starts = itertools.accumulate(newlines, initial=0)
        kept = [(i, line, n) for (i, n), line in zip(enumerate(counts), starts, strict=False) if n]
        self.indices = [i for i, _l, _n in kept]
        self.lines = [line for _i, line, _n in kept]
        self.counts = [n for _i, _l, n in kept]
        self.total = sum(self.counts)

    def __len__(self) -> int:
        return len(self.indices)

    def replace(self, start: int, stop: int, first_line: int, counts: Sequence[int], newlines: Sequence[int],
                line_shift: int) -> None:
        """Pieces start..stop, the first at `first_line`, were replaced by pieces holding `counts`
        findings and `newlines` line ends; the pieces after them moved by `line_shift` lines."""
        lo = bisect.bisect_left(self.indices, start)
        hi = bisect.bisect_left(self.indices, stop)
        shift = len(counts) - (stop - start)
        new = [(start + k, line, n) for k, (n, line) in
               enumerate(zip(counts, itertools.accumulate(newlines, initial=first_line), strict=False)) if n]
        self.total += sum(n for _i, _l, n in new) - sum(self.counts[lo:hi])
        self.counts[lo:hi] = [n for _i, _l, n in new]
        after, lines = self.indices[hi:], self.lines[hi:]
        if shift:
            after = [i + shift for i in after]
        if line_shift:
            lines = [line + line_shift for line in lines]
        self.indices[lo:] = [i for i, _l, _n in new] + after
        self.lines[lo:] = [line for _i, line, _n in new] + lines

    def set(self, i: int, line: int, count: int) -> None:
        """Piece i, at `line` (neither moved), now holds `count` findings."""
        k = bisect.bisect_left(self.indices, i)
        if k < len(self.indices) and self.indices[k] == i:
            self.total -= self.counts[k]
            del self.indices[k], self.lines[k], self.counts[k]
        if count:
            self.indices.insert(k, i)
            self.lines.insert(k, line)
            self.counts.insert(k, count)
            self.total += count

    def between(self, first: int, last: int) -> list[int]:
        """The indices from `first` to `last` included."""
        return self.indices[bisect.bisect_left(self.indices, first):bisect.bisect_right(self.indices, last)]
