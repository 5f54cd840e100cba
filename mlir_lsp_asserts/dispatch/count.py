"""Dispatch counts from the real `iree-compile`, and the what-if count with the fixes applied.

Flow level: `flow.dispatch.workgroups` ops in the `--compile-to=dispatch-creation` output,
split by function and initializer (this is where asserts show: +2 on SDXL's prompt encoder).
Stream level, on request: `dispatch-count` of `--iree-scheduling-dump-statistics-format=json`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..rules.mla004_torch_op_lowers_to_assert import trace_asserts
from ..syntax.parsed_text import parse
from .attribution import LineMap, describe, dispatch_sites, only_because_of_asserts
from .compiler import (
    Compiler,
    CompilerError,
    Run,
    _first_error,
    cache_root,
    known_flags,
    parse_diagnostics,
)
from .flags import FlagReport, target_of, translate

SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


@dataclass
class Counts:
    flow_dispatches: int
    per_function: dict[str, int]
    stream_dispatches: int | None = None
    seconds: float = 0.0
    dispatches: list[dict] | None = None  # with attribution: see attribution.dispatch_sites
    ir: str | None = None  # the dispatch-creation output in the cache, when kept
    untargeted: list[str] = field(default_factory=list)  # see untargeted_executables


@dataclass
class Preview:
    path: str
    profile: str
    compiler_version: str
    flow_dispatches: int
    stream_dispatches: int | None
    per_function: dict[str, int]
    what_if: dict | None
    seconds: float
    assert_sources: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    attribution: dict | None = None  # {"dispatches": [{name, function, location, sources}], "source_ops"}

    def as_json(self) -> dict:
        return asdict(self)


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


def is_torch_input(text: str) -> bool:
    return ("torch.aten." in text or "!torch.vtensor" in text) and "cf.assert" not in text


def _cache_dir() -> Path:
    return cache_root() / "dispatch"


class DispatchCounter:
    """Counts for texts, cached by (compiler version, flags, content hash) in memory and on disk."""

    def __init__(self, compiler: Compiler, timeout: float = 600.0, disk_cache: bool = True):
        self.compiler = compiler
        self.timeout = timeout
        self.disk_cache = disk_cache
        self._memory: dict[str, dict] = {}
        self._last_ir: dict[str, str] = {}  # without a disk cache: the last outputs, by key
        self.runs: list[Run] = []

    def sibling(self) -> DispatchCounter:
        """A counter with the same compiler and cache but its own runs (cancelled on their own)."""
        other = DispatchCounter(self.compiler, self.timeout, self.disk_cache)
        other._memory = self._memory
        other._last_ir = self._last_ir
        return other

    def prepare_flags(self, flags: list[str]) -> FlagReport:
        return translate(flags, known_flags(self.compiler.path))

    def _key(self, kind: str, flags: list[str], text: str) -> str:
        h = hashlib.sha256()
        for part in (kind, self.compiler.version, self.compiler.path, "\0".join(flags)):
            h.update(part.encode() + b"\0")
        h.update(text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def _cached(self, key: str) -> dict | None:
        if key in self._memory:
            return self._memory[key]
        if self.disk_cache:
            p = _cache_dir() / f"{key}.json"
            try:
                data = json.loads(p.read_text())
            except (OSError, ValueError):
                return None
            self._memory[key] = data
            return data
        return None

    def _store(self, key: str, data: dict) -> None:
        self._memory[key] = data
        if self.disk_cache:
            d = _cache_dir()
            try:
                d.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
                with os.fdopen(fd, "w") as f:
                    json.dump(data, f)
                os.replace(tmp, d / f"{key}.json")
            except OSError:
                pass

    def cancel_all(self) -> None:
        """Kill every run of this counter, and refuse new ones (a what-if still preparing its
        text would otherwise start its compile after the cancel)."""
        self.cancelled = True
        for r in list(self.runs):
            r.cancel()

    def _run(self, argv: list[str], files: dict | None = None) -> str:
        run = Run(argv, self.timeout)
        self.runs.append(run)
        if getattr(self, "cancelled", False):
            run.cancel()  # after the append: a cancel racing with us cannot miss this run
        try:
            code, err = run.run()
        finally:
            self.runs.remove(run)
        if code != 0:
            diags = parse_diagnostics(err, files or {})
            first = next((d for d in diags if d["severity"] == "error"), None)
            where = f" at line {first['line']}" if first and first["line"] else ""
            msg = first["message"] if first else _first_error(err) or "no message"
            raise CompilerError(f"iree-compile failed (exit {code}){where}: {msg}", diags)
        return err

    def _lookup(self, kind: str, flags: list[str], text: str, attribution: bool) -> tuple[str, dict | None]:
        """(key to store under, cached data): a compile with debug info serves plain requests too."""
        key_attr = self._key(kind + ":attr", flags, text)
        if attribution:
            return key_attr, self._cached(key_attr)
        key = self._key(kind, flags, text)
        hit = self._cached(key)
        return key, hit if hit is not None else self._cached(key_attr)

    def count(self, text: str, flags: list[str], *, stream: bool = False, compile_from: str | None = None,
              attribution: bool = False, input_path: str | None = None, files: tuple[str, ...] = (),
              line_map=None, need_ir: bool = False) -> Counts:
        """Counts of `text`. `input_path`: a file holding exactly `text` (compiled in place, no copy);
        `attribution`: compile with debug info and keep each dispatch's source locations (in `text`
        and `files`); `line_map`: turns lines of `text` into the user's (for compiler errors)."""
        kind = f"count:{compile_from or ''}:{int(stream)}"
        key, hit = self._lookup(kind, flags, text, attribution)
        if hit is not None and (not need_ir or key in self._last_ir or hit.get("ir") and os.path.exists(hit["ir"])):
            return Counts(**{**hit, "seconds": 0.0})
        t0 = time.monotonic()
        with _workdir(text, input_path) as (tmp, src):
            pre = [f"--compile-from={compile_from}"] if compile_from else []
            dbg = ["--mlir-print-debuginfo"] if attribution else []
            known = {src: line_map, **{f: None for f in files}}
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
            stream_count = None
            if stream:
                stats = os.path.join(tmp, "stats.json")
                self._run([self.compiler.path, src, *pre, *flags, "--compile-to=stream", "-o", os.devnull,
                           "--iree-scheduling-dump-statistics-format=json",
                           f"--iree-scheduling-dump-statistics-file={stats}"], known)
                stream_count = _stream_dispatches(stats)
        if final is None:
            self._last_ir[key] = ir
            while len(self._last_ir) > 2:
                self._last_ir.pop(next(iter(self._last_ir)))
        counts = Counts(len(ops), per, stream_count, time.monotonic() - t0, sites, str(final) if final is not None else None,
                        untargeted_executables(ir))
        self._store(key, {k: v for k, v in asdict(counts).items() if k != "seconds"})
        if final is not None:
            _prune(final.parent, IR_FILES_KEPT)
        return counts

    def _ir_target(self, tmp: str, key: str) -> tuple[str, Path | None]:
        """Where the compiler writes its output: into the cache (kept for `dispatch_ir`) when
        there is a disk cache, else the private folder."""
        if self.disk_cache:
            d = _cache_dir() / "ir"
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
        key, _hit = self._lookup("count::0", flags, text, attribution)
        return self._last_ir.get(key, ""), None

    def lower_to_input(self, text: str, flags: list[str], input_path: str | None = None) -> str:
        key = self._key("lower-input", flags, text)
        hit = self._cached(key)
        if hit is not None:
            return hit["text"]
        with _workdir(text, input_path) as (tmp, src):
            out = os.path.join(tmp, "lowered.mlir")
            self._run([self.compiler.path, src, *flags, "--compile-to=input", "--mlir-print-debuginfo", "-o", out],
                      {src: None})
            with open(out, encoding="utf-8", errors="replace") as f:
                lowered = f.read()
        self._store(key, {"text": lowered, "input": src})
        return lowered

    def lowered_input_name(self, text: str, flags: list[str]) -> str | None:
        hit = self._cached(self._key("lower-input", flags, text))
        return hit.get("input") if hit else None


