"""The language server front end (pygls). Handlers only translate to and from the core.

`app` (pygls and every feature) is imported on first use, so that `server.options` (the
settings tree, for `mlir-lsp --show-settings`) is cheap to import."""


def run_server(tcp: str | None = None) -> int:
    from .app import run_server as run

    return run(tcp)


def __getattr__(name: str):
    if name == "server":
        from .app import server

        return server
    raise AttributeError(name)


__all__ = ["run_server", "server"]
