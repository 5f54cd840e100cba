"""Generates a large MLIR module of realistic make-up for the benchmarks (parses with iree-opt)."""

from __future__ import annotations

import random

PLAIN = """  func.func @f{i}(%arg0: tensor<64x{n}xf32>, %arg1: tensor<{n}x{n}xf32>, %ids: tensor<64xi64>) -> tensor<64x{n}xf32> {{
    %cst = arith.constant 0.000000e+00 : f32
    %w = arith.constant dense<"0x{hex}"> : tensor<4xf32>
    %c77 = arith.constant 77 : index
    %c0_i64 = arith.constant 0 : i64
    %0 = tensor.empty() : tensor<64x{n}xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<64x{n}xf32>) -> tensor<64x{n}xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<64x{n}xf32>, tensor<{n}x{n}xf32>) outs(%1 : tensor<64x{n}xf32>) -> tensor<64x{n}xf32>
    %3 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%2 : tensor<64x{n}xf32>) outs(%0 : tensor<64x{n}xf32>) {{
    ^bb0(%in: f32, %out: f32):
      %4 = arith.maximumf %in, %cst : f32
      %5 = math.exp %4 : f32
      %6 = arith.mulf %5, %in : f32
      linalg.yield %6 : f32
    }} -> tensor<64x{n}xf32>
{gather}    %s = tensor.extract_slice %3[0, 0] [64, {n}] [1, 1] : tensor<64x{n}xf32> to tensor<64x{n}xf32>
    return %s : tensor<64x{n}xf32>
  }}
"""
GATHER = """    %g{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%ids : tensor<64xi64>) outs(%0 : tensor<64x{n}xf32>) {{
    ^bb0(%in: i64, %out: f32):
      %7 = arith.index_cast %in : i64 to index
      %8 = linalg.index 1 : index
      %9 = arith.cmpi slt, %7, %c77 : index
      cf.assert %9, "index must be smaller than dim size"
      %10 = arith.cmpi sge, %in, %c0_i64 : i64
      cf.assert %10, "index must be larger or equal to 0"
      %extracted = tensor.extract %arg1[%7, %8] : tensor<{n}x{n}xf32>
      linalg.yield %extracted : f32
    }} -> tensor<64x{n}xf32>
"""


def generate(target_bytes: int, gather_every: int = 20, seed: int = 0) -> tuple[str, int]:
    """(text, number of cf.assert ops)."""
    rnd = random.Random(seed)
    parts = ["module {\n"]
    size, i, asserts = 0, 0, 0
    while size < target_bytes:
        n = rnd.choice([77, 128, 256, 768])
        gather = GATHER.format(i=i, n=n) if i % gather_every == 0 else ""
        asserts += 2 if gather else 0
        hexs = "".join(rnd.choice("0123456789ABCDEF") for _ in range(32))
        chunk = PLAIN.format(i=i, n=n, hex=hexs, gather=gather)
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append("}\n")
    return "".join(parts), asserts
