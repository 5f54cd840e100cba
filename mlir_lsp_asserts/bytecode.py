"""MLIR bytecode (`.mlirbc`): its textual form without the weights, and fixed text written back
as bytecode that keeps every weight byte for byte.

An export whose weights are not externalized holds each one as `dense_resource<NAME>`, the bytes
in the file's resource section (hundreds of MB). The text made here leaves those bytes out (and
inline `dense<...>` literals of more than ELEMENTS_LIMIT elements, which print as
`dense_resource<__elided__>`); a comment at its end says what was left out. Every op keeps its
line, as when the resources were printed after the IR.

Writing back: the fixed text's resource references have no data, so the bytecode file is parsed
again in the same context, and each such attribute of the fixed module is replaced with the
original's attribute (the fixes remove or add only assert-related ops, which hold no tensor
constants). That work runs in a child process: the caller never holds the module, and a crash
of the MLIR writer is an error, not the end of the caller. The file is replaced atomically.

Uses the real parser of iree-base-compiler, imported only here (it costs ~0.2 s).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from typing import Any

from .errors import SourceError
from .files import write_atomic
from .iree_release import printer_elides_resources
from .syntax.locations import blank_locations

RESOURCE_LIMIT = 0  # bytes: no dialect resource blob is printed
ELEMENTS_LIMIT = 1 << 16  # elements: an inline dense literal above it prints as dense_resource<__elided__>
ELIDED = "__elided__"
NOTE_PREFIX = "// mlir-lsp: "

# What the printer leaves at the end once every resource blob is elided.
_EMPTY_SECTION = re.compile(r"\n*\{-#\s*#-\}\s*\Z")
# The whole resource section, as a printer that cannot elide blobs (IREE 3.3's) leaves it.
_RESOURCE_SECTION = re.compile(r"\n*\{-#\s*dialect_resources:.*#-\}\s*\Z", re.S)
_RESOURCE_REF = re.compile(r'dense_resource<("(?:[^"\\]|\\.)*"|[^>]*)>\s*:\s*(?:tensor|vector)<([^<>]*)>')
_ELEMENT_BITS = re.compile(r"^(?:[su]?i|bf|tf|f)(\d+)")
_CHILD_ERROR = "mlir-lsp-bytecode-error: "


def _ir():
    from iree.compiler import ir

    return ir


def new_context():
    """A context as every bytecode reader here uses: all IREE dialects, unregistered ones allowed."""
    ctx = _ir().Context()
    ctx.allow_unregistered_dialects = True
    return ctx


def _message(e: Exception) -> str:
    """The parser's message (MLIRError and friends) on one line."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return " ".join(lines[:3]) or type(e).__name__


def parse_bytecode(data_or_path, ctx):
    """The module of a bytecode file (a path: parsed from the file, whose weights MLIR then reads
    in place) or of bytes; SourceError when MLIR cannot read it."""
    ir = _ir()
    try:
        if isinstance(data_or_path, (str, os.PathLike)):
            return ir.Module.parseFile(os.fspath(data_or_path), ctx)
        return ir.Module.parse(bytes(data_or_path), ctx)
    except Exception as e:  # noqa: BLE001 - MLIRError and friends: the parser's own message
        raise SourceError("cannot read MLIR bytecode: " + _message(e)) from None


# -- bytecode -> text -----------------------------------------------------------------------
def bytecode_to_text(data_or_path, *, weights: bool = False) -> str:
    """The textual form of a bytecode file (a path) or of bytes, with its debug locations
    (`loc(...)`), without resource blobs and very large dense literals (a comment at the end says
    what is not shown); with `weights`, the text the compiler compiles: everything but the debug
    locations (blanked, every op on its line: the compile's own locations are then the lines of
    this text, which the dispatch attribution follows back)."""
    module = parse_bytecode(data_or_path, new_context())
    return printed(module, weights=weights)


def printed(module, *, weights: bool = False) -> str:
    if weights:
        return blank_locations(module.operation.get_asm(enable_debug_info=True, assume_verified=True))
    if printer_elides_resources():
        text = module.operation.get_asm(enable_debug_info=True, assume_verified=True,
                                        large_resource_limit=RESOURCE_LIMIT, large_elements_limit=ELEMENTS_LIMIT)
    else:  # an older release's printer writes every blob out: the section is cut here
        text = module.operation.get_asm(enable_debug_info=True, assume_verified=True,
                                        large_elements_limit=ELEMENTS_LIMIT)
        section = _RESOURCE_SECTION.search(text)
        text = text[:section.start()] + "\n" if section else text
    note = elision_note(text)
    if not note:
        return text
    section = _EMPTY_SECTION.search(text)
    if section:
        text = text[:section.start()]
    return text.rstrip("\n") + "\n\n" + note + "\n"


