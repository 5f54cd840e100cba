"""Generates a large MLIR module of realistic make-up for the benchmarks.

The output is linalg-on-tensors IR of the kind torch-mlir and IREE's input conversion print:
thousands of `func.func`s built from a handful of templates (matmul + bias + GELU, RMS-norm with a
reduction, multi-head reshapes with `linalg.transpose`/`linalg.batch_matmul`, softmax, constant
weights as `dense<"0x...">` hex literals, parameters through `util.global`), `#map` aliases and
inline `affine_map`s, `loc(...)` on part of the ops (inline and through `#loc` aliases defined at
the end, as `--mlir-print-debuginfo` prints them), and in a few hundred functions torch-mlir's
gather (`aten.embedding`) body with its two `cf.assert`s, a few of them in the generic op form.

Everything here parses and verifies with the real `iree-opt` (bench_check.py checks that).
`generate()` returns the text and the number of `cf.assert` ops it contains.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

# Bump when the make-up changes; the benchmark's cache is keyed on this file's hash anyway.
VERSION = 2

HEADER = """#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
module @model {
"""

MLP = """  func.func @mlp_{i}(%arg0: tensor<{s}x{n}xf32>, %arg1: tensor<{n}x{m}xf32>, %arg2: tensor<{m}xf32>) -> tensor<{s}x{m}xf32> {{
    %cst = arith.constant 0.000000e+00 : f32{L}
    %cst_0 = arith.constant 5.000000e-01 : f32{L}
    %cst_1 = arith.constant 0.707106769 : f32{L}
    %cst_2 = arith.constant 1.000000e+00 : f32{L}
    %0 = tensor.empty() : tensor<{s}x{m}xf32>{L}
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<{s}x{m}xf32>) -> tensor<{s}x{m}xf32>{L}
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<{s}x{n}xf32>, tensor<{n}x{m}xf32>) outs(%1 : tensor<{s}x{m}xf32>) -> tensor<{s}x{m}xf32>{L}
    %3 = linalg.generic {{indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]}} ins(%2, %arg2 : tensor<{s}x{m}xf32>, tensor<{m}xf32>) outs(%0 : tensor<{s}x{m}xf32>) {{
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %4 = arith.addf %in, %in_3 : f32{L}
      %5 = arith.mulf %4, %cst_1 : f32{L}
      %6 = math.erf %5 : f32{L}
      %7 = arith.addf %6, %cst_2 : f32{L}
      %8 = arith.mulf %7, %cst_0 : f32{L}
      %9 = arith.mulf %4, %8 : f32{L}
      linalg.yield %9 : f32{L}
    }} -> tensor<{s}x{m}xf32>{L}
    return %3 : tensor<{s}x{m}xf32>{L}
  }}{L}
"""

NORM = """  func.func @norm_{i}(%arg0: tensor<{s}x{n}xf32>, %arg1: tensor<{n}xf32>) -> tensor<{s}x{n}xf32> {{
    %cst = arith.constant 0.000000e+00 : f32{L}
    %cst_0 = arith.constant {nf} : f32{L}
    %cst_1 = arith.constant 9.99999974E-6 : f32{L}
    %0 = tensor.empty() : tensor<{s}xf32>{L}
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<{s}xf32>) -> tensor<{s}xf32>{L}
    %2 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}} ins(%arg0 : tensor<{s}x{n}xf32>) outs(%1 : tensor<{s}xf32>) {{
    ^bb0(%in: f32, %out: f32):
      %5 = arith.mulf %in, %in : f32{L}
      %6 = arith.addf %5, %out : f32{L}
      linalg.yield %6 : f32{L}
    }} -> tensor<{s}xf32>{L}
    %3 = tensor.empty() : tensor<{s}x{n}xf32>{L}
    %4 = linalg.generic {{indexing_maps = [#map, #map2, #map1, #map], iterator_types = ["parallel", "parallel"]}} ins(%arg0, %2, %arg1 : tensor<{s}x{n}xf32>, tensor<{s}xf32>, tensor<{n}xf32>) outs(%3 : tensor<{s}x{n}xf32>) {{
    ^bb0(%in: f32, %in_2: f32, %in_3: f32, %out: f32):
      %5 = arith.divf %in_2, %cst_0 : f32{L}
      %6 = arith.addf %5, %cst_1 : f32{L}
      %7 = math.rsqrt %6 : f32{L}
      %8 = arith.mulf %in, %7 : f32{L}
      %9 = arith.mulf %8, %in_3 : f32{L}
      linalg.yield %9 : f32{L}
    }} -> tensor<{s}x{n}xf32>{L}
    return %4 : tensor<{s}x{n}xf32>{L}
  }}{L}
