"""The server's pause-in-typing scheduler (server/debouncer.py): a run happens once per pause,
after the last edit, never after a cancel or a stop, and a new document's earlier deadline is
not held up by another's later one."""

from __future__ import annotations

import threading
import time

from mlir_lsp_asserts.server.debouncer import Debouncer


def test_many_edits_in_a_row_give_one_run_with_the_last_edits_arguments():
    ran: list[int] = []
    done = threading.Event()
    d = Debouncer("test")
    for serial in range(200):
        d.schedule("a.mlir", 0.2, lambda s: (ran.append(s), done.set()), serial)
    assert done.wait(10)
    time.sleep(0.3)
    assert ran == [199]
    assert threading.active_count() < 20, "a thread per edit"


def test_a_cancelled_or_stopped_run_never_happens():
    ran: list[str] = []
    d = Debouncer("test")
    d.schedule("a.mlir", 0.1, ran.append, "a")
    d.cancel("a.mlir")
    d.schedule("b.mlir", 0.1, ran.append, "b")
    d.stop()
    d.schedule("c.mlir", 0.1, ran.append, "c")  # after the stop: refused
    time.sleep(0.5)
    assert ran == []


def test_an_earlier_deadline_of_another_document_runs_first():
    order: list[str] = []
    both = threading.Event()
    d = Debouncer("test")
    d.schedule("slow.mlir", 3.0, lambda: (order.append("slow"), both.set()))
    time.sleep(0.05)  # the thread now sleeps until slow's deadline
    d.schedule("quick.mlir", 0.05, order.append, "quick")
    time.sleep(1.0)
    assert order == ["quick"], "the later deadline held the earlier one up"
    assert both.wait(10) and order == ["quick", "slow"]
