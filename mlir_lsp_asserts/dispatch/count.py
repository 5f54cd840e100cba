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
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..syntax.document import parse
from .compiler import Compiler, CompilerError, Run, _first_error, cache_root, known_flags, parse_errors
from .flags import FlagReport, translate

SYMBOL = re.compile(r'@([\w$.\-]+|"[^"]*")')


@dataclass
class Counts:
    flow_dispatches: int
    per_function: dict[str, int]
    stream_dispatches: int | None = None
    seconds: float = 0.0


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

    def as_json(self) -> dict:
        return asdict(self)


OP_NAME_BEFORE = re.compile(r"(?:=|^)[ \t]*\Z", re.M)


def count_flow(text: str) -> tuple[int, dict[str, int]]:
    """Workgroups ops in dispatch-creation output, total and per function/initializer.

    Compiler output has one op per match where the name stands after `=` (or alone at the
    start of a line), so this needs the top-level structure only, not every function read.
    """
    parsed = parse(text)
    per: dict[str, int] = {}
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
                per[key] = per.get(key, 0) + 1
        pos = text.find(literal, pos + 1)
    return sum(per.values()), per


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
        self.runs: list[Run] = []

    def sibling(self) -> DispatchCounter:
        """A counter with the same compiler and cache but its own runs (cancelled on their own)."""
        other = DispatchCounter(self.compiler, self.timeout, self.disk_cache)
        other._memory = self._memory
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
        for r in list(self.runs):
            r.cancel()

    def _run(self, argv: list[str]) -> str:
        run = Run(argv, self.timeout)
        self.runs.append(run)
        try:
            code, err = run.run()
        finally:
            self.runs.remove(run)
        if code != 0:
            errors = parse_errors(err)
            where = f" at line {errors[0][1]}" if errors else ""
            msg = errors[0][3] if errors else _first_error(err) or "no message"
            raise CompilerError(f"iree-compile failed (exit {code}){where}: {msg}")
        return err

    def count(self, text: str, flags: list[str], *, stream: bool = False, compile_from: str | None = None) -> Counts:
        kind = f"count:{compile_from or ''}:{int(stream)}"
        key = self._key(kind, flags, text)
        hit = self._cached(key)
        if hit is not None:
            return Counts(**{**hit, "seconds": 0.0})
        t0 = time.monotonic()
        with _workdir(text) as (tmp, src):
            out = os.path.join(tmp, "dispatch-creation.mlir")
            pre = [f"--compile-from={compile_from}"] if compile_from else []
            self._run([self.compiler.path, src, *pre, *flags, "--compile-to=dispatch-creation", "-o", out])
            with open(out, encoding="utf-8", errors="replace") as f:
                total, per = count_flow(f.read())
            stream_count = None
            if stream:
                stats = os.path.join(tmp, "stats.json")
                self._run([self.compiler.path, src, *pre, *flags, "--compile-to=stream", "-o", os.devnull,
                           "--iree-scheduling-dump-statistics-format=json",
                           f"--iree-scheduling-dump-statistics-file={stats}"])
                stream_count = _stream_dispatches(stats)
        counts = Counts(total, per, stream_count, time.monotonic() - t0)
        self._store(key, {k: v for k, v in asdict(counts).items() if k != "seconds"})
        return counts

    def lower_to_input(self, text: str, flags: list[str]) -> str:
        key = self._key("lower-input", flags, text)
        hit = self._cached(key)
        if hit is not None:
            return hit["text"]
        with _workdir(text) as (tmp, src):
            out = os.path.join(tmp, "lowered.mlir")
            self._run([self.compiler.path, src, *flags, "--compile-to=input", "--mlir-print-debuginfo", "-o", out])
            with open(out, encoding="utf-8", errors="replace") as f:
                lowered = f.read()
        self._store(key, {"text": lowered, "input": src})
        return lowered

    def lowered_input_name(self, text: str, flags: list[str]) -> str | None:
        hit = self._cached(self._key("lower-input", flags, text))
        return hit.get("input") if hit else None