"""

HEADS = """  func.func @heads_{i}(%arg0: tensor<{s}x{n}xf16>, %arg1: tensor<{s}x{n}xf16>) -> tensor<{h}x{s}x{s}xf32> {{
    %expanded = tensor.expand_shape %arg0 [[0], [1, 2]] output_shape [{s}, {h}, {d}] : tensor<{s}x{n}xf16> into tensor<{s}x{h}x{d}xf16>{L}
    %expanded_0 = tensor.expand_shape %arg1 [[0], [1, 2]] output_shape [{s}, {h}, {d}] : tensor<{s}x{n}xf16> into tensor<{s}x{h}x{d}xf16>{L}
    %0 = tensor.empty() : tensor<{h}x{s}x{d}xf16>{L}
    %transposed = linalg.transpose ins(%expanded : tensor<{s}x{h}x{d}xf16>) outs(%0 : tensor<{h}x{s}x{d}xf16>) permutation = [1, 0, 2]{L}
    %1 = tensor.empty() : tensor<{h}x{d}x{s}xf16>{L}
    %transposed_1 = linalg.transpose ins(%expanded_0 : tensor<{s}x{h}x{d}xf16>) outs(%1 : tensor<{h}x{d}x{s}xf16>) permutation = [1, 2, 0]{L}
    %cst = arith.constant 0.000000e+00 : f32{L}
    %2 = tensor.empty() : tensor<{h}x{s}x{s}xf32>{L}
    %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<{h}x{s}x{s}xf32>) -> tensor<{h}x{s}x{s}xf32>{L}
    %4 = linalg.batch_matmul ins(%transposed, %transposed_1 : tensor<{h}x{s}x{d}xf16>, tensor<{h}x{d}x{s}xf16>) outs(%3 : tensor<{h}x{s}x{s}xf32>) -> tensor<{h}x{s}x{s}xf32>{L}
    %extracted_slice = tensor.extract_slice %4[0, 0, 0] [{h}, {s}, {s}] [1, 1, 1] : tensor<{h}x{s}x{s}xf32> to tensor<{h}x{s}x{s}xf32>{L}
    return %extracted_slice : tensor<{h}x{s}x{s}xf32>{L}
  }}{L}
