"""A pytest plugin for tests/test_suite_groups.py: after collection, writes each test's xdist group
(as conftest names it), whether it uses `encoder_cache`, and its markers' names to the JSON file
named by $MLIR_LSP_GROUPS_OUT. Loaded with `-p xdist_groups_dump` (tests/ on PYTHONPATH)."""

from __future__ import annotations

import json
import os


def pytest_collection_finish(session):
    from conftest import _xdist_group

    groups = {item.nodeid: [_xdist_group(item) if item.get_closest_marker("xdist_group") else None,
                            "encoder_cache" in item.fixturenames, sorted({m.name for m in item.iter_markers()})]
              for item in session.items}
    with open(os.environ["MLIR_LSP_GROUPS_OUT"], "w") as f:
        json.dump(groups, f)
