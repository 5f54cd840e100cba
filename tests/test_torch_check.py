"""`mlir-lsp --check` on torch IR (issue 38): the file is lowered to `input` only, and each torch
op whose lowering puts asserts into linalg regions is an MLA004 finding at the op's line, the
same findings `--check --what-if` reports; where the file is not lowered, one line per file says
so (never a bare "0 findings"), and the exit code follows the findings."""

from __future__ import annotations

import json

import pytest

from conftest import DATA, ENCODER_TORCH_GROUP, MODELS, run_cli, write

CLIP = MODELS / "clip_l.torch.mlir"
ENCODER = MODELS / "sdxl_prompt_encoder.torch.mlir"
INLINE = DATA / "torch_inline" / "position_twice.torch.mlir"
NOT_LOWERED = "torch IR: its asserts appear when it is lowered"


def _found(*args, env=None, timeout=600) -> tuple[int, list[tuple[int, int, str]], str]:
    r = run_cli("--check", "--output-format", "json", *args, env=env, timeout=timeout)
    items = json.loads(r.stdout) if r.stdout.strip() else []
    return r.returncode, [(f["range"]["start"]["line"] + 1, f["range"]["start"]["character"] + 1, f["code"])
                           for f in items], r.stderr


def test_check_reports_the_embedding_lookups_of_clip_l(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    code, found, _ = _found(CLIP, env=env)
    assert code == 1
    assert found == [(210, 10, "MLA004"), (216, 10, "MLA004")]
    r = run_cli("--check", CLIP, env=env)
    assert "`torch.aten.embedding` lowers to 2 cf.assert" in r.stdout and "Found 2 findings" in r.stderr
    _, measured, _ = _found("--what-if", CLIP, env=env, timeout=900)
    assert measured == found


def test_torch_ir_on_stdin_is_lowered_with_its_weights(tmp_path):
    """`mlir-lsp --check -` (and its what-if) on an export with its weights inline: the lowering gets
    the whole text, weights in, as a file's does (it got the IR part only, and failed: 'the lowered
    IR refers to 1 resource(s) that the input does not hold')."""
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    r = run_cli("--check", "--output-format", "json", "-", input=CLIP.read_bytes(), env=env, timeout=600)
    items = json.loads(r.stdout)
    assert r.returncode == 1 and NOT_LOWERED not in r.stderr, r.stderr
    assert [(f["range"]["start"]["line"] + 1, f["code"]) for f in items] == [(210, "MLA004"), (216, "MLA004")]
    w = run_cli("--check", "--what-if", "--output-format", "json", "-", input=CLIP.read_bytes(), env=env,
                timeout=900)
    assert w.returncode == 1 and "not measured" not in w.stderr, w.stderr
    assert [(f["range"]["start"]["line"] + 1, f["code"]) for f in json.loads(w.stdout)] == [
        (210, "MLA004"), (216, "MLA004")]


@pytest.mark.slow
@ENCODER_TORCH_GROUP
def test_check_on_the_prompt_encoder_finds_what_the_what_if_finds(encoder_cache):
    env = {"XDG_CACHE_HOME": str(encoder_cache)}
    code, found, _ = _found(ENCODER, env=env)
    assert code == 1
    assert [c for *_, c in found] == ["MLA004"] * 8
    assert [ln for ln, *_ in found] == [713, 719, 1858, 1864, 4999, 5003, 5787, 5791]
    code_w, measured, _ = _found("--what-if", ENCODER, env=env, timeout=900)
    assert code_w == 1 and measured == found


def test_a_weights_inline_export_is_lowered_with_its_weights(tmp_path):
    code, found, err = _found(INLINE, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert code == 1, err
    assert found == [(11, 10, "MLA004"), (18, 10, "MLA004"), (28, 10, "MLA004")]


def _one_note(stderr: str, path) -> str:
    (line,) = [ln for ln in stderr.splitlines() if NOT_LOWERED in ln]
    assert line.startswith(f"mlir-lsp: {path}: {NOT_LOWERED}; ")
    return line


def test_not_lowered_says_so_in_one_line_and_exits_clean(tmp_path):
    r = run_cli("--check", "--no-lower", CLIP)
    assert r.returncode == 0 and r.stdout == ""
    assert _one_note(r.stderr, CLIP).endswith("not lowered (--no-lower, or lower-torch = false in the config)")
    assert "Found 0 findings" in r.stderr
    f = write(tmp_path, "model.torch.mlir", CLIP.read_text())
    write(tmp_path, "mlir-lsp.toml", "lower-torch = false\n")
    r = run_cli("--check", f, cwd=tmp_path)
    assert r.returncode == 0
    _one_note(r.stderr, f)


def test_without_a_compiler_or_a_lowering_it_says_why(tmp_path):
    r = run_cli("--check", "--compiler", tmp_path / "no-iree-compile", CLIP)
    assert r.returncode == 0
    assert "not lowered: iree-compile not found at the configured path" in _one_note(r.stderr, CLIP)
    text = CLIP.read_text().replace("torch.aten.embedding", "torch.aten.embeddingx", 1)
    bad = write(tmp_path, "bad.torch.mlir", text)
    r = run_cli("--check", bad, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0
    assert "could not lower it to input: iree-compile failed (exit 1)" in _one_note(r.stderr, bad)


def test_plain_ir_is_not_lowered(tmp_path):
    r = run_cli("--check", "--compiler", tmp_path / "no-iree-compile", MODELS / "clip_l.input.mlir")
    assert r.returncode == 1 and NOT_LOWERED not in r.stderr
