"""Files: finding MLIR files under paths, reading them, writing fixed text atomically."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

MLIR_SUFFIXES = (".mlir", ".mlirbc")


# A JSON file we read (a baseline, compstat's, `--check`'s results) above this is refused.
JSON_MAX_BYTES = 128 << 20


def load_json(path: str, error: type[Exception], missing: str, what: str = "", regular_only: bool = False) -> object:
    """The JSON in the file at `path`; `error` raised with a one-line message when it is not
    there (`path: missing`) or cannot be read (`path: cannot read WHAT: why`). A folder is
    refused, and so is anything above JSON_MAX_BYTES (a link to /dev/zero: read up to the bound,
    no further). With `regular_only` (a path from settings a cloned repository may have written)
    anything but a regular file is refused unread: a fifo would hang the reader. Without it a
    pipe is read (`--baseline <(git show main:counts.json)` on the command line)."""
    import json

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a fifo's open does not wait
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise OSError("a folder")
            if not stat.S_ISREG(st.st_mode):
                if regular_only:
                    raise OSError("not a regular file")
                import fcntl

                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~getattr(os, "O_NONBLOCK", 0))
            elif st.st_size > JSON_MAX_BYTES:
                raise OSError(f"{st.st_size:,} bytes, above the {JSON_MAX_BYTES >> 20} MiB such a file may have")
        except BaseException:
            os.close(fd)
            raise
        with open(fd, "rb") as f:
            data = f.read(JSON_MAX_BYTES + 1)
        if len(data) > JSON_MAX_BYTES:
            raise OSError(f"more than the {JSON_MAX_BYTES >> 20} MiB such a file may have")
        return json.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {missing}") from None
    except (OSError, ValueError, RecursionError) as e:
        raise error(f"{path}: cannot read{' ' + what if what else ''}: {e}") from None


def discover(paths: list[str], exclude: tuple[str, ...] = (),
             force_exclude: bool = False) -> tuple[list[str], list[str]]:
    """Files to check under `paths` and messages about paths that gave none. The `exclude`
    patterns apply to the folder walk; with `force_exclude` to files named in `paths` too (as
    ruff's `--force-exclude`, for pre-commit, which names every staged file).

    The folder walk keeps regular files only: a symlink whose target is outside the folder walked
    (a cloned repository's `model.mlir -> /etc/...` or `-> ~/elsewhere/...`), a link to a device
    (`zero.mlir -> /dev/zero`), a fifo or a socket is skipped, silently; a link that stays inside
    is kept. A file named in `paths` is taken as named: a link is followed (as ruff does), and
    `source.read_source` says what it is when it is not a file it can read."""
    files: list[str] = []
    problems: list[str] = []
    exclude = tuple(os.path.normpath(pat) for pat in exclude)  # `./gen/*` is `gen/*`, as paths are
    for p in paths:
        if p == "-":
            files.append(p)
            continue
        if os.path.isdir(p):  # os.path, not pathlib: a check's start-up does not import it (config.py)
            found = []
            top = os.path.realpath(p)
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs
                                 if not d.startswith(".") and not _excluded(os.path.join(root, d), exclude))
                for n in sorted(names):
                    full = os.path.join(root, n)
                    if n.endswith(MLIR_SUFFIXES) and not _excluded(full, exclude) and _walk_keeps(full, top):
                        found.append(full)
            if not found:
                problems.append(f"{p}: no .mlir or .mlirbc files found")
            files.extend(found)
        elif os.path.exists(p):
            if not (force_exclude and _excluded(p, exclude)):
                files.append(p)
        else:
            problems.append(f"{p}: no such file or directory")
    return files, problems


def _walk_keeps(path: str, top: str) -> bool:
    """Whether the folder walk of `top` (a real path) keeps `path`: a regular file, reached through
    no link or through links that stay inside `top`."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            if not _inside(os.path.realpath(path), top):
                return False
            st = os.stat(path)
    except OSError:  # gone, or a link to nothing
        return False
    return stat.S_ISREG(st.st_mode)


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def walk_skips(path: str, tops: list[str]) -> bool:
    """Whether the folder walk of `tops` (real paths) skips `path`, a file a watcher saw change:
    it is there but not a regular file inside them (a link out, a device, a fifo). A path that is
    gone is not skipped: its findings are to be cleared."""
    if not os.path.lexists(path):
        return False
    real = os.path.realpath(path)
    return not any(_inside(real, top) and _walk_keeps(path, top) for top in tops)


def excluded_by_config(path: str, config: str, exclude: tuple[str, ...]) -> bool:
    """Whether the config file `config`'s `exclude` patterns take `path` out as `mlir-lsp --check
    .` run in the config's folder (CI, pre-commit) takes it out: the walk matches each folder on
    the way and then the file, each as `./a/b`, `a/b` and its name (`discover`); an absolute
    pattern matches as under `mlir-lsp --check $PWD`."""
    if not exclude:
        return False
    patterns = tuple(os.path.normpath(p) for p in exclude)
    top = os.path.dirname(os.path.realpath(config))
    rel = os.path.relpath(os.path.realpath(path), top)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return False
    parts = rel.split(os.sep)
    for i in range(1, len(parts) + 1):
        sub = os.path.join(*parts[:i])
        if _excluded(os.path.join(os.curdir, sub), patterns) or _excluded(os.path.join(top, sub), patterns):
            return True
    return False


def _excluded(path: str, exclude: tuple[str, ...]) -> bool:
    """Whether a (normalised) pattern matches the path as given, as normalised (`./a/b.mlir` is
    `a/b.mlir`), or its file name."""
    forms = {path, os.path.normpath(path), os.path.basename(path)}
    return any(fnmatch.fnmatch(form, pat) for pat in exclude for form in forms)


def file_stamp(path: str) -> tuple[int, int, int]:
    """What tells that a file changed on disk between a read and a write (size, time, inode)."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


TMP_SUFFIX = ".mlir-lsp.tmp"


def write_atomic(path: str, data: bytes | Callable[[BinaryIO], None],
                 copy_from: tuple[str, int, int] | None = None) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename.
    `data` may be a function that writes the content into the file object it is given (a
    writer that streams, e.g. MLIR's bytecode writer); what it raises leaves `path` unchanged.

    With `copy_from=(file, start, end)`, bytes [start, end) of that file follow `data` (it may be
    `path` itself: the old file stays whole until the rename). The kernel copies them
    (copy_file_range / sendfile), so a 490 MB resource section never passes through Python.

    `path` must exist (FileNotFoundError: a file removed meanwhile is not made again; see
    `write_new_or_atomic`), and it keeps its mode. A crash at any point leaves either the old or
    the new content.
    On Linux the data goes into an unnamed file (O_TMPFILE), which gets a name only once it is
    complete and synced, just before the rename: a process killed while writing leaves nothing
    behind. The one file a kill can leave (between that link and the rename, or on systems
    without O_TMPFILE) is named `.NAME.PID.*.mlir-lsp.tmp`; the next write of the same file
    removes such leftovers of processes that are gone.
    """
    from pathlib import Path  # here: a check writes nothing

    _write_atomic(Path(path), data, copy_from, Path(path).stat().st_mode & 0o7777)


def write_new_or_atomic(path: str | Path, data: bytes) -> None:
    """`write_atomic`, also for a file that does not exist yet: it gets the mode a plain `open()`
    gives (0666 less the umask), and appears only whole. Raises OSError."""
    from pathlib import Path

    target = Path(path)
    _write_atomic(target, data, None, output_mode(target))


def _write_atomic(target: Path, data: bytes | Callable[[BinaryIO], None],
                  copy_from: tuple[str, int, int] | None, mode: int) -> None:
    _remove_stale_temps(target)
    fd = _unnamed_file(target.parent, mode)
    if fd is not None:
        try:
            _write_all(fd, data, copy_from)
            os.fchmod(fd, mode)
            tmp = _temp_name(target)
            _link_unnamed(fd, tmp)
        finally:
            os.close(fd)
    else:
        import tempfile  # here: a check writes nothing (tempfile imports shutil, random...)

        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TMP_SUFFIX, dir=target.parent)
        try:
            _write_all(fd, data, copy_from)
        except BaseException:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
        os.close(fd)
    _rename_over(tmp, target, mode)


@contextlib.contextmanager
def written_whole(path: str) -> Iterator[str]:
    """A temporary name beside `path` for another program to write into (the compiler's `-o`):
    when the block ends without an exception it is renamed over `path` with the mode
    `write_atomic` gives (an existing file's, or what a plain `open()` gives); else it is removed,
    and `path` is as it was. Raises OSError when no file can be made beside `path`."""
    from pathlib import Path

    target = Path(path)
    _remove_stale_temps(target)
    tmp = _temp_name(target)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    try:
        yield tmp
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _rename_over(tmp, target, output_mode(target))


def check_writable(path: str) -> None:
    """Raises OSError (naming `path`) when a file cannot be written there: its folder is missing
    or cannot be written in, or `path` is a folder. Tried by making and removing a file beside it,
    so that long work that ends in writing `path` fails before it starts, not after."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    tmp = _temp_name(target)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as e:
        raise type(e)(e.errno, e.strerror, path) from None
    os.unlink(tmp)


def output_mode(target: Path) -> int:
    """The mode a write of `target` gives it: an existing file's own, else what a plain `open()`
    would give a new one (0666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for every thread
    for a moment): /proc/self/status on Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temp_name(target: Path) -> str:
    return str(target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}")


def _rename_over(tmp: str, target: Path, mode: int) -> None:
    try:
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unnamed_file(folder: Path, mode: int) -> int | None:
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY, mode)
    except OSError:  # a file system without O_TMPFILE support
        return None


