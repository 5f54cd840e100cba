"""What a rule is: a code, a name, a default severity, a doc page, and a check on one assert."""

from __future__ import annotations

import functools
import os

from ..iree_flags.strip_assertions import StripDecision
from ..kinds import Severity
from ..records import record

# typing's TYPE_CHECKING (mypy reads it so), without importing typing: `mlir-lsp --explain` loads
# the rules and none of typing, re or contextlib (a fifth of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:  # the rules' metadata (--explain) needs no reader
    from collections.abc import Callable
    from pathlib import Path

    from ..syntax.op_tree import Op

# One page per rule code, installed with the package (package data), so links work offline and
# for every installed version: `mlir-lsp --explain CODE` prints a page.
DOCS_FOLDER = os.path.join(os.path.dirname(os.path.realpath(__file__)), "docs")


def __getattr__(name: str) -> Path:
    """`DOCS_DIR`: `DOCS_FOLDER` as a Path, made when asked (`--explain` starts without pathlib)."""
    if name == "DOCS_DIR":
        from pathlib import Path

        return Path(DOCS_FOLDER)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache  # a finding each: a path made into a URI costs more than the rest of a small check
def doc_url(code: str, base: str | None = None) -> str:
    """Link to a rule's page: under `base` (setting docsBaseUrl / docs-base-url) when given,
    else a file:// URI of the page installed with the package."""
    if base:
        return f"{base.rstrip('/')}/{code}.md"
    return file_uri(os.path.join(DOCS_FOLDER, f"{code}.md"))


# What `urllib.parse.quote` leaves as it is in a path (its always-safe bytes, and `/`).
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def file_uri(path: str) -> str:
    """The file:// URI of an absolute, normalised path, as `pathlib.Path(path).as_uri()` makes it
    (each byte of the path's file-system encoding outside `_URI_SAFE` percent-encoded), without
    importing pathlib and urllib.parse: ~6 ms of a small file's `--check`."""
    return "file://" + "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in os.fsencode(path))


@record(frozen=True, slots=True)
class Placement:
    """Why a rule matched: the ancestor op it is about (or None) and a sentence of reason."""

    related: Op | None
    reason: str


@record(frozen=True, slots=True)
class Rule:
    """A rule: its code, name, default severity, summary, and how it classifies an assert (one
    object per rule, in `RULES`)."""

    code: str
    name: str
    severity: Severity
    summary: str
    # Returns a Placement when this rule owns the assert `op`, else None.
    match: Callable[[Op], Placement | None]
    # Whether stripping the assert keeps every observable behaviour (see the rule's page in docs/).
    strip_is_safe: bool
    # What a finding adds when the flags the project compiles with make IREE strip the assert
    # itself (`--iree-opt-level=O1` and up), and the severity it then has (None: its own).
    when_stripped: Callable[[StripDecision], str] | None = None
    stripped_severity: Severity | None = None

    def __repr__(self) -> str:
        return f"Rule({self.code} {self.name})"

    @property
    def doc_url(self) -> str:
        return doc_url(self.code)
