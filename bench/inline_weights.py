"""Makes the third benchmark shape: an export with its weights inline.

iree-turbine's `aot.export` writes every parameter into the module unless told to externalize
them: each weight becomes `dense_resource<NAME>` and its bytes one hex string in a
`{-# dialect_resources: { builtin: { NAME: "0x<alignment LE><bytes>" } } #-}` section at the end
of the file. This turns an externalized export (`#flow.parameter.named` globals, e.g.
../shared/fixtures/models/clip_l.input.mlir) into that shape: each parameter global becomes a
`dense_resource` of the tensor's exact byte size, filled with seeded pseudo-random bytes. The
result parses with iree-opt (`python bench/inline_weights.py --verify`).

    python bench/inline_weights.py SRC.mlir OUT.mlir [--bytecode OUT.mlirbc] [--verify]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys

PARAM = re.compile(r'#flow\.parameter\.named<"[^"]*"::"([^"]*)">\s*:\s*tensor<([^>]*)>')
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8,
                 "si8": 1, "ui8": 1, "f8E4M3FNUZ": 1, "f8E5M2FNUZ": 1}
CHUNK = 8 << 20


def _byte_size(shape_and_type: str) -> int:
    *dims, elem = shape_and_type.split("x")
    n = 1
    for d in dims:
        n *= int(d)
    if elem not in ELEMENT_BYTES:
        raise SystemExit(f"inline_weights: unknown element type {elem!r}")
    return n * ELEMENT_BYTES[elem]


def _key(name: str) -> str:
    return "w_" + re.sub(r"[^\w.]", "_", name)


def make(src: str, out: str, seed: int = 0, max_weight_bytes: int | None = None) -> dict:
    """Write the inline-weights form of `src` to `out`; returns sizes. With `max_weight_bytes`,
    parameters are inlined in order while their total fits; the others stay external (a
    smaller file of the same shape, e.g. for tests)."""
    text = open(src, encoding="utf-8").read()
    blobs: list[tuple[str, int]] = []
    seen: dict[str, str | None] = {}
    total = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal total
        name = m.group(1)
        if name not in seen:
            size = _byte_size(m.group(2))
            if max_weight_bytes is not None and total + size > max_weight_bytes:
                seen[name] = None
            else:
                seen[name] = _key(name)
                blobs.append((seen[name], size))
                total += size
        key = seen[name]
        return m.group(0) if key is None else f"dense_resource<{key}> : tensor<{m.group(2)}>"

    ir = PARAM.sub(repl, text)
    if not blobs:
        raise SystemExit(f"inline_weights: {src} has no #flow.parameter.named globals")
    rng = random.Random(seed)
    tmp = out + ".part"
    with open(tmp, "w", encoding="ascii" if ir.isascii() else "utf-8") as f:
        f.write(ir.rstrip("\n") + "\n\n{-#\n  dialect_resources: {\n    builtin: {\n")
        for n, (key, size) in enumerate(blobs):
            f.write(f'      {key}: "0x04000000')  # the blob's alignment (4), little-endian
            left = size
            while left:
                step = min(left, CHUNK)
                f.write(rng.randbytes(step).hex().upper())
                left -= step
            f.write('",\n' if n + 1 < len(blobs) else '"\n')
        f.write("    }\n  }\n#-}\n")
    os.replace(tmp, out)
    return {"ir_bytes": len(ir.encode()), "file_bytes": os.path.getsize(out), "blobs": len(blobs),
            "weight_bytes": sum(s for _k, s in blobs)}


def iree_tool(name: str) -> str:
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else (shutil.which(name) or name)


def to_bytecode(text_path: str, out: str) -> None:
    subprocess.run([iree_tool("iree-opt"), "--emit-bytecode", text_path, "-o", out], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--bytecode", metavar="OUT.mlirbc")
    ap.add_argument("--verify", action="store_true", help="parse the result with iree-opt")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    info = make(a.src, a.out, a.seed)
    print(f"{a.out}: {info['file_bytes'] / 1e6:.1f} MB, IR {info['ir_bytes'] / 1e3:.0f} KB, "
          f"{info['blobs']} weights inline ({info['weight_bytes'] / 1e6:.1f} MB)")
    if a.verify:
        subprocess.run([iree_tool("iree-opt"), a.out, "-o", os.devnull], check=True)
        print("iree-opt parses it")
    if a.bytecode:
        to_bytecode(a.out, a.bytecode)
        print(f"{a.bytecode}: {os.path.getsize(a.bytecode) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
