"""Files: `--fix` killed between write and rename never leaves a half-written file or a
temporary file; a file changed on disk during the check is reported, not clobbered; read-only
files are reported (tests/test_fix_cli.py has the read-only cases with their findings).

The kills are deterministic: the CLI runs in a child Python whose `os.write`, `os.fsync`,
`os.link` or `os.replace` sends SIGKILL to itself at the chosen point of `write_atomic` (the
test's own patch in the child, no hook in the product). `make soak` adds kills at random times.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import REPRO, run_cli

# The child: patch one os function to SIGKILL the process when write_atomic reaches it.
CHILD = textwrap.dedent("""
    import os, signal, sys
    point, args = sys.argv[1], sys.argv[2:]
    real = {"write": os.write, "fsync": os.fsync, "link": os.link, "replace": os.replace}

    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "half-write":  # half of the data written, then killed
        def half(fd, data):
            if len(data) > 1000:
                real["write"](fd, bytes(data[: len(data) // 2]))
                die()
            return real["write"](fd, data)
        os.write = half
    elif point in real:
        os.write = os.write
        setattr(os, point, die)
    from mlir_lsp_asserts.cli import main
    sys.exit(main(args))
""")


def killed_fix(point: str, path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, point, "--check", "--fix", str(path)],
                          capture_output=True, text=True, timeout=120)


def leftovers(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n != "r.mlir")


@pytest.mark.parametrize("point", ["half-write", "fsync", "link", "replace"])
def test_fix_killed_at_each_point_of_the_write_leaves_the_old_file(tmp_path, point):
    original = REPRO.read_bytes()
    f = tmp_path / "r.mlir"
    f.write_bytes(original)
    os.chmod(f, 0o640)
    p = killed_fix(point, f)
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stderr[-2000:])
    assert f.read_bytes() == original  # never half-written, never empty
    assert (f.stat().st_mode & 0o777) == 0o640
    left = leftovers(tmp_path)
    if point == "replace":
        # killed after the complete temporary file got its name: the one leftover there can be,
        # named after the dead process; the next write of the file removes it
        assert len(left) == 1 and left[0].startswith(".r.mlir.") and left[0].endswith(".mlir-lsp.tmp"), left
    else:
        assert left == [], left  # the data was in an unnamed (O_TMPFILE) file: nothing to clean
    r = run_cli("--check", "--fix", f)
    assert r.returncode == 0, r.stderr
    assert "cf.assert %" not in f.read_text()
    assert leftovers(tmp_path) == []
    assert (f.stat().st_mode & 0o777) == 0o640


def test_a_temporary_file_of_a_live_process_is_left_alone(tmp_path):
    f = tmp_path / "r.mlir"
    f.write_bytes(REPRO.read_bytes())
    live = tmp_path / f".r.mlir.{os.getpid()}.abcd.mlir-lsp.tmp"  # this test's own process: alive
    live.write_text("in progress")
    assert run_cli("--check", "--fix", f).returncode == 0
    assert live.exists()


def test_file_changed_on_disk_during_the_check_is_reported_not_clobbered(tmp_path):
    f = tmp_path / "r.mlir"
    f.write_bytes(REPRO.read_bytes())
    edited = REPRO.read_text() + "// typed in an editor meanwhile\n"
    # the child edits the file while the fixes are computed (after the read, before the write)
    child = textwrap.dedent(f"""
        import sys
        import mlir_lsp_asserts.file_fix as apply
        real = apply.fix_text
        def fix_text(*a, **k):
            out = real(*a, **k)
            open({str(f)!r}, "w").write({edited!r})
            return out
        apply.fix_text = fix_text
        from mlir_lsp_asserts.cli import main
        sys.exit(main(["--check", "--fix", {str(f)!r}]))
    """)
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    errs = [ln for ln in p.stderr.splitlines() if ln.startswith("mlir-lsp: error:")]
    assert len(errs) == 1 and str(f) in errs[0] and "changed on disk during the check" in errs[0]
    assert f.read_text() == edited  # the editor's text stands
    assert leftovers(tmp_path) == []


def test_file_replaced_by_a_folder_or_removed_during_the_check(tmp_path):
    f = tmp_path / "r.mlir"
    f.write_bytes(REPRO.read_bytes())
    child = textwrap.dedent(f"""
        import os, sys
        import mlir_lsp_asserts.file_fix as apply
        real = apply.fix_text
        def fix_text(*a, **k):
            out = real(*a, **k)
            os.unlink({str(f)!r})
            return out
        apply.fix_text = fix_text
        from mlir_lsp_asserts.cli import main
        sys.exit(main(["--check", "--fix", {str(f)!r}]))
    """)
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert str(f) in p.stderr
    assert not f.exists() and os.listdir(tmp_path) == []  # not re-created


def test_a_baseline_that_is_a_fifo_a_device_or_huge_is_refused_without_reading_it(tmp_path):
    """A cloned repository's `dispatch.baseline` (read in Restricted Mode too: only read) named a
    fifo, which hung the count's answer forever, or a link to /dev/zero, which the server read
    until its memory ran out. Each is refused with one line, at once (a child with a timeout,
    so that a hang fails the test instead of blocking it)."""
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "folder.json").mkdir()
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate((128 << 20) + 1)  # sparse: no disk used
    names = ["fifo.json", "zero.json", "folder.json", "huge.json"]
    code = ("import sys\nfrom mlir_lsp_asserts.dispatch.baselines import BaselineError, load_baseline\n"
            "for p in sys.argv[1:]:\n    try:\n        load_baseline(p, regular_only=True)\n"
            "    except BaselineError as e:\n        print(e)\n")
    p = subprocess.run([sys.executable, "-c", code, *(str(tmp_path / n) for n in names)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr
    said = dict(zip(names, p.stdout.splitlines(), strict=True))
    assert said["fifo.json"].endswith("cannot read baseline: not a regular file")
    assert said["zero.json"].endswith("cannot read baseline: not a regular file")
    assert said["folder.json"].endswith("cannot read baseline: a folder")
    assert said["huge.json"].endswith("cannot read baseline: 134,217,729 bytes, above the 128 MiB such a file may have")


def test_a_baseline_given_on_the_command_line_may_be_a_pipe_and_a_device_stops_at_the_bound(tmp_path):
    """`--baseline <(git show main:counts.json)` is a pipe: read, as before. A link to /dev/zero
    named there is read up to the 128 MiB bound and refused, not read until memory runs out."""
    code = ("import sys\nfrom mlir_lsp_asserts.dispatch.baselines import BaselineError, load_baseline\n"
            "print(sorted(load_baseline(sys.argv[1]).counts))\n"
            "try:\n    load_baseline(sys.argv[2])\nexcept BaselineError as e:\n    print(e)\n")
    fifo = tmp_path / "counts.json"
    os.mkfifo(fifo)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    p = subprocess.Popen([sys.executable, "-c", code, str(fifo), str(tmp_path / "zero.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "w") as w:  # the writer comes after the reader opened it, as a shell's <(...)
        w.write('{"version": 1, "counts": {"m.mlir": {"default": 4}}}')
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and not err, err
    listed, refused = out.splitlines()
    assert listed == "['m.mlir']"
    assert refused.endswith("cannot read baseline: more than the 128 MiB such a file may have")
