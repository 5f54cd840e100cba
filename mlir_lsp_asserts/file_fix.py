"""`--fix` / `--diff` for one file: fix, verify with the real parser, write atomically.

Only the IR part of a file is fixed (see source.py); a resource section after it (an export's
weights, hundreds of MB) is copied from the old file into the new one by the kernel, byte for
byte, and never enters this process. The real parser then judges the fixed IR part in a child
process, so a big file's check holds no second copy of anything here.
"""

from __future__ import annotations

import difflib
import os

from .files import file_stamp, write_atomic
from .fixes import fix_text
from .fixes.verify import judge_fix
from .source import BOM, SourceError

UNREADABLE_NOTE = ("the real parser (IREE {ver}) cannot read this file ({err}); fixed on the structural "
                   "reader's guarantee that only the asserts and their dead condition ops were touched")


def _iree_version() -> str:
    try:
        from importlib.metadata import version

        return version("iree-base-compiler")
    except Exception:  # noqa: BLE001
        return "?"


def unified_diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=path, tofile=path))


def _verify(out, text: str, fixed: str, in_child: bool) -> bool:
    """The real parser's word on the fix: False (and out.error) when the original parses and the
    fixed text does not; a note when the original itself cannot be read."""
    try:
        before, after = judge_fix(text, fixed, in_child=in_child)
    except SourceError as e:  # the child failed
        out.error = f"{e}; file left unchanged"
        return False
    if before is None and after is not None:
        out.error = f"the fixed text does not parse ({after}); file left unchanged"
        return False
    if before is not None:
        out.notes.append(UNREADABLE_NOTE.format(ver=_iree_version(), err=before))
    return True


def fix_file_outcome(out, result, settings, opts, source, stamp, raw: bytes | None = None) -> None:
    """Fix `out.path` (or stdin, whose bytes are `raw`) from its check `result`. `source` is what
    was read (its IR part, its resource tail), `stamp` the file's `file_job.file_stamp` then."""
    from .checker import check_text

    text = result.parsed.text
    tail = source.tail
    fo = fix_text(result, settings.fix_mode, opts.unsafe_fixes)
    if fo.text == text:
        if out.path == "-" and opts.fix and not opts.diff:
            out.stdout_text = _with_tail(text, raw, tail)  # a filter prints its input even when nothing changes
        return
    in_child = tail is not None  # a text above verify.CHILD_VERIFY_CHARS is judged in a child anyway
    if opts.verify_with_parser and not _verify(out, text, fo.text, in_child=in_child):
        return
    out.changed = True
    if opts.diff:
        if source.is_bytecode:
            out.notes.append("bytecode file: the diff shows its textual form")
        out.diff = unified_diff(out.path, text, fo.text)
        return
    if out.path == "-":
        out.stdout_text = _with_tail(fo.text, raw, tail)
    elif not _write(out, source, stamp, fo.text):
        return
    out.fixed_count = fo.fixed
    remaining = check_text(fo.text, settings, tail=tail)
    out.findings = remaining.findings
    out.text = fo.text
    out.lines = remaining.parsed.lines


def _with_tail(text: str, raw: bytes | None, tail) -> str:
    if tail is None or raw is None:
        return text
    return text + raw[tail.start:tail.end].decode("utf-8", "replace")


def _write(out, source, stamp, fixed: str) -> bool:
    """Write the fixed file atomically, unless it changed on disk since it was read."""
    path = out.path
    if not os.access(path, os.W_OK) or not (os.stat(path).st_mode & 0o222):
        out.notes = [n for n in out.notes if not n.startswith("the real parser (IREE")]
        out.write_error = "file is read-only; not fixed"
        return False
    try:
        unchanged = file_stamp(path) == stamp and (source.is_bytecode or _ir_bytes_unchanged(path, source))
    except OSError as e:
        out.error = f"cannot re-read before writing: {e.strerror}"
        return False
    if not unchanged:
        out.error = "file changed on disk during the check; not written (run again)"
        return False
    try:
        if source.is_bytecode:
            from .bytecode import write_fixed_bytecode

            write_fixed_bytecode(path, fixed, path)  # its resources byte-identical
        else:
            payload = (BOM if source.bom else b"") + fixed.encode("utf-8")
            tail = source.tail
            write_atomic(path, payload, copy_from=None if tail is None else (path, tail.start, tail.end))
    except SourceError as e:
        out.error = f"{e}; file left unchanged"
        return False
    except OSError as e:
        out.error = f"cannot write: {e.strerror or e}; file left unchanged"
        return False
    return True


def _ir_bytes_unchanged(path: str, source) -> bool:
    """Whether the file still starts with the IR part that was checked (its resources are
    covered by the size and time stamp: they are copied, not rewritten)."""
    expected = (BOM if source.bom else b"") + source.text.encode("utf-8")
    with open(path, "rb") as f:
        return f.read(len(expected) + (0 if source.tail else 1)) == expected