IR_FILES_KEPT = 24


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
    tmp = tempfile.mkdtemp(prefix="mlir-lsp-")
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


def fixed_text(text: str, mode: str) -> tuple[str, int, list]:
    """The text with all safe fixes applied, how many asserts they fix, and their edits."""
    from ..check import check_text
    from ..fixes import fix_text

    result = check_text(text)
    fo = fix_text(result, mode, unsafe=False)
    return fo.text, fo.fixed, fo.edits


def preview(counter: DispatchCounter, path: str, text: str, profile: str, flags: list[str], *,
            what_if: str | None = None, stream: bool = False, parallel: bool = True,
            attribution: bool = False, input_path: str | None = None) -> Preview:
    """The counts for `text`, and with `what_if` ("strip"/"assume") the count with fixes applied.
    `attribution`: also which source ops end up in which dispatch, and (with `what_if`) which
    dispatches exist only because of asserts. `input_path`: a file that holds exactly `text`."""
    t0 = time.monotonic()
    rep = counter.prepare_flags(flags)
    fl = rep.flags
    notes = list(rep.notes)
    is_torch = is_torch_input(text)

    def base():
        return counter.count(text, fl, stream=stream, attribution=attribution, input_path=input_path)

    sources: list[dict] = []
    removed: set[int] = set()

    def alt():
        if is_torch:
            lowered = counter.lower_to_input(text, fl, input_path=input_path)
            name = counter.lowered_input_name(text, fl)
            sources.extend(trace_asserts(lowered, text, name))
            fixed, n, _edits = fixed_text(lowered, what_if)
            notes.append(f"torch input: lowered with --compile-to=input, {n} asserts fixed, compiled from there")
            return counter.count(fixed, fl, stream=stream, compile_from="input", attribution=attribution,
                                 files=(name,) if name else ()), n
        fixed, n, edits = fixed_text(text, what_if)
        line_map = LineMap(text, edits)
        removed.update(line_map.removed)
        c = counter.count(fixed, fl, stream=stream, attribution=attribution, line_map=line_map)
        if c.dispatches:  # into the lines of `text`
            c.dispatches = [{**d, "location": [line_map(d["location"][0]), d["location"][1]] if d["location"] else None,
                             "sources": sorted({(line_map(ln), col) for ln, col in d["sources"]})}
                            for d in c.dispatches]
        return c, n

    def alt_cached():
        """The what-if by the unfixed text: a hit skips the check, the fixes and the lowering."""
        key = counter._key(f"what-if:{what_if}:{int(stream)}:{int(attribution)}", fl, text)
        hit = counter._cached(key)
        if hit is not None:
            sources.extend(hit["sources"])
            removed.update(hit["removed"])
            notes.extend(hit["notes"])
            return Counts(**{**hit["counts"], "seconds": 0.0}), hit["n"]
        before = len(notes)
        c, n = alt()
        counter._store(key, {"counts": {k: v for k, v in asdict(c).items() if k != "seconds"}, "n": n,
                             "sources": sources, "removed": sorted(removed), "notes": notes[before:]})
        return c, n

    def alt_labelled():
        try:
            return alt_cached()
        except CompilerError as e:
            if str(e) == "cancelled":
                raise
            done = "stripped" if what_if == "strip" else "rewritten to util.assume.int"
            raise CompilerError(f"what-if compile (asserts {done}): {e}", e.diagnostics) from None

    attr = None
    if what_if:
        workers = 2 if parallel and (os.cpu_count() or 1) > 1 else 1
        own_cancel = False
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                fb, fa = pool.submit(base), pool.submit(alt_labelled)
                try:
                    b = fb.result()
                    a, n = fa.result()
                except BaseException:
                    own_cancel = not getattr(counter, "cancelled", False)
                    counter.cancel_all()  # the other side too, also a compile it has yet to start
                    raise
        finally:
            if own_cancel:  # both sides are done now: the counter serves the next file again
                counter.cancelled = False
        wi = {"mode": what_if, "flow_dispatches": a.flow_dispatches, "stream_dispatches": a.stream_dispatches,
              "per_function": a.per_function, "asserts_fixed": n,
              "saved": b.flow_dispatches - a.flow_dispatches, "only_because_of_asserts": None}
    else:
        b, wi = base(), None
    if attribution and b.dispatches is not None:
        lines, memo = text.split("\n"), {}
        described = describe(b.dispatches, lines, memo=memo)
        attr = {"dispatches": described,
                "source_ops": len({(s["line"], s["column"]) for d in described for s in d["sources"]})}
        if wi is not None and a.dispatches is not None:
            fixed_described = describe(a.dispatches, lines, memo=memo)
            wi["only_because_of_asserts"] = only_because_of_asserts(described, fixed_described, removed)
    warnings = list(rep.warnings)
    if b.untargeted:
        warnings.append(untargeted_warning(counter.compiler.version, fl, b.untargeted))
    return Preview(path, profile, counter.compiler.version, b.flow_dispatches, b.stream_dispatches, b.per_function,
                   wi, round(time.monotonic() - t0, 3), assert_sources=sources, notes=notes,
                   warnings=warnings, attribution=attr)
