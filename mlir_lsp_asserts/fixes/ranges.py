"""Range reasoning for the util.assume.int rewrite, exact on integers of any width.

Setting: a root value `r` of width W (its signed value S ranges over [-2^(W-1), 2^(W-1)-1]),
and values derived from it by extensions (sign or zero) and same-width casts. Each asserted
condition `m PRED C` on some derived value `m` restricts S; the feasible set of S is kept as
a union of disjoint intervals. The fact emitted for a target value `t` is the hull of the
unsigned values `t` takes on that set: every value that satisfies the asserts is in it, and
no smaller single interval contains them all.
"""

from __future__ import annotations

from dataclasses import dataclass

Intervals = list[tuple[int, int]]  # disjoint, sorted, inclusive

SIGNED = {"slt", "sle", "sgt", "sge"}
UNSIGNED = {"ult", "ule", "ugt", "uge"}
SWAPPED = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "ult": "ugt", "ule": "uge",
           "ugt": "ult", "uge": "ule", "eq": "eq", "ne": "ne"}


class NoRange(Exception):
    """No sound single unsigned interval; the message says why (shown to the user)."""


@dataclass(frozen=True)
class Derivation:
    """How a value is computed from the root: its width and, after a zero extension, the
    width at which the zero extension happened (its value is then S mod 2^zext_from)."""

    width: int
    zext_from: int | None = None

    def extend(self, kind: str, to_width: int) -> Derivation:
        if to_width < self.width:
            raise NoRange(f"a truncating cast to i{to_width} loses the range")
        if to_width == self.width:
            return self
        if kind == "zext" and self.zext_from is None:
            return Derivation(to_width, self.width)
        return Derivation(to_width, self.zext_from)


def _intersect(a: Intervals, b: Intervals) -> Intervals:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _normalize(ivs: Intervals) -> Intervals:
    ivs = sorted((lo, hi) for lo, hi in ivs if lo <= hi)
    out: Intervals = []
    for lo, hi in ivs:
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def condition_set(pred: str, constant: int, width: int) -> Intervals:
    """Signed values v (width `width`) with `v PRED constant`, as intervals."""
    mod = 1 << width
    cu = constant % mod
    cs = cu - mod if cu >= mod >> 1 else cu
    smin, smax = -(mod >> 1), (mod >> 1) - 1
    if pred == "ne":
        raise NoRange("`ne` excludes one value: not one interval")
    if pred == "eq":
        return [(cs, cs)]
    if pred in SIGNED:
        lo, hi = {"slt": (smin, cs - 1), "sle": (smin, cs), "sgt": (cs + 1, smax), "sge": (cs, smax)}[pred]
        return _normalize([(lo, hi)])
    lo, hi = {"ult": (0, cu - 1), "ule": (0, cu), "ugt": (cu + 1, mod - 1), "uge": (cu, mod - 1)}[pred]
    # unsigned [lo, hi] -> signed values
    half = mod >> 1
    parts = [(lo, min(hi, half - 1)), (max(lo, half) - mod, hi - mod)]
    return _normalize(parts)


def preimage(values: Intervals, d: Derivation, root_width: int) -> Intervals:
    """Root values S whose derived value (signed, width d.width) lies in `values`."""
    half = 1 << (root_width - 1)
    root = [(-half, half - 1)]
    if d.zext_from is None:
        return _intersect(values, root)
    a = 1 << d.zext_from
    pos = _intersect(values, [(0, half - 1)])
    neg = _intersect(values, [(a - half, a - 1)])
    return _normalize(pos + [(lo - a, hi - a) for lo, hi in neg])


def unsigned_image(feasible: Intervals, d: Derivation) -> Intervals:
    """Unsigned values (width d.width) that the derived value takes for S in `feasible`."""
    mod = 1 << d.width
    out: Intervals = []
    for lo, hi in feasible:
        pieces = [(lo, hi)]
        if d.zext_from is not None:
            a = 1 << d.zext_from
            pieces = [(max(lo, 0), hi), (lo + a, min(hi, -1) + a)]
        for plo, phi in pieces:
            if plo > phi:
                continue
            if phi < 0:
                out.append((plo + mod, phi + mod))
            elif plo >= 0:
                out.append((plo, phi))
            else:
                out.append((0, phi))
                out.append((plo + mod, mod - 1))
    return _normalize(out)


@dataclass(frozen=True)
class Constraint:
    derivation: Derivation
    pred: str  # normalised to `value PRED constant`
    constant: int


def derive_range(root_width: int, constraints: list[Constraint], target: Derivation) -> tuple[int, int]:
    """(umin, umax) for the target under the constraints, or NoRange with the reason."""
    half = 1 << (root_width - 1)
    feasible: Intervals = [(-half, half - 1)]
    for c in constraints:
        allowed = condition_set(c.pred, c.constant, c.derivation.width)
        feasible = _intersect(feasible, preimage(allowed, c.derivation, root_width))
    if not feasible:
        raise NoRange("the asserted conditions can never all hold")
    image = unsigned_image(feasible, target)
    umin, umax = image[0][0], image[-1][1]
    if umin == 0 and umax == (1 << target.width) - 1:
        if any(c.pred in SIGNED for c in constraints) and not all(c.pred in UNSIGNED for c in constraints):
            raise NoRange("a signed bound alone does not give one unsigned range (add a proof of `sge 0`)")
        raise NoRange("the conditions do not bound the value")
    return umin, umax
