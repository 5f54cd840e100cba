"""`--fix` / `--diff` for one file: fix, verify with the real parser, write atomically."""

from __future__ import annotations

import difflib
import os

from ..files import write_atomic
from ..fixes import fix_text
from ..fixes.verify import real_parse_error
from ..source import SourceError

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


def fix_file_outcome(out, result, settings, opts, data: bytes, is_bytecode: bool) -> None:
    from ..check import check_text

    text = result.parsed.text
    before: str | None = None
    unreadable_note = ""
    fo = fix_text(result, settings.fix_mode, opts.unsafe_fixes)
    if fo.text == text:
        if out.path == "-" and opts.fix and not opts.diff:
            out.stdout_text = text  # a filter prints its input even when nothing changes
        return
    if opts.verify_with_parser:
        before = real_parse_error(text)
        if before is None:
            after = real_parse_error(fo.text)
            if after is not None:
                out.error = f"the fixed text does not parse ({after}); file left unchanged"
                return
        else:
            unreadable_note = UNREADABLE_NOTE.format(ver=_iree_version(), err=before)
    out.changed = True
    if opts.verify_with_parser and before is not None:
        out.notes.append(unreadable_note)
    if opts.diff:
        if is_bytecode:
            out.notes.append("bytecode file: the diff shows its textual form")
        out.diff = unified_diff(out.path, text, fo.text)
        return
    if out.path == "-":
        out.stdout_text = fo.text
    else:
        if not os.access(out.path, os.W_OK) or not (os.stat(out.path).st_mode & 0o222):
            if unreadable_note in out.notes:
                out.notes.remove(unreadable_note)
            out.write_error = "file is read-only; not fixed"
            return
        try:
            with open(out.path, "rb") as f:
                current = f.read()
        except OSError as e:
            out.error = f"cannot re-read before writing: {e.strerror}"
            return
        if current != data:
            out.error = "file changed on disk during the check; not written (run again)"
            return
        if is_bytecode:
            from ..bytecode import write_fixed_bytecode

            try:
                write_fixed_bytecode(out.path, fo.text, out.path)
            except SourceError as e:
                out.error = f"{e}; file left unchanged"
                return
        else:
            payload = fo.text.encode("utf-8")
            if data.startswith(b"\xef\xbb\xbf"):
                payload = b"\xef\xbb\xbf" + payload
            try:
                write_atomic(out.path, payload)
            except OSError as e:
                out.error = f"cannot write: {e.strerror or e}; file left unchanged"
                return
    out.fixed_count = fo.fixed
    remaining = check_text(fo.text, settings)
    out.findings = remaining.findings
    out.text = fo.text
    out.lines = remaining.parsed.lines