def weights_left_out(text: str) -> bool:
    """Whether `text` is a bytecode file's text that `printed` left weights out of (its last lines
    say so): the compiler cannot compile it."""
    return NOTE_PREFIX in text[-1000:]


def _bytes_of(shape_and_element: str) -> int | None:
    """Bytes of a static tensor/vector type body (`77x768xf16`) as a resource blob holds them."""
    *dims, element = shape_and_element.replace(" ", "").split("x")
    n = 1
    for d in dims:
        if not d.isdigit():
            return None
        n *= int(d)
    m = _ELEMENT_BITS.match(element)
    if element == "index":
        bits = 64
    elif m:
        bits = int(m.group(1))
    else:
        return None
    return n * max(1, (bits + 7) // 8)  # i1 (and sub-byte floats) take a byte each


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB"


def elision_note(text: str) -> str:
    """The comment lines saying what `printed` left out of `text` ("" when nothing was)."""
    blobs: dict[str, int] = {}
    elided, elided_bytes = 0, 0
    for m in _RESOURCE_REF.finditer(text):
        size = _bytes_of(m.group(2)) or 0
        if m.group(1) == ELIDED:
            elided += 1
            elided_bytes += size
        else:
            blobs[m.group(1)] = size
    lines = []
    if blobs:
        n = len(blobs)
        lines.append(f"{NOTE_PREFIX}{n} dialect resource{'s' if n != 1 else ''} ({_mb(sum(blobs.values()))}) "
                     "not shown; the bytecode file keeps them")
    if elided:
        lines.append(f"{NOTE_PREFIX}{elided} dense literal{'s' if elided != 1 else ''} of more than "
                     f"{ELEMENTS_LIMIT} elements ({_mb(elided_bytes)}) shown as {ELIDED}; "
                     "the bytecode file keeps them")
    return "\n".join(lines)


# -- fixed text -> bytecode -----------------------------------------------------------------
def write_fixed_bytecode(src_path: str, fixed_text: str, dest_path: str) -> None:
    """Write the bytecode of `fixed_text` (the text `bytecode_to_text` gave for `src_path`, fixed)
    to `dest_path` (an existing file: it keeps its mode), every resource and elided literal taken
    byte for byte from `src_path`. Runs in a child process; SourceError with its message when it
    fails or crashes, and then `dest_path` is unchanged."""
    _in_child("writer", "child_main", [os.fspath(src_path), os.fspath(dest_path)],
              fixed_text.encode("utf-8", "surrogatepass"))


def bytecode_to_text_in_child(path: str, *, weights: bool = False) -> str:
    """`bytecode_to_text` of a bytecode file, run in a child process: a server keeps MLIR off its
    own threads (the parse holds the GIL: a 246 MB file for about a second), and a crash of the
    reader is a SourceError, not the end of the server."""
    out = _in_child("reader", "text_child_main", [os.fspath(path), "weights" if weights else "ir"], b"")
    return out.decode("utf-8", "surrogatepass")


def _in_child(role: str, entry: str, args: list[str], data: bytes) -> bytes:
    """Run `entry(*args)` of this module in a child Python, `data` on its stdin: its stdout, or a
    SourceError with the child's own message (or how it crashed)."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-c", f"from mlir_lsp_asserts.bytecode import {entry}; {entry}()", *args]
    try:
        r = subprocess.run(cmd, input=data, capture_output=True, env=env, check=False)
    except OSError as e:
        raise SourceError(f"cannot start the bytecode {role}: {e.strerror or e}") from None
    if r.returncode == 0:
        return r.stdout
    stderr = r.stderr.decode("utf-8", "replace")
    ours = [ln[len(_CHILD_ERROR):] for ln in stderr.splitlines() if ln.startswith(_CHILD_ERROR)]
    if ours:
        raise SourceError(ours[-1])
    if r.returncode < 0:
        try:
            how = signal.Signals(-r.returncode).name
        except ValueError:
            how = f"signal {-r.returncode}"
        raise SourceError(f"the bytecode {role} crashed ({how})")
    last = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    raise SourceError(f"the bytecode {role} failed (exit {r.returncode}{': ' + last[-1] if last else ''})")


def text_child_main() -> None:
    """Child mode of `bytecode_to_text_in_child`: the text on stdout."""
    path, what = sys.argv[1], sys.argv[2]
    try:
        text = bytecode_to_text(path, weights=what == "weights")
    except SourceError as e:
        _child_fail(str(e))
    except MemoryError:
        _child_fail("out of memory while reading the bytecode")
    except Exception as e:  # noqa: BLE001 - one line for the caller, whatever it was
        _child_fail(f"the bytecode reader failed ({type(e).__name__}: {str(e)[:200]})")
    sys.stdout.buffer.write(text.encode("utf-8", "surrogatepass"))


def child_main() -> None:
    src_path, dest_path = sys.argv[1], sys.argv[2]
    fixed_text = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    try:
        _write_fixed(src_path, fixed_text, dest_path)
    except SourceError as e:
        _child_fail(str(e))
    except OSError as e:
        _child_fail(f"cannot write {dest_path}: {e.strerror or e}")
    except MemoryError:
        _child_fail("out of memory while writing the bytecode")
    except Exception as e:  # noqa: BLE001 - one line for the caller, whatever it was
        _child_fail(f"the bytecode writer failed ({type(e).__name__}: {str(e)[:200]})")


def _child_fail(msg: str) -> None:
    print(_CHILD_ERROR + " ".join(msg.split()), file=sys.stderr)
    sys.exit(1)


def _write_fixed(src_path: str, fixed_text: str, dest_path: str) -> None:
    ctx = new_context()
    original = parse_bytecode(src_path, ctx)  # first: its resources keep their names
    try:
        fixed = _ir().Module.parse(fixed_text, ctx)
    except Exception as e:  # noqa: BLE001
        raise SourceError("cannot turn the fixed text back into bytecode: " + _message(e)) from None
    references = sum(ln.count("dense_resource<") for ln in fixed_text.splitlines() if not ln.lstrip().startswith("//"))
    restore_constants(original, fixed, references)
    write_atomic(dest_path, fixed.operation.write_bytecode)


class _Kinds:
    """Which attributes are tensor constants (dense, sparse, resource), by type id."""

    def __init__(self, ctx):
        ir = _ir()
        with ctx:
            self.resource = ir.Attribute.parse("dense_resource<__mlir_lsp_probe__> : tensor<1xi8>").typeid
            self.sparse = ir.Attribute.parse("sparse<[[0]], [1]> : tensor<2xi8>").typeid
        self._dense, self._resource, self._plain = ir.DenseElementsAttr, ir.DenseResourceElementsAttr, ir.Attribute

    def is_resource(self, attr) -> bool:
        if isinstance(attr, self._resource):  # bindings that downcast it
            return True
        return type(attr) is self._plain and attr.typeid == self.resource

    def constant(self, attr) -> bool:
        if isinstance(attr, (self._dense, self._resource)):
            return True
        if type(attr) is not self._plain:  # another downcast kind (StringAttr, ...)
            return False
        tid = attr.typeid
        return tid == self.resource or tid == self.sparse


def _constants(module, kinds: _Kinds) -> list[tuple[Any, str, Any]]:
    """(op, attribute name, attribute) of every top-level tensor-constant attribute, ops in order.
    Ops and attributes are MLIR's `ir.Operation` and `ir.Attribute`, which ship no type stubs."""
    ir = _ir()
    found = []

    def visit(op):
        attributes = op.attributes  # by index: IREE 3.8's map has no items(), 3.13's iterates names
        for i in range(len(attributes)):
            named = attributes[i]
            if kinds.constant(named.attr):
                found.append((op, named.name, named.attr))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def restore_constants(original, fixed, references: int) -> int:
    """Give each tensor constant of `fixed` (parsed from the text of `original`, in the same
    context) that differs from the original's the original's attribute: resources with their
    data, elided literals with their values. `references` is how many `dense_resource<` the fixed
    text holds: each must be a top-level attribute, or its data could not be carried over.
    Returns how many attributes were restored."""
    kinds = _Kinds(original.context)
    old, new = _constants(original, kinds), _constants(fixed, kinds)
    if len(old) != len(new):
        raise SourceError(f"the fixed text has {len(new)} tensor constants where the bytecode file has {len(old)}; "
                          "cannot carry its weights over")
    restored = resources = 0
    for (op_a, name_a, a), (op_b, name_b, b) in zip(old, new, strict=True):
        b_is_resource = kinds.is_resource(b)
        resources += b_is_resource
        if a == b:
            continue
        if not b_is_resource or name_a != name_b or op_a.name != op_b.name or a.type != b.type:
            raise SourceError(f"the fixed text's {op_b.name} {name_b} does not match the bytecode file's "
                              f"{op_a.name} {name_a}; cannot carry its weights over")
        op_b.attributes[name_b] = a
        restored += 1
    if resources != references:
        raise SourceError(f"{references - resources} dense_resource references are inside other attributes; "
                          "cannot carry their data over")
    return restored

