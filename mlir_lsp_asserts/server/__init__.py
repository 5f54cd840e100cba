"""The language server front end (pygls). Handlers only translate to and from the core.

`app` (pygls and every feature) is imported on first use, so that `server.options` (the
settings tree, for `mlir-lsp --show-settings`) is cheap to import. On stdio the server starts
with `early_start` (the first answers before pygls is imported), which imports `app` in a
thread of its own and then hands over to it."""


def run_server(tcp: str | None = None) -> int:
    if tcp:
        from .app import run_server as run

        return run(tcp)
    from .early_start import serve

    return serve(_load_app)


def _load_app():
    """The pygls server's entry, imported (early_start runs this in its import thread)."""
    from .app import run_server as run

    return run


def __getattr__(name: str):
    if name == "server":
        from .app import server

        return server
    raise AttributeError(name)


__all__ = ["run_server", "server"]