@contextlib.contextmanager
def _workdir(text: str):
    """A private temporary folder holding `text` as input.mlir; removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="mlir-lsp-")
    try:
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


def fixed_text(text: str, mode: str) -> tuple[str, int]:
    from ..check import check_text
    from ..fixes import fix_text

    result = check_text(text)
    fo = fix_text(result, mode, unsafe=False)
    return fo.text, fo.fixed


def preview(counter: DispatchCounter, path: str, text: str, profile: str, flags: list[str], *,
            what_if: str | None = None, stream: bool = False, parallel: bool = True) -> Preview:
    """The counts for `text`, and with `what_if` ("strip"/"assume") the count with fixes applied."""
    t0 = time.monotonic()
    rep = counter.prepare_flags(flags)
    fl = rep.flags
    notes = list(rep.notes)
    is_torch = is_torch_input(text)

    def base():
        return counter.count(text, fl, stream=stream)

    sources: list[dict] = []

    def alt():
        if is_torch:
            lowered = counter.lower_to_input(text, fl)
            sources.extend(trace_asserts(lowered, text, counter.lowered_input_name(text, fl)))
            fixed, n = fixed_text(lowered, what_if)
            notes.append(f"torch input: lowered with --compile-to=input, {n} asserts fixed, compiled from there")
            return counter.count(fixed, fl, stream=stream, compile_from="input"), n
        fixed, n = fixed_text(text, what_if)
        return counter.count(fixed, fl, stream=stream), n

    if what_if:
        workers = 2 if parallel and (os.cpu_count() or 1) > 1 else 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            fb, fa = pool.submit(base), pool.submit(alt)
            try:
                b = fb.result()
                a, n = fa.result()
            except BaseException:
                counter.cancel_all()
                raise
        wi = {"mode": what_if, "flow_dispatches": a.flow_dispatches, "stream_dispatches": a.stream_dispatches,
              "per_function": a.per_function, "asserts_fixed": n,
              "saved": b.flow_dispatches - a.flow_dispatches}
    else:
        b, wi = base(), None
    return Preview(path, profile, counter.compiler.version, b.flow_dispatches, b.stream_dispatches, b.per_function,
                   wi, round(time.monotonic() - t0, 3), assert_sources=sources, notes=notes,
                   warnings=list(rep.warnings))


def trace_asserts(lowered: str, source: str, input_name: str | None) -> list[dict]:
    """The source ops whose lowering put `cf.assert`s into linalg regions, found through the
    lowered asserts' locations (`--mlir-print-debuginfo`), not through a list of op names."""
    from ..check import _source_location, assert_message, assert_ops
    from ..rules.mla001_assert_in_linalg_region import enclosing_linalg_op

    parsed = parse(lowered)
    lines = source.split("\n")
    by_line: dict[tuple[int, int], dict] = {}
    for op in assert_ops(parsed):
        if enclosing_linalg_op(op) is None:
            continue
        loc = _source_location(parsed, op)
        if loc is None:
            continue
        file, line_s, col_s = loc.rsplit(":", 2)
        if input_name and os.path.basename(file) != os.path.basename(input_name):
            continue
        line, col = int(line_s), int(col_s)
        if not 0 < line <= len(lines):
            continue
        m = re.search(r'(?:=\s*)?"?([a-z_][\w$]*\.[\w$.]+)', lines[line - 1][col - 1:])
        entry = by_line.setdefault((line, col), {"line": line, "column": col,
                                                  "op": m.group(1) if m else "?", "asserts": 0, "messages": []})
        entry["asserts"] += 1
        msg = assert_message(parsed, op)
        if msg and msg not in entry["messages"]:
            entry["messages"].append(msg)
    return sorted(by_line.values(), key=lambda e: (e["line"], e["column"]))
