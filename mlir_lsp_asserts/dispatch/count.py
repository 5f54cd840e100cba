"""Dispatch counts from the real `iree-compile`, and the what-if count with the fixes applied.

Flow level: `flow.dispatch.workgroups` ops in the `--compile-to=dispatch-creation` output,
split by function and initializer (this is where asserts show: +2 on SDXL's prompt encoder).
Stream level, on request: `dispatch-count` of `--iree-scheduling-dump-statistics-format=json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..iree_flags.flags import FlagReport, target_of, translate
from ..processes import temp_folder
from ..syntax.asserts import is_torch_input  # noqa: F401 - its home is syntax/; preview, diff and the API import it here
from ..syntax.parsed_text import parse
from ..syntax.tokens import SYMBOL
from . import resources
from .attribution import Site, dispatch_sites
from .cache import CountCache
from .compiler import Compiler, CompilerError, Run, first_error, known_flags, parse_diagnostics, release_limit_hint


@dataclass
class Counts:
    flow_dispatches: int
    per_function: dict[str, int]
    stream_dispatches: int | None = None
    seconds: float = 0.0
    dispatches: list[Site] | None = None  # with attribution: see attribution.dispatch_sites
    ir: str | None = None  # the dispatch-creation output in the cache, when kept
    untargeted: list[str] = field(default_factory=list)  # see untargeted_executables

    def as_cached(self) -> dict:
        """The form the cache stores (all but the seconds)."""
        return {"flow_dispatches": self.flow_dispatches, "per_function": self.per_function,
                "stream_dispatches": self.stream_dispatches,
                "dispatches": None if self.dispatches is None else [d.as_json() for d in self.dispatches],
                "ir": self.ir, "untargeted": self.untargeted}

    @classmethod
    def from_cached(cls, hit: dict) -> Counts:
        sites = hit.get("dispatches")
        return cls(hit["flow_dispatches"], hit["per_function"], hit.get("stream_dispatches"), 0.0,
                   None if sites is None else [Site.from_json(d) for d in sites], hit.get("ir"),
                   hit.get("untargeted") or [])


OP_NAME_BEFORE = re.compile(r"(?:=|^)[ \t]*\Z", re.M)


def workgroups_ops(text: str) -> list[tuple[str, int]]:
    """(function or `util.initializer#N`, offset) of every workgroups op of compiler output.

    Compiler output has one op per match where the name stands after `=` (or alone at the
    start of a line), so this needs the top-level structure only, not every function read.
    """
    parsed = parse(text)
    out: list[tuple[str, int]] = []
    initializers = 0
    names: dict[int, str] = {}
    literal = "flow.dispatch.workgroups"
    pos = text.find(literal)
    while pos != -1:
        nxt = text[pos + len(literal):pos + len(literal) + 1]
        line_start = text.rfind("\n", 0, pos) + 1
        before = text[max(line_start, pos - 200):pos]
        if (nxt in ("(", "[", " ", "{") and OP_NAME_BEFORE.search(before)
                and (pos - 200 < line_start or "=" in before)):
            unit = parsed.unit_at(pos)
            if unit is not None:
                top = unit[1]
                key = names.get(id(top))
                if key is None:
                    if top.full_name == "util.initializer":
                        initializers += 1
                        key = f"util.initializer#{initializers}"
                    else:
                        m = SYMBOL.search(text, top.name_start, min(top.end, top.name_start + 2000))
                        key = "@" + m.group(1) if m else top.full_name
                    names[id(top)] = key
                out.append((key, pos))
        pos = text.find(literal, pos + 1)
    return out


UNTARGETED = re.compile(r'#hal\.executable\.target<"([\w-]+)", "[\w-]+">')


def untargeted_executables(ir: str) -> list[str]:
    """Backends of executable targets that came out with no configuration at all: the compiler
    does not know the chip the flags name (IREE 3.13 and `--iree-cuda-target=sm_90`, or a typo
    such as `sm_9999`, which CUDA accepts until codegen fails with "missing GPU target")."""
    return sorted(set(UNTARGETED.findall(ir)))


def untargeted_warning(version: str, flags: list[str], untargeted: list[str]) -> str:
    """What to say when `untargeted_executables` found some."""
    return (f"iree-compile {version} knows no details of the chip these flags name ({target_of(flags)}; "
            f"{', '.join(untargeted)} executables without a configuration): the dispatches are formed without "
            f"them, and a full compile fails (\"missing GPU target\")")


class DispatchCounter:
    """Counts for texts, cached by (compiler version, flags, content hash) in memory and on disk."""

    def __init__(self, compiler: Compiler, timeout: float = 600.0, disk_cache: bool = True,
                 cache: CountCache | None = None):
        self.compiler = compiler
        self.timeout = timeout
        self.cache = cache if cache is not None else CountCache(disk_cache)
        self.runs: list[Run] = []
        self.cancelled = False  # set by cancel_all: new runs are refused until `resume`

    @property
    def disk_cache(self) -> bool:
        return self.cache.disk

    def sibling(self) -> DispatchCounter:
        """A counter with the same compiler and cache but its own runs (cancelled on their own)."""
        return DispatchCounter(self.compiler, self.timeout, cache=self.cache)

    def prepare_flags(self, flags: list[str]) -> FlagReport:
        known = known_flags(self.compiler.path)  # asks the compiler once (then its cache)
        return translate(flags, known)

    def key(self, kind: str, flags: list[str], text: str) -> str:
        """The cache key of `kind` of answer for `text` with this compiler and `flags`."""
        return self.cache.key(kind, self.compiler, flags, text)

    def cancel_all(self) -> None:
        """Kill every run of this counter, and refuse new ones (a what-if still preparing its
        text would otherwise start its compile after the cancel)."""
        self.cancelled = True
        for r in list(self.runs):
            r.cancel()

    def resume(self) -> None:
        """After a `cancel_all`, once its runs are done: the counter serves the next file again."""
        self.cancelled = False

    def _run(self, argv: list[str], files: Mapping[str, Callable[[int], int] | None] | None = None) -> str:
        run = Run(argv, self.timeout)
        self.runs.append(run)
        if self.cancelled:
            run.cancel()  # after the append: a cancel racing with us cannot miss this run
        try:
            code, err = run.run()
        finally:
            self.runs.remove(run)
        if code != 0:
            diags = parse_diagnostics(err, files or {})
            first = next((d for d in diags if d["severity"] == "error"), None)
            where = f" at line {first['line']}" if first and first["line"] else ""
            msg = first["message"] if first else first_error(err) or "no message"
            raise CompilerError(f"iree-compile failed (exit {code}){where}: {msg}{release_limit_hint(msg)}", diags)
        return err

    def _lookup(self, kind: str, flags: list[str], text: str, attribution: bool) -> tuple[str, dict | None]:
        """(key to store under, cached data): a compile with debug info serves plain requests too."""
        key_attr = self.key(kind + ":attr:asserts", flags, text)  # (`:asserts`: sites keep their asserts' lines)
        if attribution:
            return key_attr, self.cache.get(key_attr)
        key = self.key(kind, flags, text)
        hit = self.cache.get(key)
        return key, hit if hit is not None else self.cache.get(key_attr)

    def count(self, text: str, flags: list[str], *, stream: bool = False, compile_from: str | None = None,
              attribution: bool = False, input_path: str | None = None, files: tuple[str, ...] = (),
              line_map: Callable[[int], int] | None = None, need_ir: bool = False) -> Counts:
        """Counts of `text`. `input_path`: a file holding exactly `text` (compiled in place, no copy);
        `attribution`: compile with debug info and keep each dispatch's source locations (in `text`
        and `files`); `line_map`: turns lines of `text` into the user's (for compiler errors)."""
        key, hit = self._lookup(_count_kind(compile_from, stream), flags, text, attribution)
        has_ir = key in self.cache.last_ir or hit is not None and hit.get("ir") and os.path.exists(hit["ir"])
        if hit is not None and (not need_ir or has_ir):
            return Counts.from_cached(hit)
        pre = [f"--compile-from={compile_from}"] if compile_from else []
        if stream and not need_ir:  # the same count without the stream's: its compile is this one's first half
            _flow_key, flow = self._lookup(_count_kind(compile_from, False), flags, text, attribution)
            if flow is not None:
                return self._stream_over(flow, key, text, flags, pre, input_path, files, line_map)
        t0 = time.monotonic()
        with _workdir(text, input_path) as (tmp, src):
            dbg = ["--mlir-print-debuginfo"] if attribution else []
            known = _known(src, line_map, files)
            out, final = self._ir_target(tmp, key)
            try:
                self._run([self.compiler.path, src, *pre, *flags, *dbg, "--compile-to=dispatch-creation", "-o", out],
                          known)
                with open(out, encoding="utf-8", errors="replace") as f:
                    ir = f.read()
                if final is not None:
                    os.replace(out, final)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(out)
                raise
            ops = workgroups_ops(ir)
            per: dict[str, int] = {}
            for k, _pos in ops:
                per[k] = per.get(k, 0) + 1
            sites = dispatch_sites(ir, ops, set(known)) if attribution else None
            stream_count = self._stream_count(tmp, src, pre, flags, known) if stream else None
        if final is None:
            self.cache.keep_ir(key, ir)
        counts = Counts(len(ops), per, stream_count, time.monotonic() - t0, sites,
                        str(final) if final is not None else None, untargeted_executables(ir))
        self.cache.put(key, counts.as_cached())
        if final is not None:
            _prune(final.parent, IR_FILES_KEPT)
        return counts

    def _stream_count(self, tmp: str, src: str, pre: list[str], flags: list[str],
                      known: dict[str, Callable[[int], int] | None]) -> int | None:
        """The dispatches at `--compile-to=stream`, from the compiler's scheduling statistics."""
        stats = os.path.join(tmp, "stats.json")
        self._run([self.compiler.path, src, *pre, *flags, "--compile-to=stream", "-o", os.devnull,
                   "--iree-scheduling-dump-statistics-format=json", f"--iree-scheduling-dump-statistics-file={stats}"],
                  known)
        return _stream_dispatches(stats)

    def _stream_over(self, flow: dict, key: str, text: str, flags: list[str], pre: list[str],
                     input_path: str | None, files: tuple[str, ...], line_map: Callable[[int], int] | None) -> Counts:
        """A stream count over a cached count of the same text and flags (its dispatch-creation
        compile is the one a stream count starts with): only the stream compile runs."""
        t0 = time.monotonic()
        with _workdir(text, input_path) as (tmp, src):
            stream_count = self._stream_count(tmp, src, pre, flags, _known(src, line_map, files))
        cached = {**flow, "stream_dispatches": stream_count}
        self.cache.put(key, cached)
        counts = Counts.from_cached(cached)
        counts.seconds = time.monotonic() - t0
        return counts

    def _ir_target(self, tmp: str, key: str) -> tuple[str, Path | None]:
        """Where the compiler writes its output: into the cache (kept for `dispatch_ir`) when
        there is a disk cache, else the private folder."""
        if self.disk_cache:
            d = self.cache.folder / "ir"
            try:
                d.mkdir(parents=True, exist_ok=True)
                return str(d / f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"), d / f"{key}.mlir"
            except OSError:
                pass
        return os.path.join(tmp, "dispatch-creation.mlir"), None

    def dispatch_ir(self, text: str, flags: list[str], *, attribution: bool = False,
                    input_path: str | None = None) -> tuple[str, str | None]:
        """The `--compile-to=dispatch-creation` output of `text` and its file in the cache (or
        None): from the cache when the count is cached, else compiled now."""
        c = self.count(text, flags, attribution=attribution, input_path=input_path, need_ir=True)
        if c.ir and os.path.exists(c.ir):
            with contextlib.suppress(OSError):
                os.utime(c.ir)  # recently used: kept by the pruning
            with open(c.ir, encoding="utf-8", errors="replace") as f:
                return f.read(), c.ir
        key, _hit = self._lookup(_count_kind(None, False), flags, text, attribution)
        return self.cache.last_ir.get(key, ""), None

    def binary_size(self, text: str, flags: list[str], *, input_path: str | None = None) -> int:
        """The size in bytes of the .vmfb a full compile of `text` with `flags` writes (as
        iree-test-suites' compstat test measures it; minutes for a big model, cached). The
        module holds the source's path as given (its debug locations): it is part of the key."""
        key = self.key(f"vmfb:{input_path or ''}", flags, text)
        hit = self.cache.get(key)
        if hit is not None:
            return int(hit["size"])
        with _workdir(text, input_path) as (tmp, src):
            out = os.path.join(tmp, "module.vmfb")
            self._run([self.compiler.path, src, *flags, "-o", out], {src: None})
            size = os.path.getsize(out)
        self.cache.put(key, {"size": size})
        return size

    def lower_to_input(self, text: str, flags: list[str], input_path: str | None = None) -> str:
        key = self.key("lower-input", flags, text)
        hit = self.cache.get(key)
        if hit is not None:
            return hit["text"]
        with _workdir(text, input_path) as (tmp, src):
            out = os.path.join(tmp, "lowered.mlir")
            self._run([self.compiler.path, src, *flags, "--compile-to=input", "--mlir-print-debuginfo", "-o", out],
                      {src: None})
            with open(out, encoding="utf-8", errors="replace") as f:
                lowered = f.read()
        try:  # IREE 3.8 prints the weights' references without their data: put the input's back
            lowered = resources.kept(lowered, text)
        except resources.ResourcesLost as e:
            raise CompilerError(f"lowering to input: {e}; cannot compile on from it") from None
        self.cache.put(key, {"text": lowered, "input": src})
        return lowered

    def lowered_input_name(self, text: str, flags: list[str]) -> str | None:
        hit = self.cache.get(self.key("lower-input", flags, text))
        return hit.get("input") if hit else None


IR_FILES_KEPT = 24


def _known(src: str, line_map: Callable[[int], int] | None,
           files: tuple[str, ...]) -> dict[str, Callable[[int], int] | None]:
    """The files a compiler error may name: the text's (its lines mapped) and the others it reads."""
    return {src: line_map, **{f: None for f in files}}


def _count_kind(compile_from: str | None, stream: bool) -> str:
    """The cache's kind for a count (the key adds the flags and the text)."""
    return f"count:{compile_from or ''}:{int(stream)}"


def _prune(folder: Path, keep: int) -> None:
    """Keep the `keep` most recently used outputs of the cache's ir/ folder."""
    try:
        files = sorted(folder.glob("*.mlir"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for p in files[keep:]:
        with contextlib.suppress(OSError):
            p.unlink()


@contextlib.contextmanager
def _workdir(text: str, input_path: str | None = None):
    """A private temporary folder, and the input: `input_path` when given (a file that holds
    exactly `text`), else `text` written as input.mlir there; removed afterwards."""
    tmp = temp_folder("count")  # a copy of the text: removed below, or by the next server if we die
    try:
        src = input_path
        if src is None:
            src = os.path.join(tmp, "input.mlir")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
        yield tmp, src
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _stream_dispatches(path: str) -> int | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    agg = data.get("stream-aggregate", data) if isinstance(data, dict) else {}
    return agg.get("execution", {}).get("dispatch-count")
