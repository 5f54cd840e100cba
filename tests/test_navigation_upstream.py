"""Our navigation against LLVM's own mlir-lsp-server (issue 39): both servers over stdio, the same
definition, references and hover requests on every name of the 237 public pieces in
`../shared/navigation` and of tests/data/navigation, and documentSymbol on each file. The
agreement is printed per request kind and per position kind (see navigation_diff.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import DATA
from navigation_diff import UPSTREAM, all_pieces, run


@pytest.mark.slow
@pytest.mark.e2e  # LLVM's mlir-lsp-server beside ours
def test_navigation_agrees_with_mlir_lsp_server():
    if shutil.which(UPSTREAM) is None:  # .ci/run installs it: in CI its absence is a failure
        missing = f"{UPSTREAM} is missing (Debian package mlir-22-tools): nothing to compare with"
        pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)
    pieces = all_pieces()
    assert len(pieces) == 237, "../shared/navigation/pieces holds the 237 public pieces"
    report = run(pieces + sorted((DATA / "navigation").glob("*.mlir")))
    table = report.table()
    print(table)
    ours = [c for c in report.crashes if c[0] == "ours"]
    problems = []
    if report.definition.ratio() < 0.99:
        problems.append(f"definition agrees on {100 * report.definition.ratio():.1f}% (< 99%)")
    if report.references.ratio() < 0.97:
        problems.append(f"references agree on {100 * report.references.ratio():.1f}% (< 97%)")
    if report.hover.ratio() < 0.99:
        problems.append(f"hover answers {100 * report.hover.ratio():.1f}% of upstream's (< 99%)")
    if report.symbols_differ:
        problems.append(f"document symbols differ on {[d[0] for d in report.symbols_differ]}")
    if ours or report.errors:
        problems.append(f"our server crashed {ours} or answered an error {report.errors[:5]}")
    # Each position listed in upstream_wrong.tsv must still be one where the answers differ.
    stale = sorted(set(report.wrong) - {(n, ln - 1, c - 1, r) for n, ln, c, r in report.judged}) + [
        k for k, (_why, differs) in report.judged.items() if not differs]
    if stale:
        problems.append(f"upstream_wrong.tsv lists positions where the servers agree or that were not asked: {stale}")
    slow = f"{len(report.slow)} of our requests took over 1 s: {report.slow[:10]}"
    assert not problems, "\n".join([*problems, slow, table])
