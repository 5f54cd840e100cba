"""The language server front end (pygls). Handlers only translate to and from the core."""

from .app import run_server, server

__all__ = ["run_server", "server"]
