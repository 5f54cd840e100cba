"""A model zoo across CI machines: `--shard K/N` runs, each its own process, written with
`--results-out` and merged by `--merge-results` into the report, exit code and baseline of one
run (real iree-compile; the on-disk count cache, shared by the module, compiles each file once)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ENCODER_GROUP, MODELS, REPRO, run_cli
from mlir_lsp_asserts.shards import select, shard_of

N = 3


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> dict:
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}


def _no_seconds(report: str) -> list:
    """A --dispatch-count JSON report without its compile times (a measurement, not a result)."""
    items = json.loads(report)
    for item in items:
        item.pop("seconds")
    return items


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0", "2/2/2"])
def test_bad_shard_is_a_usage_error(bad, tmp_path):
    r = run_cli("--check", "--shard", bad, REPRO)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("mlir-lsp: error: --shard") and "K/N" in line


def test_split_is_stable_and_whole(tmp_path):
    """Every file in exactly one shard; adding files moves none of the others."""
    names = [f"models/m{i}.mlir" for i in range(40)]
    shards = [select(names, (k, N)) for k in range(1, N + 1)]
    assert sorted(sum(shards, [])) == sorted(names)
    assert all(shards)  # 40 files: none of the 3 shards is empty
    more = [*names, *(f"models/new{i}.mlir" for i in range(10))]
    assert all(shard_of(n, N) == k for k, part in enumerate(shards, 1) for n in part)
    assert [select(more, (k, N))[:len(shards[k - 1])] for k in range(1, N + 1)] == shards
    assert shard_of("./models/../models/m1.mlir", N) == shard_of("models/m1.mlir", N)


def _zoo(tmp_path: Path) -> list[str]:
    """The fixtures (repro, encoder, clip_l) and two small files made here, by relative path."""
    (tmp_path / "models").mkdir()
    for src in (REPRO, MODELS / "sdxl_prompt_encoder.input.mlir", MODELS / "clip_l.input.mlir"):
        shutil.copyfile(src, tmp_path / "models" / src.name)
    text = REPRO.read_text()
    (tmp_path / "models" / "small_a.mlir").write_text(text.replace("@main", "@first"))
    (tmp_path / "models" / "small_b.mlir").write_text(text.replace("@main", "@second"))
    return sorted(f"models/{p.name}" for p in (tmp_path / "models").iterdir())


@pytest.mark.slow
@ENCODER_GROUP
def test_dispatch_count_shards_merged_equal_one_run(tmp_path, encoder_cache):
    """The zoo's prompt encoder is counted from ENCODER_GROUP's cache when a test of the group
    compiled it first (as a CI machine's second run does)."""
    cache = {"XDG_CACHE_HOME": str(encoder_cache)}
    files = _zoo(tmp_path)
    common = ("--dispatch-count", "--update-baseline", "--output-format", "json", *files)
    one = run_cli(*common, "--baseline", "one.json", cwd=tmp_path, env=cache, timeout=3600)
    assert one.returncode == 0, one.stderr
    parts = []
    for k in range(1, N + 1):
        r = run_cli(*common, "--baseline", "merged.json", "--shard", f"{k}/{N}", "--results-out", f"r{k}.json",
                    cwd=tmp_path, env=cache, timeout=3600)
        assert r.returncode == 0, r.stderr
        parts.append([item["path"] for item in json.loads(r.stdout)])
    assert not (tmp_path / "merged.json").exists()  # a shard leaves the baseline to the merge
    assert sorted(sum(parts, [])) == files and all(parts)
    merged = run_cli("--merge-results", "r3.json", "r1.json", "r2.json", "--baseline", "merged.json",
                     "--update-baseline", "--output-format", "json", cwd=tmp_path, env=cache)
    assert merged.returncode == 0, merged.stderr
    assert (tmp_path / "merged.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    assert _no_seconds(merged.stdout) == _no_seconds(one.stdout)
    assert [item["path"] for item in json.loads(merged.stdout)] == files
    # the concise report too, and the exit code of a count over its budget (2 files have 4)
    over = ("--dispatch-count", "--max-dispatches", "3", *files)
    one_over = run_cli(*over, cwd=tmp_path, env=cache)
    for k in range(1, N + 1):
        run_cli(*over, "--shard", f"{k}/{N}", "--results-out", f"c{k}.json", cwd=tmp_path, env=cache)
    merged_over = run_cli("--merge-results", "c1.json", "c2.json", "c3.json", cwd=tmp_path, env=cache)
    assert one_over.returncode == merged_over.returncode == 1
    strip = [ln.split("  [profile")[0] for ln in one_over.stdout.splitlines()]
    assert strip == [ln.split("  [profile")[0] for ln in merged_over.stdout.splitlines()]


def test_check_shards_merged_equal_one_run(tmp_path):
    files = _zoo(tmp_path)
    outputs = {}
    for fmt in ("json", "concise", "github", "full", "json-lines"):
        one = run_cli("--check", "--output-format", fmt, "models", cwd=tmp_path)
        outputs[fmt] = one.stdout
        for k in range(1, N + 1):
            run_cli("--check", "--output-format", fmt, "--shard", f"{k}/{N}", "--results-out", f"r{k}.json",
                    "models", cwd=tmp_path)
        merged = run_cli("--merge-results", *(f"r{k}.json" for k in range(1, N + 1)), "--output-format", fmt,
                         cwd=tmp_path)
        assert merged.stdout == one.stdout and merged.returncode == one.returncode == 1, fmt
    assert {item["path"] for item in json.loads(outputs["json"])} == set(files)  # each has its asserts


def test_merge_refuses_a_missing_or_foreign_shard(tmp_path):
    _zoo(tmp_path)
    for k in (1, 2):
        run_cli("--check", "--shard", f"{k}/{N}", "--results-out", f"r{k}.json", "models", cwd=tmp_path)
    run_cli("--check", "--shard", f"3/{N}", "--results-out", "other.json", "models/small_a.mlir", cwd=tmp_path)
    missing = run_cli("--merge-results", "r1.json", "r2.json", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.strip() == "mlir-lsp: error: shard 3 of 3 missing"
    foreign = run_cli("--merge-results", "r1.json", "r2.json", "other.json", cwd=tmp_path)
    assert foreign.returncode == 2 and "another run than r1.json" in foreign.stderr
    twice = run_cli("--merge-results", "r1.json", "r1.json", "r2.json", cwd=tmp_path)
    assert twice.returncode == 2 and "shard 1/3 again" in twice.stderr


def test_dispatch_diff_shards_merged_equal_one_run(tmp_path, cache):
    """Three small files against the same compiles with the asserts stripped by IREE: each is
    one dispatch up, so one run and the merge both exit 1 with the same report."""
    _zoo(tmp_path)
    files = ["models/hoisted_gather.mlir", "models/small_a.mlir", "models/small_b.mlir"]
    common = ("--dispatch-diff", "--against-flags=--iree-opt-strip-assertions=true", *files)
    one = run_cli(*common, "--output-format", "json", cwd=tmp_path, env=cache, timeout=600)
    for k in range(1, N + 1):
        run_cli(*common, "--shard", f"{k}/{N}", "--results-out", f"d{k}.json", cwd=tmp_path, env=cache, timeout=600)
    merged = run_cli("--merge-results", "d1.json", "d2.json", "d3.json", "--output-format", "json", cwd=tmp_path)
    assert one.returncode == merged.returncode == 1, one.stderr + merged.stderr

    def timeless(report: str) -> list:
        items = json.loads(report)
        for item in items:
            item["current"].pop("seconds")
            item["against"].pop("seconds")
        return items

    assert timeless(merged.stdout) == timeless(one.stdout)
    assert [(d["path"], d["delta"]) for d in json.loads(one.stdout)] == [(f, 1) for f in files]
