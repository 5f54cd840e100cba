"""Coverage-guided fuzzing of the reader and the rules with atheris (libFuzzer), on real IR.

Run by `bench/soak.py` (`make soak`); by hand:
    .venv/bin/python bench/fuzz_atheris.py --stats S.json --artifacts DIR -runs=100000 -max_len=65536
One saved input run again through the oracle (its traceback, or "no crash"):
    .venv/bin/python bench/fuzz_atheris.py --reproduce bench/out/reader-fuzz/artifacts/crash-HASH.mlir

The seed corpus is real IR (tests/fuzzlib.py `reader_sources`). Each new input is made by
libFuzzer's own mutators (byte flips, erasures, insertions, cross-over) or, half of the time, by
the project's IR mutations (truncation, brace deletion, splices of two real files, duplicated,
deleted and swapped lines); coverage of mlir_lsp_asserts (instrumented) keeps the inputs that
reach new code. The oracle is `fuzzlib.check_reader`: no exception, every range inside the
document, the index consistent. An input that breaks it is saved to --artifacts and counted
(the run goes on); figures go to --stats as JSON every few seconds and at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["mlir_lsp_asserts"]):
    import mlir_lsp_asserts.checker  # noqa: F401
    import mlir_lsp_asserts.fixes  # noqa: F401
    import mlir_lsp_asserts.syntax.parsed_text  # noqa: F401

import fuzzlib  # noqa: E402

SOURCES = fuzzlib.reader_sources()
STATS = {"inputs": 0, "crashes": 0, "crash_kinds": {}, "seconds": 0.0, "bytes": 0}
_t0 = time.monotonic()
_last_write = 0.0
_stats_path: Path | None = None
_artifacts: Path | None = None


def _write_stats(force: bool = False) -> None:
    global _last_write
    now = time.monotonic()
    if _stats_path is None or (not force and now - _last_write < 2.0):
        return
    _last_write = now
    STATS["seconds"] = round(now - _t0, 2)
    tmp = _stats_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(STATS))
    os.replace(tmp, _stats_path)


def test_one_input(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    STATS["inputs"] += 1
    STATS["bytes"] += len(data)
    try:
        fuzzlib.check_reader(text)
    except KeyboardInterrupt:  # someone stopped the run (soak.py counts it as no crash)
        STATS["interrupted"] = True
        _write_stats(force=True)
        os._exit(130)
    except Exception as e:  # noqa: BLE001 - a finding of the fuzzer: save it and go on
        kind = f"{type(e).__name__}: {str(e)[:120]}"
        STATS["crashes"] += 1
        first = kind not in STATS["crash_kinds"]
        STATS["crash_kinds"][kind] = STATS["crash_kinds"].get(kind, 0) + 1
        if first and _artifacts is not None:  # named by content: the folder is kept across runs
            name = "crash-" + hashlib.sha1(data).hexdigest()[:12]
            (_artifacts / f"{name}.mlir").write_bytes(data)
            (_artifacts / f"{name}.txt").write_text(traceback.format_exc())
        _write_stats(force=True)
        return
    _write_stats()


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    if rnd.random() < 0.5:
        return atheris.Mutate(data, max_size)
    text = data.decode("utf-8", "replace")
    text = fuzzlib.mutate_once(fuzzlib.RandomChooser(rnd), text, SOURCES)
    return text.encode("utf-8", "surrogatepass")[:max_size]


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    i, j = rnd.randint(0, len(data1)), rnd.randint(0, len(data2))
    return (data1[:i] + data2[j:j + rnd.randint(0, 4000)])[:max_size]


def reproduce(path: Path) -> int:
    """Run one saved input through the oracle, as the fuzzer did: 1 and the traceback if it fails."""
    try:
        fuzzlib.check_reader(path.read_bytes().decode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 - the finding, shown
        traceback.print_exc()
        return 1
    print(f"no crash: {path}")
    return 0


def main() -> None:
    global _stats_path, _artifacts
    args = sys.argv[1:]
    if args[:1] == ["--reproduce"] and len(args) == 2:
        sys.exit(reproduce(Path(args[1])))
    rest = [sys.argv[0]]
    while args:
        a = args.pop(0)
        if a == "--stats":
            _stats_path = Path(args.pop(0))
        elif a == "--artifacts":
            _artifacts = Path(args.pop(0))
            _artifacts.mkdir(parents=True, exist_ok=True)
        else:
            rest.append(a)
    corpus = _artifacts / "corpus" if _artifacts else None
    if corpus is not None:
        corpus.mkdir(parents=True, exist_ok=True)
        for k, src in enumerate(SOURCES):
            (corpus / f"seed-{k}.mlir").write_text(src[:65536], encoding="utf-8", errors="replace")
        rest.append(str(corpus))  # libFuzzer reads it at the start and adds to it: kept across runs
        rest.append(f"-artifact_prefix={_artifacts}/")
    import atexit

    atexit.register(_write_stats, True)
    atheris.Setup(rest, test_one_input, custom_mutator=custom_mutator, custom_crossover=custom_crossover)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
