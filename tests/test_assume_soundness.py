"""The util.assume.int rewrite is sound and tight, checked by exhaustive evaluation.

Hypothesis builds small functions: a root argument of i4 or i8, a chain of extensions and
casts (extsi, extui, index_cast, index_castui), and asserted `arith.cmpi` conditions on the
members against constants, in both operand orders. A brute-force evaluator (independent of
the range code) runs every root value, keeps those on which all asserts hold, and computes the
unsigned values each member takes. The fix must offer exactly the hull [min, max] of those
values, and no fix when they are empty or cover the whole range.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlir_lsp_asserts.checker import check_text
from mlir_lsp_asserts.fixes import fix_text
from mlir_lsp_asserts.fixes.assume import build_groups
from mlir_lsp_asserts.fixes.verify import real_parse_error
from mlir_lsp_asserts.syntax.scope import Scope

PREDS = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
SWAP = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "ult": "ugt", "ule": "uge",
        "ugt": "ult", "uge": "ule", "eq": "eq", "ne": "ne"}


def width(t: str) -> int:
    return 64 if t == "index" else int(t[1:])


def signed(v: int, w: int) -> int:
    v %= 1 << w
    return v - (1 << w) if v >= 1 << (w - 1) else v


def holds(pred: str, a: int, b: int, w: int) -> bool:
    au, bu = a % (1 << w), b % (1 << w)
    as_, bs = signed(a, w), signed(b, w)
    return {"eq": au == bu, "ne": au != bu, "slt": as_ < bs, "sle": as_ <= bs, "sgt": as_ > bs,
            "sge": as_ >= bs, "ult": au < bu, "ule": au <= bu, "ugt": au > bu, "uge": au >= bu}[pred]


@st.composite
def programs(draw):
    root_w = draw(st.sampled_from([4, 8]))
    members = [("r", f"i{root_w}", None)]  # (name, type, (kind, source))
    for i in range(draw(st.integers(0, 2))):
        src_name, src_type, _ = members[-1]
        sw = width(src_type)
        kind = draw(st.sampled_from(["extsi", "extui", "index_cast", "index_castui"]))
        if kind in ("extsi", "extui"):
            if src_type == "index" or sw >= 32:
                break
            dst = f"i{draw(st.sampled_from([w for w in (8, 16, 32) if w > sw]))}"
        else:
            dst = "index" if src_type != "index" else draw(st.sampled_from(["i64", "i128"]))
        members.append((f"m{i}", dst, (kind, src_name)))
    conds = []
    for _ in range(draw(st.integers(1, 3))):
        m = draw(st.sampled_from(members))
        w = width(m[1])
        pred = draw(st.sampled_from(PREDS))
        c = draw(st.integers(-(1 << (min(w, 10) - 1)), (1 << min(w, 10)) - 1))
        flipped = draw(st.booleans())
        conds.append((m, pred, c, flipped))
    return root_w, members, conds


def render(root_w, members, conds) -> str:
    lines = [f"func.func @f(%r: i{root_w}) -> ({', '.join(t for _n, t, _s in members)}) {{"]
    types = {n: t for n, t, _s in members}
    for n, t, src in members[1:]:
        kind, s = src
        lines.append(f"  %{n} = arith.{kind} %{s} : {types[s]} to {t}")
    for i, ((n, t, _s), pred, c, flipped) in enumerate(conds):
        lines.append(f"  %c{i} = arith.constant {c} : {t}")
        if flipped:
            lines.append(f"  %k{i} = arith.cmpi {SWAP[pred]}, %c{i}, %{n} : {t}")
        else:
            lines.append(f"  %k{i} = arith.cmpi {pred}, %{n}, %c{i} : {t}")
        lines.append(f'  cf.assert %k{i}, "condition {i}"')
    lines.append(f"  return {', '.join('%' + n for n, _t, _s in members)} : {', '.join(t for _n, t, _s in members)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def brute_force(root_w, members, conds) -> dict[str, set[int]]:
    """Unsigned values of each member over the root values on which every assert holds."""
    seen: dict[str, set[int]] = {n: set() for n, _t, _s in members}
    for s in range(-(1 << (root_w - 1)), 1 << (root_w - 1)):
        vals = {"r": s % (1 << root_w)}
        for n, t, (kind, src) in ((m[0], m[1], m[2]) for m in members[1:]):
            sw, dw = width(dict((x[0], x[1]) for x in members)[src]), width(t)
            v = vals[src]
            if kind in ("extsi", "index_cast"):
                v = signed(v, sw) % (1 << dw)  # sign-extend (or truncate when narrower)
            else:
                v = v % (1 << min(sw, dw))  # zero-extend (or truncate)
            vals[n] = v % (1 << dw)
        ok = all(holds(pred, vals[m[0]], c, width(m[1])) for m, pred, c, _f in conds)
        if ok:
            for n in vals:
                seen[n].add(vals[n])
    return seen


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_assume_range_is_sound_and_tightest(prog):
    root_w, members, conds = prog
    text = render(root_w, members, conds)
    result = check_text(text, with_fixes=False)
    asserts = [f for f in result.findings if f.code.startswith("MLA")]
    assert len(asserts) == len(conds)
    from mlir_lsp_asserts.syntax.asserts import assert_ops

    ops = assert_ops(result.parsed)
    groups, reasons = build_groups(Scope(text), text, ops)
    # an `ne` assert is never part of a group (it stays an assert); the rest may be, and their
    # ranges are judged against the conditions of the rest alone
    for op, (_m, pred, _c, _f) in zip(ops, conds, strict=True):
        if pred == "ne":
            assert "ne" in reasons[id(op)]
    rest = [c for c in conds if c[1] != "ne"]
    expected = brute_force(root_w, members, rest)
    offered = {t.member.name: (t.umin, t.umax) for g in groups for t in g.targets}
    if not rest:  # only `ne` asserts: no group, nothing offered
        assert not offered, offered
        return
    for name, _t, _s in members:
        w = width(_t)
        vals = expected[name]
        if w > 64:  # util.assume.int ranges are uint64: never offered for wider types
            assert name not in offered
            continue
        if not vals:
            assert name not in offered, f"{name}: conditions never hold, but offered {offered.get(name)}"
            continue
        hull = (min(vals), max(vals))
        if hull == (0, (1 << w) - 1):
            assert name not in offered, f"{name}: no information, but offered {offered.get(name)}\n{text}"
            continue
        assert offered.get(name) == hull, f"{name}: expected {hull}, got {offered.get(name)}\n{text}"


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_assume_rewrite_parses_with_the_real_parser(prog):
    text = render(*prog)
    assert real_parse_error(text) is None, text
    result = check_text(text)
    fixed = fix_text(result, "assume", unsafe=True).text
    assert real_parse_error(fixed) is None, fixed
    assert "cf.assert" not in fixed


@pytest.mark.parametrize(
    "body, reason",
    [
        ("%k = arith.cmpi ne, %a, %c : index", "ne"),
        ("%k = arith.cmpi slt, %a, %b : index", "dynamic bound"),
        ("%k = arith.cmpi slt, %a, %c : index", "signed bound alone"),
        ("%k = arith.andi %x, %y : i1", "not an arith.cmpi"),
    ],
)
def test_assume_not_offered_says_why(body, reason):
    text = (
        "func.func @f(%a: index, %b: index, %x: i1, %y: i1) -> index {\n"
        "  %c = arith.constant 7 : index\n"
        f"  {body}\n"
        '  cf.assert %k, "m"\n'
        "  return %a : index\n}\n"
    )
    result = check_text(text)
    (f,) = [f for f in result.findings if f.code == "MLA003"]
    assert [x.mode for x in f.fixes] == ["strip"]
    assert reason in f.assume_unavailable
