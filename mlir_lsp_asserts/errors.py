"""The error of input that cannot be checked (source.py and bytecode.py raise it)."""

from __future__ import annotations


class SourceError(Exception):
    """The input cannot be checked; the message says why in one line."""
