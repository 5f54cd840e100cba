"""Opt levels known up front: the flags a project compiles with tell whether IREE strips the
asserts itself (`--iree-opt-level=O1` and up, `--iree-global-optimization-opt-level`,
`--iree-opt-strip-assertions`). Where they do, `--check` reports MLA001 (and MLA002) at
information severity and says so, without compiling; MLA003 says the check does not reach
runtime. The precedence is checked against the real iree-compile on the repro (4 dispatches with
the asserts, 3 stripped)."""

from __future__ import annotations

import json

import pytest

from conftest import REPRO, run_cli, write
from mlir_lsp_asserts.iree_flags.strip_assertions import asserts_stripped

O3_NOTE = ("IREE strips this assert at --iree-opt-level=O3 (--iree-opt-strip-assertions): "
           "it costs no dispatch with these flags")

PRECEDENCE = [
    ([], False, ""),
    (["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"], False, ""),
    (["--iree-opt-level=O0"], False, "--iree-opt-level=O0"),
    (["--iree-opt-level=O1"], True, "--iree-opt-level=O1"),
    (["--iree-opt-level=O3"], True, "--iree-opt-level=O3"),
    (["-iree-opt-level=O2"], True, "-iree-opt-level=O2"),
    (["--iree-opt-level", "O3"], True, "--iree-opt-level=O3"),
    (["--iree-opt-level=O0", "--iree-opt-level=O3"], True, "--iree-opt-level=O3"),  # the last wins
    (["--iree-opt-level=O3", "--iree-opt-level=O0"], False, "--iree-opt-level=O0"),
    (["--iree-global-optimization-opt-level=O1"], True, "--iree-global-optimization-opt-level=O1"),
    # the pipeline's own level wins over the global one, in either order
    (["--iree-opt-level=O3", "--iree-global-optimization-opt-level=O0"], False,
     "--iree-global-optimization-opt-level=O0"),
    (["--iree-global-optimization-opt-level=O0", "--iree-opt-level=O3"], False,
     "--iree-global-optimization-opt-level=O0"),
    (["--iree-opt-level=O0", "--iree-global-optimization-opt-level=O2"], True,
     "--iree-global-optimization-opt-level=O2"),
    # an explicit strip flag wins over every level
    (["--iree-opt-strip-assertions"], True, "--iree-opt-strip-assertions"),
    (["--iree-opt-strip-assertions=1"], True, "--iree-opt-strip-assertions=1"),
    (["--iree-opt-level=O0", "--iree-opt-strip-assertions=true"], True, "--iree-opt-strip-assertions=true"),
    (["--iree-opt-level=O3", "--iree-opt-strip-assertions=false"], False, "--iree-opt-strip-assertions=false"),
    (["--iree-opt-strip-assertions=0", "--iree-opt-level=O3"], False, "--iree-opt-strip-assertions=0"),
    (["--iree-global-optimization-opt-level=O2", "--iree-opt-strip-assertions=false"], False,
     "--iree-opt-strip-assertions=false"),
    (["--iree-opt-strip-assertions", "--iree-opt-strip-assertions=false"], False,
     "--iree-opt-strip-assertions=false"),
    # values iree-compile rejects decide nothing
    (["--iree-opt-level=3"], False, ""),
    (["--iree-opt-level=O3", "--iree-opt-strip-assertions=yes"], True, "--iree-opt-level=O3"),
    # other flags that mention a level do not
    (["--iree-dispatch-creation-opt-level=O3"], False, ""),
]


@pytest.mark.parametrize(("flags", "stripped", "by"), PRECEDENCE)
def test_precedence(flags, stripped, by):
    d = asserts_stripped(flags)
    assert (d.stripped, d.by) == (stripped, by)


def test_phrase_names_the_deciding_flag():
    assert asserts_stripped(["--iree-opt-level=O3"]).phrase == "at --iree-opt-level=O3 (--iree-opt-strip-assertions)"
    assert asserts_stripped(["--iree-opt-strip-assertions"]).phrase == "with --iree-opt-strip-assertions"


def _count(flags: str, env) -> int:
    r = run_cli("--dispatch-count", "--output-format", "json", "--flags", flags, REPRO, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]["flow_dispatches"]


@pytest.mark.slow
@pytest.mark.parametrize("flags", [
    "--iree-opt-level=O3 --iree-global-optimization-opt-level=O0",
    "--iree-opt-level=O0 --iree-opt-strip-assertions",
    "--iree-global-optimization-opt-level=O2 --iree-opt-strip-assertions=false",
    "--iree-opt-level=O0 --iree-opt-level=O3",
])
def test_the_real_compiler_agrees(tmp_path, flags):
    """The repro's count drops from 4 to 3 exactly when the decision says the asserts go."""
    got = _count(flags, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert got == (3 if asserts_stripped(flags.split()).stripped else 4)


def _json_check(*args, env=None):
    r = run_cli("--check", "--output-format", "json", *args, env=env)
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout)


