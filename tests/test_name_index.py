"""The navigation index (syntax/name_index.py) on the ways MLIR binds a name that the public pieces
show less often: result packs, generic regions, region arguments after `outs`, gpu.launch,
async.execute, declarations, attribute dictionaries, and a slice of a bigger text."""

from __future__ import annotations

from mlir_lsp_asserts.syntax.name_index import NameIndex

TEXT = """\
func.func private @decl(%unused: i32)
func.func @f(%t: tensor<4xf32>, %n: index) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
  %p:2 = "test.pair"() : () -> (i32, i32)
  %s = arith.addi %p#0, %p#1 : i32
  %g = "test.region"() ({
  ^bb0(%in: i32):
    "test.yield"(%in) : (i32) -> ()
  }) {attr = {nested = 1 : i32}} : () -> i32
  %m = linalg.map ins(%t : tensor<4xf32>) outs(%t : tensor<4xf32>)
    (%in: f32, %init: f32) {
      linalg.yield %in : f32
    }
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %u = arith.addi %bx, %tz : index
    gpu.terminator
  }
  return %m : tensor<4xf32>
}
"""


def at(needle: str, nth: int = 0, text: str = TEXT) -> int:
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    return i


def test_packs_generic_regions_region_arguments_and_gpu_launch():
    ix = NameIndex(TEXT)
    p = ix.binding_at(at("%p#0"))
    assert p is not None and p.at == at("%p:2") and ix.references(p) == [at("%p:2"), at("%p#0"), at("%p#1")]
    s = ix.binding_at(at("%s ="))
    assert s is not None and (s.kind, s.number, s.op) == ("result", 0, "arith.addi")
    g = ix.binding_at(at("%g ="))
    assert g is not None and (g.op, g.number) == ("test.region", 0)
    inner = ix.binding_at(at("%in)"))  # the generic region's block argument, not linalg.map's
    assert inner is not None and inner.at == at("%in: i32") and inner.type == "i32"
    mapped = ix.binding_at(at("%in : f32"))
    assert mapped is not None and mapped.at == at("%in: f32") and mapped.type == "f32" and mapped.number == 0
    for name in ("%bx", "%tz"):
        b = ix.binding_at(at(name, 1))
        assert b is not None and b.at == at(name) and b.kind == "header"
    gx = ix.binding_at(at("%gx"))
    assert gx is not None and gx.uses == []
    c1 = ix.binding_at(at("%c1 ="))
    assert c1 is not None and len(c1.uses) == 6  # the launch's sizes are uses outside its region
    t = ix.binding_at(at("%t :"))
    assert t is not None and t.kind == "function argument" and t.number == 0 and t.type == "tensor<4xf32>"


def test_a_declaration_binds_nothing_and_a_dictionary_is_not_a_region():
    ix = NameIndex(TEXT)
    assert ix.binding_at(at("%unused")) is None
    f = ix.symbol_at(at("@f"))
    assert f is not None and [s.name for s in ix.symbol_list()] == ["decl", "f"]
    n = ix.binding_at(at("%n"))  # bound in the body although `attributes {...}` comes first
    assert n is not None and n.scope.op == "func.func"


def test_a_slice_keeps_the_offsets_of_its_text():
    pad = "// a comment naming %p and @f\n" * 3
    text = pad + TEXT + pad
    start = len(pad)
    ix = NameIndex(text, start, start + len(TEXT))
    p = ix.binding_at(start + at("%p#1"))
    assert p is not None and p.at == start + at("%p:2")
    assert ix.binding_at(at("%p")) is None  # in the comment before the slice
    f = ix.symbol_at(start + at("@f"))
    assert f is not None and f.at == start + at("@f")