"""

SOFTMAX = """  func.func @softmax_{i}(%arg0: tensor<{s}x{n}xf32>) -> tensor<{s}x{n}xf32> {{
    %cst = arith.constant -3.40282347E+38 : f32{L}
    %cst_0 = arith.constant 0.000000e+00 : f32{L}
    %0 = tensor.empty() : tensor<{s}x1xf32>{L}
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<{s}x1xf32>) -> tensor<{s}x1xf32>{L}
    %2 = linalg.generic {{indexing_maps = [#map, #map3], iterator_types = ["parallel", "reduction"]}} ins(%arg0 : tensor<{s}x{n}xf32>) outs(%1 : tensor<{s}x1xf32>) {{
    ^bb0(%in: f32, %out: f32):
      %9 = arith.maximumf %in, %out : f32{L}
      linalg.yield %9 : f32{L}
    }} -> tensor<{s}x1xf32>{L}
    %3 = tensor.empty() : tensor<{s}x{n}xf32>{L}
    %4 = linalg.generic {{indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel"]}} ins(%arg0, %2 : tensor<{s}x{n}xf32>, tensor<{s}x1xf32>) outs(%3 : tensor<{s}x{n}xf32>) {{
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %9 = arith.subf %in, %in_1 : f32{L}
      %10 = math.exp %9 : f32{L}
      linalg.yield %10 : f32{L}
    }} -> tensor<{s}x{n}xf32>{L}
    %5 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<{s}x1xf32>) -> tensor<{s}x1xf32>{L}
    %6 = linalg.generic {{indexing_maps = [#map, #map3], iterator_types = ["parallel", "reduction"]}} ins(%4 : tensor<{s}x{n}xf32>) outs(%5 : tensor<{s}x1xf32>) {{
    ^bb0(%in: f32, %out: f32):
      %9 = arith.addf %in, %out : f32{L}
      linalg.yield %9 : f32{L}
    }} -> tensor<{s}x1xf32>{L}
    %7 = linalg.generic {{indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel"]}} ins(%4, %6 : tensor<{s}x{n}xf32>, tensor<{s}x1xf32>) outs(%3 : tensor<{s}x{n}xf32>) {{
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %9 = arith.divf %in, %in_1 : f32{L}
      linalg.yield %9 : f32{L}
    }} -> tensor<{s}x{n}xf32>{L}
    return %7 : tensor<{s}x{n}xf32>{L}
  }}{L}
"""

# Constant weights inline, as torch-mlir prints them: `dense<"0x...">` (little-endian raw bytes).
CONST = """  func.func @scale_{i}(%arg0: tensor<{s}x{k}xf32>) -> tensor<{s}x{k}xf32> {{
    %cst = arith.constant dense<"0x{hex}"> : tensor<{k}xf32>{L}
    %0 = tensor.empty() : tensor<{s}x{k}xf32>{L}
    %1 = linalg.generic {{indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]}} ins(%arg0, %cst : tensor<{s}x{k}xf32>, tensor<{k}xf32>) outs(%0 : tensor<{s}x{k}xf32>) {{
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.mulf %in, %in_0 : f32{L}
      linalg.yield %2 : f32{L}
    }} -> tensor<{s}x{k}xf32>{L}
    return %1 : tensor<{s}x{k}xf32>{L}
  }}{L}
"""

# A big weight (hundreds of KB of hex on one line) feeding a matmul, and a parameter global.
BIG_CONST = """  util.global private @param_{i} = #flow.parameter.named<"model"::"param_{i}"> : tensor<{n}xf16>
  func.func @proj_{i}(%arg0: tensor<{s}x{k}xf16>) -> tensor<{s}x{n}xf16> {{
    %cst = arith.constant dense<"0x{hex}"> : tensor<{k}x{n}xf16>{L}
    %cst_0 = arith.constant 0.000000e+00 : f16{L}
    %param = util.global.load @param_{i} : tensor<{n}xf16>{L}
    %0 = tensor.empty() : tensor<{s}x{n}xf16>{L}
    %1 = linalg.fill ins(%cst_0 : f16) outs(%0 : tensor<{s}x{n}xf16>) -> tensor<{s}x{n}xf16>{L}
    %2 = linalg.matmul ins(%arg0, %cst : tensor<{s}x{k}xf16>, tensor<{k}x{n}xf16>) outs(%1 : tensor<{s}x{n}xf16>) -> tensor<{s}x{n}xf16>{L}
    %3 = linalg.generic {{indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]}} ins(%2, %param : tensor<{s}x{n}xf16>, tensor<{n}xf16>) outs(%0 : tensor<{s}x{n}xf16>) {{
    ^bb0(%in: f16, %in_1: f16, %out: f16):
      %4 = arith.addf %in, %in_1 : f16{L}
      linalg.yield %4 : f16{L}
    }} -> tensor<{s}x{n}xf16>{L}
    return %3 : tensor<{s}x{n}xf16>{L}
  }}{L}
