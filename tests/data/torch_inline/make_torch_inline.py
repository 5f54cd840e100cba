"""Regenerates the weights-inline torch export of tests/compat (issue 38) and torch's outputs.

    .venv/bin/python tests/data/torch_inline/make_torch_inline.py

Needs the `export` extra of the project's .venv (torch 2.13 CPU, iree-turbine 3.9, IREE 3.13):
exporting in each compatibility venv would cost each its own torch (GBs), so the export is made
once here and committed. The module is the case users met beside IREE 3.8: the same position
lookup twice (`nn.Embedding(77, 64)` of a constant `arange(77)` buffer), a token embedding and a
linear, exported with `iree.turbine.aot.export` and its weights inline (no
`externalize_module_parameters`: every weight is a `dense_resource` blob in the file's
`{-# dialect_resources #-}` section). Writes, beside this script:

- position_twice.torch.mlir   the export (torch dialect), deterministic for a given torch/turbine
- tokens.npy                  the input: (1, 77) int64 token ids
- expected.npy                torch's output for them: (1, 77, 64) float32
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from iree.turbine import aot

HERE = Path(__file__).resolve().parent
VOCAB, POSITIONS, WIDTH = 100, 77, 64


class PositionTwice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Embedding(POSITIONS, WIDTH)
        self.lin = torch.nn.Linear(WIDTH, WIDTH)
        self.register_buffer("ids", torch.arange(POSITIONS).unsqueeze(0))

    def forward(self, tokens):
        return self.lin(self.tok(tokens) + self.pos(self.ids)) * self.pos(self.ids)


def main() -> None:
    torch.manual_seed(0)
    model = PositionTwice().eval()
    tokens = torch.randint(0, VOCAB, (1, POSITIONS), dtype=torch.int64, generator=torch.Generator().manual_seed(1))
    exported = aot.export(model, args=(tokens,))
    (HERE / "position_twice.torch.mlir").write_text(str(exported.mlir_module))
    with torch.no_grad():
        expected = model(tokens).numpy()
    np.save(HERE / "tokens.npy", tokens.numpy())
    np.save(HERE / "expected.npy", expected)
    print(f"wrote {HERE}: export, tokens {tokens.shape}, expected {expected.shape}")


if __name__ == "__main__":
    main()