def test_check_with_o3_is_information_and_compiles_nothing(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": str(tmp_path / "no-bin")}
    items = _json_check("--flags=--iree-opt-level=O3", "--compiler", tmp_path / "no-such-iree-compile", REPRO,
                        env=env)
    assert len(items) == 4 and {i["code"] for i in items} == {"MLA001"}
    assert {i["severity"] for i in items} == {"information"}
    assert all(i["message"].endswith("; " + O3_NOTE) and i["stripped_by"] == "--iree-opt-level=O3" for i in items)
    assert not (tmp_path / "cache").exists()  # no count, no compiler version probe: nothing cached
    concise = run_cli("--check", "--flags=--iree-opt-level=O3", REPRO).concise()
    assert len(concise) == 4 and all(m["msg"].endswith(O3_NOTE) for m in concise)


@pytest.mark.parametrize("flags", [[], ["--flags=--iree-opt-level=O0"], ["--flags=--iree-opt-level=O3 "
                                                                          "--iree-opt-strip-assertions=false"]])
def test_check_without_a_strip_stays_a_warning(flags):
    items = _json_check(*flags, REPRO)
    assert len(items) == 4 and {i["severity"] for i in items} == {"warning"}
    assert not any("IREE strips" in i["message"] or "stripped_by" in i for i in items)


@pytest.mark.parametrize("config", [
    'flags = ["--iree-opt-level=O3"]\n',
    'flags = "--iree-opt-level=O3"\n',
    'profile = "mi300"\n[profiles.mi300]\nflags = ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942", '
    '"--iree-opt-level=O3"]\n',
])
def test_the_config_flags_do_the_same(tmp_path, config):
    model = write(tmp_path, "m/model.mlir", REPRO.read_text())
    write(tmp_path, "m/mlir-lsp.toml", config)
    items = _json_check(model)
    assert len(items) == 4 and {i["severity"] for i in items} == {"information"}
    assert all(i["message"].endswith("; " + O3_NOTE) for i in items)
    # the command line overrides the config's flags
    items = _json_check("--flags=--iree-opt-strip-assertions=false", model)
    assert {i["severity"] for i in items} == {"warning"}


def test_a_bad_config_profile_or_flags_is_one_line(tmp_path):
    model = write(tmp_path, "model.mlir", REPRO.read_text())
    for config, problem in (('profile = "nope"\n', "unknown dispatch profile 'nope'"),
                            ("flags = 3\n", "flags must be a list of strings")):
        write(tmp_path, "mlir-lsp.toml", config)
        r = run_cli("--check", model)
        assert r.returncode == 2 and len(r.error_lines()) == 1 and problem in r.error_lines()[0], r.stderr


def test_a_severity_set_for_the_code_is_kept(tmp_path):
    model = write(tmp_path, "model.mlir", REPRO.read_text())
    write(tmp_path, "mlir-lsp.toml", 'flags = ["--iree-opt-level=O3"]\n[severity]\nMLA001 = "warning"\n')
    items = _json_check(model)
    assert {i["severity"] for i in items} == {"warning"} and all(i["message"].endswith(O3_NOTE) for i in items)


HOST_AND_DISPATCH = """\
func.func @main(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c4 = arith.constant 4 : index
  %ok = arith.cmpi slt, %n, %c4 : index
  cf.assert %ok, "host assert in main"
  %r = flow.dispatch.workgroups(%a, %n) : (tensor<4xf32>, index) -> tensor<4xf32> =
      (%in: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>>, %m: index,
       %out: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>) {
    %t = iree_tensor_ext.dispatch.tensor.load %in, offsets = [0], sizes = [4], strides = [1]
        : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>> -> tensor<4xf32>
    %c3 = arith.constant 3 : index
    %ok2 = arith.cmpi slt, %m, %c3 : index
    cf.assert %ok2, "dispatch assert"
    iree_tensor_ext.dispatch.tensor.store %t, %out, offsets = [0], sizes = [4], strides = [1]
        : tensor<4xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>
    flow.return
  }
  return %r : tensor<4xf32>
}
flow.executable private @ex {
  builtin.module {
    func.func @entry(%m: index) {
      %c3 = arith.constant 3 : index
      %ok = arith.cmpi slt, %m, %c3 : index
      cf.assert %ok, "executable assert"
      return
    }
  }
}
"""


def test_host_and_dispatch_asserts_say_what_reaches_runtime(tmp_path):
    """MLA002 in a dispatch of a function: stripped, information. MLA003: still information, and
    says the module does not check it. An executable's own module is not stripped: its MLA002
    stays a warning with no note. (Each placement checked with iree-compile 3.13 at
    --compile-to=global-optimization: see the rule pages.)"""
    path = write(tmp_path, "host.mlir", HOST_AND_DISPATCH)
    plain = {i["assert_message"]: i for i in _json_check(path)}
    items = {i["assert_message"]: i for i in _json_check("--flags=--iree-opt-level=O2", path)}
    assert sorted(items) == ["dispatch assert", "executable assert", "host assert in main"]
    host, dispatch, exe = items["host assert in main"], items["dispatch assert"], items["executable assert"]
    assert (host["code"], host["severity"]) == ("MLA003", "information")
    assert host["message"] == plain["host assert in main"]["message"] + (
        "; IREE strips this assert at --iree-opt-level=O2 (--iree-opt-strip-assertions): the compiled module does "
        "not check it at runtime (only IREE's own checks of the inputs' shapes and types remain)")
    assert (dispatch["code"], dispatch["severity"]) == ("MLA002", "information")
    assert dispatch["message"].endswith("; IREE strips this assert at --iree-opt-level=O2 "
                                        "(--iree-opt-strip-assertions): it blocks nothing with these flags")
    assert exe == plain["executable assert"] and exe["severity"] == "warning"


@pytest.mark.asyncio(loop_scope="function")
async def test_the_server_follows_its_dispatch_flags(tmp_path):
    """Over real LSP: `dispatch.flags` from initializationOptions make the published MLA001
    information with the note (the dispatch preview off: nothing compiles), and
    didChangeConfiguration to O0 makes them warnings again."""
    import asyncio

    from lsprotocol import types

    from reliability_lsp import lsp_server, open_and_wait

    def mla001(diags):
        return [d for d in diags if d.code == "MLA001"]

    options = {"mlirLsp": {"dispatch": {"enabled": False, "flags": ["--iree-opt-level=O3"]}}}
    async with lsp_server(tmp_path, options=options) as lsp:
        uri = (tmp_path / "repro.mlir").as_uri()
        first = mla001(await open_and_wait(lsp, uri, REPRO.read_text()))
        assert len(first) == 4 and {d.severity for d in first} == {types.DiagnosticSeverity.Information}
        assert all(d.message.endswith(O3_NOTE) for d in first)

        async def after(settings, severity) -> list[types.Diagnostic]:
            """The first publish at `severity` after the change (one published before the change
            was read may still be on its way: the parser's, for the same version)."""
            lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"mlirLsp": settings}))

            async def wait():
                while True:
                    p = await lsp.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
                    if p.uri == uri and {d.severity for d in mla001(p.diagnostics)} == {severity}:
                        return mla001(p.diagnostics)
            return await asyncio.wait_for(wait(), 30)

        o0 = await after({"dispatch": {"enabled": False, "flags": "--iree-opt-level=O0"}},
                         types.DiagnosticSeverity.Warning)
        assert len(o0) == 4 and not any("IREE strips" in d.message for d in o0)
        profile = await after({"profiles": {"o2": {"flags": ["--iree-hal-target-device=hip", "--iree-opt-level=O2"]}},
                               "dispatch": {"enabled": False, "profile": "o2", "flags": []}},
                              types.DiagnosticSeverity.Information)
        assert len(profile) == 4
        assert all(d.message.endswith("IREE strips this assert at --iree-opt-level=O2 (--iree-opt-strip-assertions): "
                                      "it costs no dispatch with these flags") for d in profile)
        assert not any(p.type == types.MessageType.Error for p in lsp.shown)


def test_repeated_flags_keep_the_last_word_when_translated():
    """The flags given to iree-compile keep the order that decides (the last of a flag wins)."""
    from mlir_lsp_asserts.iree_flags.flags import translate

    flags = ["--iree-opt-level=O0", "--iree-opt-level=O3", "--iree-opt-level=O0"]
    got = translate(flags, frozenset({"iree-opt-level"})).flags
    assert got == ["--iree-opt-level=O3", "--iree-opt-level=O0"]
    assert asserts_stripped(got) == asserts_stripped(flags) and not asserts_stripped(got).stripped


def test_explain_says_which_levels_keep_the_asserts():
    page = run_cli("--explain", "MLA001").stdout
    assert "## Which optimization levels keep the asserts" in page
    assert "| none, or `--iree-opt-level=O0` (the default) | **kept**" in page
    assert "| `--iree-opt-level=O1`, `O2` or `O3` | stripped |" in page
    assert "**At `--iree-opt-level=O1` and above they do not reach runtime.**" in run_cli("--explain", "MLA003").stdout
