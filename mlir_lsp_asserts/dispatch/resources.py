"""The weights of IR handed from one compile to the next (the lowering to `input`, then
`--compile-from=input`): kept on every supported release.

An export with its weights inline refers to each as `dense_resource<KEY>`; the bytes live in the
file's trailing `{-# dialect_resources: { builtin: { KEY: "0x..." } } #-}` section. IREE 3.8's
`iree-compile --compile-to=input -o lowered.mlir` prints the references but not the section, so
the next compile fails ("resource data missing in input IR"). 3.3 and 3.13 print it.

`kept` repairs such a text by appending the section of the text that was lowered. Why that is
sound: the parser registers each blob under its key in the section (a key is renamed only when
it is already taken, which cannot happen within one file's section), the printer writes each
reference with the key of the blob it holds, and a blob's bytes are never changed in place (a
pass that computes new values makes a new attribute under a new key). So each reference of the
lowered text whose key is in the source's section means exactly the blob of that key there, and
a reference to a key that is not there (a blob the lowering made) is never guessed: `kept`
raises `ResourcesLost`, and the count fails with that one line. tests/compat compares the
counts and the module made this way with the release's own route through bytecode
(`--emit-mlir-bytecode`, which keeps every blob, printed by the same release's `iree-opt`), and
runs the module against torch's outputs.
"""

from __future__ import annotations

import re

from ..syntax.resource_section import ir_end

_REFERENCE = re.compile(r'dense_resource<("(?:[^"\\]|\\.)*"|[^>\s]+)>')
_ENTRY = re.compile(r'[ \t]*("(?:[^"\\]|\\.)*"|[\w.$\-]+)[ \t]*:[ \t]*"0x')
ELIDED = "__elided__"


class ResourcesLost(Exception):
    """The lowered text refers to resources that neither it nor the source's section holds."""


def _unquoted(key: str) -> str:
    return key[1:-1] if key.startswith('"') and key.endswith('"') else key


def referenced(text: str, end: int | None = None) -> set[str]:
    """The resource keys `dense_resource<...>` refers to in `text[:end]`, the IR part (not
    `__elided__`)."""
    found = (m.group(1) for m in _REFERENCE.finditer(text, 0, len(text) if end is None else end))
    return {k for k in map(_unquoted, found) if k != ELIDED}


def section_keys(section: str, start: int = 0) -> set[str]:
    """The keys of the `{-# dialect_resources: {...} #-}` section at `section[start:]`, as printed
    (one entry a line: `KEY: "0x..."`; a blob is one line however long, so this walks lines with
    `str.find`, never copying a blob)."""
    keys: set[str] = set()
    pos = start
    while pos < len(section):
        nl = section.find("\n", pos)
        end = len(section) if nl == -1 else nl
        m = _ENTRY.match(section, pos, end)
        if m:
            keys.add(_unquoted(m.group(1)))
        pos = end + 1
    return keys


def missing(lowered: str) -> set[str]:
    """Keys the lowered text refers to without holding their data (empty: nothing to repair)."""
    cut = ir_end(lowered)
    refs = referenced(lowered, cut)
    if not refs:
        return set()
    return refs - section_keys(lowered, cut)


def kept(lowered: str, source: str) -> str:
    """`lowered` with its resources: as it is when it holds every blob it refers to, else with
    the section of `source` (the text that was lowered) appended; ResourcesLost when some
    reference's key is in neither."""
    lost = missing(lowered)
    if not lost:
        return lowered
    cut_low, cut_src = ir_end(lowered), ir_end(source)
    absent = lost - section_keys(source, cut_src)
    if absent:
        names = ", ".join(sorted(absent)[:3]) + (" ..." if len(absent) > 3 else "")
        raise ResourcesLost(f"the lowered IR refers to {len(absent)} resource(s) that the input does not hold "
                            f"({names})")
    return "".join((lowered[:cut_low].rstrip("\n"), "\n\n", source[cut_src:]))  # ir_end: a line start