"""

# torch-mlir's aten.embedding lowering (TorchToLinalg, createLinalgPayloadCalculationForGatherOps),
# the same body as ../shared/fixtures/repro/hoisted_gather.mlir.
GATHER = """  func.func @embedding_{i}(%arg0: tensor<{v}x{n}xf16>, %arg1: tensor<1x{v}xi64>) -> tensor<{s}x{n}xf16> {{
    %c{v} = arith.constant {v} : index{L}
    %c0_i64 = arith.constant 0 : i64{L}
    %extracted_slice = tensor.extract_slice %arg1[0, 0] [1, {s}] [1, 1] : tensor<1x{v}xi64> to tensor<{s}xi64>{L}
    %0 = tensor.empty() : tensor<{s}x{n}xf16>{L}
    %1 = linalg.generic {{indexing_maps = [#map2, #map], iterator_types = ["parallel", "parallel"]}} ins(%extracted_slice : tensor<{s}xi64>) outs(%0 : tensor<{s}x{n}xf16>) {{
    ^bb0(%in: i64, %out: f16):
      %2 = arith.index_cast %in : i64 to index{L}
      %3 = linalg.index 1 : index{L}
      %4 = arith.cmpi slt, %2, %c{v} : index{L}
      {assert1}{L}
      %5 = arith.cmpi sge, %in, %c0_i64 : i64{L}
      {assert2}{L}
      %extracted = tensor.extract %arg0[%2, %3] : tensor<{v}x{n}xf16>{L}
      linalg.yield %extracted : f16{L}
    }} -> tensor<{s}x{n}xf16>{L}
    return %1 : tensor<{s}x{n}xf16>{L}
  }}{L}
"""
MSG1, MSG2 = "index must be smaller than dim size", "index must be larger or equal to 0"
CUSTOM = (f'cf.assert %4, "{MSG1}"', f'cf.assert %5, "{MSG2}"')
GENERIC = (f'"cf.assert"(%4) <{{msg = "{MSG1}"}}> : (i1) -> ()',
           f'"cf.assert"(%5) <{{msg = "{MSG2}"}}> : (i1) -> ()')

SEQS = (64, 77, 128)
DIMS = (64, 128, 320, 768, 1280)
KINDS = ("mlp", "norm", "heads", "softmax", "const")
WEIGHTS = (3, 3, 2, 2, 1)
GATHER_EVERY = 120  # -> a few hundred gathers in 50 MB
BIG_EVERY = 4000    # -> about ten big hex literals in 50 MB
LOC_SHARE = 0.3     # functions printed with debug locations


def source_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


class _Locs:
    """`loc(...)` suffixes: inline file locations, or `#locN` aliases defined after the module."""

    def __init__(self, rnd: random.Random):
        self.rnd = rnd
        self.defs: list[str] = []
        self.def_bytes = 0
        self.on = False
        self.line = 1

    def __call__(self) -> str:
        if not self.on:
            return ""
        self.line += self.rnd.randint(1, 3)
        where = f'"/src/model/modeling_clip.py":{self.line}:{self.rnd.randint(1, 40)}'
        if self.rnd.random() < 0.5:
            return f" loc({where})"
        self.defs.append(f"#loc{len(self.defs)} = loc({where})")
        self.def_bytes += len(self.defs[-1]) + 1
        return f" loc(#loc{len(self.defs) - 1})"


def _fill(template: str, locs: _Locs, **kw) -> str:
    # Each `{L}` gets its own location; everything else is str.format.
    pieces = template.split("{L}")
    out = []
    for j, piece in enumerate(pieces):
        out.append(piece.format(**kw))
        if j < len(pieces) - 1:
            out.append(locs())
    return "".join(out)


def _hex(rnd: random.Random, nbytes: int) -> str:
    return rnd.randbytes(nbytes).hex().upper()


def generate(target_bytes: int, seed: int = 0) -> tuple[str, int]:
    """(text, number of cf.assert ops) for a module of about `target_bytes`."""
    rnd = random.Random(seed)
    locs = _Locs(rnd)
    parts = [HEADER]
    size, i, asserts = len(HEADER), 0, 0
    while size + locs.def_bytes < target_bytes:
        locs.on = rnd.random() < LOC_SHARE
        s, n = rnd.choice(SEQS), rnd.choice(DIMS)
        if i % GATHER_EVERY == 7:
            generic = rnd.random() < 0.1
            a1, a2 = GENERIC if generic else CUSTOM
            chunk = _fill(GATHER, locs, i=i, s=min(s, 64), v=77 if s <= 77 else 128, n=n,
                          assert1=a1, assert2=a2)
            asserts += 2
        elif i % BIG_EVERY == 1999:
            k = rnd.choice((128, 256, 320))
            chunk = _fill(BIG_CONST, locs, i=i, s=s, k=k, n=n, hex=_hex(rnd, 2 * k * n))
        else:
            kind = rnd.choices(KINDS, WEIGHTS)[0]
            if kind == "mlp":
                chunk = _fill(MLP, locs, i=i, s=s, n=n, m=rnd.choice(DIMS))
            elif kind == "norm":
                chunk = _fill(NORM, locs, i=i, s=s, n=n, nf=f"{float(n):.6e}")
            elif kind == "heads":
                h = rnd.choice((4, 8, 16))
                n = max(n, h * 16) // h * h
                chunk = _fill(HEADS, locs, i=i, s=s, n=n, h=h, d=n // h)
            elif kind == "softmax":
                chunk = _fill(SOFTMAX, locs, i=i, s=s, n=n)
            else:
                k = rnd.choice((4, 16, 64))
                chunk = _fill(CONST, locs, i=i, s=s, k=k, hex=_hex(rnd, 4 * k))
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append("}\n")
    if locs.defs:
        parts.append("\n".join(locs.defs) + "\n")
    return "".join(parts), asserts


def generate_big_literal(data_bytes: int, seed: int = 1) -> tuple[str, int]:
    """One weight inlined as a single `dense<"0x...">` literal of `data_bytes` bytes (an exported
    model with its parameters inline has literals of tens of MB), plus one gather: (text, asserts)."""
    rnd = random.Random(seed)
    locs = _Locs(rnd)
    k, n = 1024, max(1, data_bytes // 2048)
    text = (HEADER + _fill(BIG_CONST, locs, i=0, s=64, k=k, n=n, hex=_hex(rnd, 2 * k * n))
            + _fill(GATHER, locs, i=1, s=64, v=77, n=768, assert1=CUSTOM[0], assert2=CUSTOM[1]) + "}\n")
    return text, 2


ENCODER = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "models" / "sdxl_prompt_encoder.input.mlir"
_SSA = re.compile(r"%([\w$.\-]+)")
_ARG = re.compile(r"arg\d+")


def _rename(body: str, copy: int) -> str:
    """Every SSA name of `body` renamed for copy `copy`; `%argN` (the function's arguments) kept.
    Numeric names stay numeric (`%12` -> `%1000012`): a name starting with a digit must be all digits."""
    if copy == 0:
        return body

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if _ARG.fullmatch(name):
            return m.group(0)
        if name.isdigit():
            return f"%{copy * 1_000_000 + int(name)}"
        return f"%{name}_c{copy}"
    return _SSA.sub(sub, body)


def generate_model_shaped(copies: int = 20, source: Path = ENCODER) -> tuple[str, int]:
    """The shape of a torch export: one function holding every op. The prompt encoder's
    `@main$async` body is repeated `copies` times inside that one function, with every SSA value
    renamed per copy (`%argN` kept), so the result still parses and verifies with iree-opt; the last
    copy's values are returned. (text, number of cf.assert ops). 20 copies: ~47.5 MB, 320 asserts."""
    text = source.read_text()
    head = text.index("util.func public @main$async(")
    body_start = text.index("\n", head) + 1
    ret = text.index("    util.return", body_start)
    ret_end = text.index("\n", ret) + 1
    body, ret_line = text[body_start:ret], text[ret:ret_end]
    parts = [text[:body_start]]
    for k in range(copies):
        parts.append(_rename(body, k))
    parts.append(_rename(ret_line, copies - 1))
    parts.append(text[ret_end:])
    out = "".join(parts)
    return out, out.count("cf.assert %")


if __name__ == "__main__":
    import sys

    text, n = generate(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)
    sys.stdout.write(text)
    print(f"{len(text)} bytes, {n} cf.assert", file=sys.stderr)


# The other end of the spread shape: ~80,000 small functions of upstream dialects (an elementwise
# linalg.generic, scalar arithmetic), about one in 250 a gather with torch-mlir's two asserts.
SMALL_BINARY = """  func.func @{op}_{i}(%arg0: tensor<{s}x{n}xf32>, %arg1: tensor<{s}x{n}xf32>) -> tensor<{s}x{n}xf32> {{
    %0 = tensor.empty() : tensor<{s}x{n}xf32>
    %1 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%arg0, %arg1 : tensor<{s}x{n}xf32>, tensor<{s}x{n}xf32>) outs(%0 : tensor<{s}x{n}xf32>) {{
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.{op}f %in, %in_0 : f32
      linalg.yield %2 : f32
    }} -> tensor<{s}x{n}xf32>
    return %1 : tensor<{s}x{n}xf32>
  }}
"""
SMALL_SCALAR = """  func.func @scale_{i}(%arg0: i64, %arg1: i64) -> i64 {{
    %c{k}_i64 = arith.constant {k} : i64
    %0 = arith.muli %arg0, %c{k}_i64 : i64
    %1 = arith.addi %0, %arg1 : i64
    %2 = arith.maxsi %1, %arg0 : i64
    return %2 : i64
  }}
"""
SMALL_GATHER = """  func.func @lookup_{i}(%ids: tensor<{s}xi64>, %w: tensor<{v}x{n}xf32>) -> tensor<{s}x{n}xf32> {{
    %c{v} = arith.constant {v} : index
    %c0_i64 = arith.constant 0 : i64
    %0 = tensor.empty() : tensor<{s}x{n}xf32>
    %1 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%ids : tensor<{s}xi64>) outs(%0 : tensor<{s}x{n}xf32>) {{
    ^bb0(%in: i64, %out: f32):
      %2 = arith.index_cast %in : i64 to index
      %3 = linalg.index 1 : index
      %4 = arith.cmpi slt, %2, %c{v} : index
      cf.assert %4, "index must be smaller than dim size"
      %5 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %5, "index must be larger or equal to 0"
      %6 = tensor.extract %w[%2, %3] : tensor<{v}x{n}xf32>
      linalg.yield %6 : f32
    }} -> tensor<{s}x{n}xf32>
    return %1 : tensor<{s}x{n}xf32>
  }}
"""
SMALL_GATHER_EVERY = 250


def generate_small_functions(target_bytes: int, seed: int = 3) -> tuple[str, int]:
    """(text, number of cf.assert ops) for a module of about `target_bytes` made of small functions."""
    rnd = random.Random(seed)
    parts = ["module @small {\n"]
    size, i, asserts = len(parts[0]), 0, 0
    while size < target_bytes:
        if i % SMALL_GATHER_EVERY == 17:
            chunk = SMALL_GATHER.format(i=i, s=rnd.choice((8, 16, 64)), v=rnd.choice((77, 128)), n=rnd.choice(DIMS))
            asserts += 2
        elif rnd.random() < 0.05:
            chunk = SMALL_SCALAR.format(i=i, k=rnd.randint(2, 999))
        else:
            chunk = SMALL_BINARY.format(i=i, op=rnd.choice(("add", "mul", "sub", "maximum")), s=rnd.choice(SEQS),
                                        n=rnd.choice(DIMS))
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append("}\n")
    return "".join(parts), asserts
