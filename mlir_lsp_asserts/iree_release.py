"""Which IREE release is in play, and what an older one lacks.

Two releases matter and they may differ: the bindings (`iree.compiler.ir`, the real parser and
the bytecode reader and writer) of the iree-base-compiler installed in this Python, and the
`iree-compile` that a dispatch count runs (beside this Python, or a configured path). Supported:
OLDEST_SUPPORTED up to the newest release (docs/compatibility.md says what degrades on which).

What differs between the supported releases is detected here, by probing the bindings, never by
the version number alone: the code that needs a feature asks this module once.
"""

from __future__ import annotations

import functools

from .records import NamedTuple

OLDEST_SUPPORTED = (3, 3)
DOCS = "docs/compatibility.md"


class Release(NamedTuple):  # ordered as (major, minor, patch)
    """An IREE release: major.minor.patch."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse_release(version: str) -> Release | None:
    """The release of a version string as pip or `iree-compile --version` give it
    (`3.13.0`, `3.3.0rc20250320`), or None."""
    numbers = _first_dotted_numbers(version or "")
    return Release(*numbers) if numbers else None


def _first_dotted_numbers(text: str) -> tuple[int, ...]:
    """The numbers of the first `N.N` or `N.N.N` in `text` (digits as `re`'s `\\d`: decimal
    ones), as `re.search(r"(\\d+)\\.(\\d+)(?:\\.(\\d+))?", text)` finds them, without importing re
    (`--version` starts without it); () when there is none."""
    n, i = len(text), 0
    while i < n:
        if not text[i].isdecimal():
            i += 1
            continue
        numbers, j = [], i
        while True:  # a run of digits, then a dot and more digits, up to three runs
            k = j
            while k < n and text[k].isdecimal():
                k += 1
            numbers.append(int(text[j:k]))
            if len(numbers) == 3 or k + 1 >= n or text[k] != "." or not text[k + 1].isdecimal():
                break
            j = k + 1
        if len(numbers) >= 2:
            return tuple(numbers)
        i = k + 1  # a run with no `.N` after it: none starts inside it either
    return ()


@functools.lru_cache(maxsize=1)
def bindings_release() -> Release | None:
    """The release of the iree-base-compiler installed in this Python (None: not installed)."""
    found = _dist_info_version("iree_base_compiler")
    if found is not None:
        return parse_release(found)
    from importlib import metadata  # an egg-info or another layout: its full lookup (~10 ms of imports)

    try:
        return parse_release(metadata.version("iree-base-compiler"))
    except metadata.PackageNotFoundError:
        return None


def _dist_info_version(name: str) -> str | None:
    """The `Version:` of the first `NAME-*.dist-info` on sys.path, as `importlib.metadata.version`
    finds it (pip's installs: a wheel's, an editable one's), without importing importlib.metadata
    (email, zipfile, csv ...: `mlir-lsp --version` is meant to start in tens of ms). None: no such
    folder, or one that does not say (the caller asks importlib.metadata then)."""
    import os
    import sys

    prefix = name.lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for child in names:
            low = child.lower()
            if not low.startswith(prefix) or not low.endswith((".dist-info", ".egg-info")):
                continue
            if low.endswith(".egg-info"):
                return None  # importlib.metadata reads those
            try:
                with open(os.path.join(entry or ".", child, "METADATA"), encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break  # the end of the headers
            except OSError:
                pass
            return None
    return None


def unsupported_message(release: Release | None, what: str = "iree-base-compiler") -> str | None:
    """One line saying why `release` cannot be used, or None when it is supported."""
    if release is None:
        return f"{what} is not installed in this Python ({DOCS})"
    if (release.major, release.minor) < OLDEST_SUPPORTED:
        oldest = ".".join(map(str, OLDEST_SUPPORTED))
        return f"{what} {release} is older than {oldest}, the oldest release mlir-lsp supports ({DOCS})"
    return None


def compiler_message(version: str) -> str | None:
    """`unsupported_message` for an iree-compile that reported `version` (None as well for a
    version this module cannot read: a development build is given the benefit of the doubt)."""
    release = parse_release(version)
    return unsupported_message(release, "iree-compile") if release else None


# -- features of the bindings ------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def printer_elides_resources() -> bool:
    """Whether the bindings' printer can leave dialect resource blobs out (`get_asm`'s
    `large_resource_limit`, in 3.8 but not in 3.3): without it the blobs are printed and cut
    from the text afterwards, which costs memory of twice the weights' size for a moment."""
    from iree.compiler import ir

    return "large_resource_limit" in (ir.Operation.get_asm.__doc__ or "")

