"""The one reader of a request's params and a command's arguments."""

from __future__ import annotations

from typing import Any

# The fields read from any other object with attributes.
FIELDS = ("uri", "select", "line", "open", "force", "mode", "unsafe")


def command_arguments(params: Any) -> dict:
    """A request's params (`{"uri": ...}`) or a command's arguments (`[uri]` or `[{"uri": ...}]`)
    as a dict."""
    if hasattr(params, "_asdict"):  # pygls's object for params of a method it has no type for
        return dict(params._asdict())
    if isinstance(params, (list, tuple)):
        params = params[0] if params else None
    if isinstance(params, str):
        return {"uri": params}
    if isinstance(params, dict):
        return params
    return {k: getattr(params, k) for k in FIELDS if hasattr(params, k)}
