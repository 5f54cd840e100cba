"""A large text is read whole with the garbage collector paused (server/sync_feature.py,
`collector_paused`: its collections were a third of the server's open of 85,000 small
functions): it is on again after the read, after a read that failed, and a small text never
turns it off."""

from __future__ import annotations

import gc

import pytest

from mlir_lsp_asserts.server import sync_feature


def test_the_collector_is_paused_only_while_a_large_text_is_read_and_always_back_on():
    seen = []
    with sync_feature.collector_paused(10):
        seen.append(gc.isenabled())
    with sync_feature.collector_paused(sync_feature.PAUSE_COLLECTOR_CHARS):
        seen.append(gc.isenabled())
    with pytest.raises(ValueError), sync_feature.collector_paused(1 << 30):
        seen.append(gc.isenabled())
        raise ValueError("a read that failed")
    assert seen == [True, False, False]
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_outer_one_in_charge():
    gc.disable()
    try:
        with sync_feature.collector_paused(1 << 30):
            pass
        assert not gc.isenabled(), "the inner read turned on a collector someone else had paused"
    finally:
        gc.enable()