def _link_unnamed(fd: int, name: str) -> None:
    """Give the O_TMPFILE file a name: linkat(/proc/self/fd/N, AT_SYMLINK_FOLLOW). Through a
    dir fd, because os.link without one calls link(2), which links the /proc symlink itself."""
    procfd = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(str(fd), name, src_dir_fd=procfd, follow_symlinks=True)
    finally:
        os.close(procfd)


def _write_all(fd: int, data: bytes | Callable[[BinaryIO], None],
               copy_from: tuple[str, int, int] | None = None) -> None:
    if callable(data):
        with os.fdopen(fd, "wb", closefd=False) as f:
            data(f)
    else:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    if copy_from is not None:
        _copy_range(fd, *copy_from)
    os.fsync(fd)


def _copy_range(out_fd: int, path: str, start: int, end: int) -> None:
    """Append bytes [start, end) of `path` to `out_fd`, in the kernel where it can."""
    with open(path, "rb", buffering=0) as src:
        pos = start
        copy = getattr(os, "copy_file_range", None)
        while pos < end:
            n = 0
            if copy is not None:
                try:
                    n = copy(src.fileno(), out_fd, end - pos, pos)
                except OSError:  # across file systems on old kernels, or not supported
                    copy = None
                    continue
            else:
                n = os.sendfile(out_fd, src.fileno(), pos, min(end - pos, 1 << 30))
            if n == 0:
                raise OSError(f"{path} is shorter than expected ({pos} of {end} bytes)")
            pos += n


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_stale_temps(target: Path) -> None:
    """Leftover temporary files of `target` whose writing process no longer runs."""
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and n.endswith(TMP_SUFFIX)]
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        _unlink_quietly(str(target.parent / n))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
