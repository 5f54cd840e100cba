"""Per-document analysis state: the text, its check result, for the version it was made for."""

from __future__ import annotations

from dataclasses import dataclass

from ..check import CheckResult, check_text
from ..config import Settings
from ..source import SourceError, decode


@dataclass
class Analysis:
    uri: str
    version: int | None
    text: str
    result: CheckResult
    error: str | None = None


def analyse(uri: str, version: int | None, text: str, settings: Settings) -> Analysis:
    if "\x00" in text[:65536]:
        try:
            decode(text.encode("utf-8", "surrogatepass"))
        except SourceError as e:
            empty = check_text("", settings)
            return Analysis(uri, version, text, empty, error=str(e))
    return Analysis(uri, version, text, check_text(text, settings))
