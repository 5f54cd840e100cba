"""iree-test-suites' compstat goldens, read, judged and written back.

A compstat test file (`torch_models/examples/*_compstat_*.json` there) is
    {"type": "compstat", "markers": ["hip", "gfx1201"], "module": "examples/modules/...",
     "golden_dispatch_count": 1400, "golden_binary_size": 2000000}
and their test passes when the stream-level `dispatch-count` of
`--iree-scheduling-dump-statistics-format=json` is <= `golden_dispatch_count` and the .vmfb's
size <= `golden_binary_size` (each checked only when the golden is there). Their `module` names a
compiled artifact, not our input: the config maps inputs to compstat files (`[compstat]`).

What lets us say which dispatches are new lives beside the file, in a sidecar
`NAME.mlir-lsp.json` (our attribution per profile, as a baseline stores it). Their collector
reads every `*.json` of the folder and skips a JSON object without a "type" key, so the sidecar
has none. The compstat file itself is only ever changed in its golden numbers: the rest of the
text stays byte for byte (key order, indent, markers).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..files import load_json, write_new_or_atomic
from .baselines import Baseline, BaselineError

COUNT_KEY, SIZE_KEY = "golden_dispatch_count", "golden_binary_size"
SIDECAR_SUFFIX = ".mlir-lsp.json"
CHIP = re.compile(r"^(?:gfx[0-9a-z]+|sm_[0-9]+a?)$")


@dataclass
class CompstatFile:
    path: str
    data: dict

    @property
    def markers(self) -> list[str]:
        m = self.data.get("markers")
        return [str(x) for x in m] if isinstance(m, list) else []

    @property
    def chips(self) -> set[str]:
        """The chips the markers name (gfx1201, sm_90): the target its golden is for."""
        return {m for m in self.markers if CHIP.match(m)}

    @property
    def golden_dispatch_count(self) -> int | None:
        v = self.data.get(COUNT_KEY)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def golden_binary_size(self) -> int | None:
        v = self.data.get(SIZE_KEY)
        return v if isinstance(v, int) and not isinstance(v, bool) else None


def is_compstat(data: object) -> bool:
    return isinstance(data, dict) and data.get("type") == "compstat"


def load_compstat_files(path: str) -> list[CompstatFile] | None:
    """The compstat files `path` names: the file itself, or every `*.json` under the folder whose
    type is compstat (as their collector finds them); None when `path` is a file of another
    format (our own baseline)."""
    if os.path.isdir(path):
        out = []
        for p in sorted(Path(path).glob("**/*.json")):
            if p.name.endswith(SIDECAR_SUFFIX):
                continue
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # not a test file of theirs either
            if is_compstat(data):
                out.append(CompstatFile(str(p), data))
        if not out:
            raise BaselineError(f"{path}: no compstat file (a *.json with \"type\": \"compstat\") in this folder")
        return out
    if not os.path.exists(path):
        return None  # our own baseline, to be created by --update-baseline
    data = load_json(path, BaselineError, "baseline file not found")
    return [CompstatFile(path, data)] if isinstance(data, dict) and is_compstat(data) else None


def chips_of(target: str) -> set[str]:
    """The chips a target description (`flags.target_of`, e.g. `hip gfx942`) names."""
    return {t for t in target.split() if CHIP.match(t)}


def match_inputs(paths: list[str], files: list[CompstatFile], mapping, folder: Path, profile: str,
                 target: str, baseline_arg: str) -> tuple[dict[str, CompstatFile], list[str]]:
    """(input -> its compstat file, warnings). `mapping`: the config's `compstat` setting, its
    paths relative to `folder`. Of the files an input maps to (and `files` holds), the one for
    this run: an entry's profile, when it names one, must be the run's; else the markers' chip,
    when they name one, the target's. One compstat file and one input that the config does not
    map are paired. Raises BaselineError naming the input and how to map it."""
    by_real = {os.path.realpath(f.path): f for f in files}
    mapped = {os.path.realpath(folder / k): v for k, v in mapping}
    chips = chips_of(target)
    out: dict[str, CompstatFile] = {}
    warnings: list[str] = []
    for p in paths:
        entries = mapped.get(os.path.realpath(p))
        if entries is None:
            if len(files) == 1 and len(paths) == 1:
                only = files[0]
                if only.chips and not only.chips & chips:
                    warnings.append(f"{only.path}: its markers name {', '.join(sorted(only.chips))}, the profile "
                                    f"{profile!r} targets {target}")
                out[p] = only
                continue
            raise BaselineError(
                f"{p}: no compstat file for this input in the config: map it in mlir-lsp.toml "
                f"(or [tool.mlir-lsp] in pyproject.toml) as [compstat] \"{_rel(p, folder)}\" = "
                f"\"{_rel(files[0].path, folder) if len(files) == 1 else 'COMPSTAT.json'}\"")
        cands = []
        for file, prof in entries:
            f = by_real.get(os.path.realpath(folder / file))
            if f is None:
                continue
            if prof is not None and prof != profile:
                continue
            if prof is None and f.chips and not f.chips & chips:
                continue
            cands.append(f)
        if len(cands) != 1:
            listed = ", ".join(file for file, _ in entries)
            why = ("none of them is in " + baseline_arg + f" for profile {profile!r} ({target})" if not cands
                   else f"{len(cands)} of them fit profile {profile!r} ({target}): give each a profile "
                        "({file = \"...\", profile = \"NAME\"})")
            raise BaselineError(f"{p}: the config maps it to {listed}; {why}")
        out[p] = cands[0]
    return out, warnings


def _rel(path: str, folder: Path) -> str:
    try:
        return os.path.relpath(path, folder).replace(os.sep, "/")
    except ValueError:
        return path


# -- the attribution beside it -----------------------------------------------------------------
def sidecar_path(path: str) -> str:
    base = path[:-5] if path.endswith(".json") else path
    return base + SIDECAR_SUFFIX


def load_sidecar(path: str) -> dict[str, dict]:
    """profile -> compact attribution (see `baselines.compact`) stored beside a compstat file."""
    try:
        with open(sidecar_path(path), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    att = data.get("attribution") if isinstance(data, dict) else None
    return att if isinstance(att, dict) else {}


def as_baseline(input_path: str, f: CompstatFile, profile: str, golden: int) -> Baseline:
    """The golden and the sidecar's attribution in our baseline's form, keyed by the input, so
    that a count over it is explained as a count over our own baselines is."""
    stored = load_sidecar(f.path).get(profile)
    return Baseline({input_path: {profile: golden}},
                    {input_path: {profile: stored}} if isinstance(stored, dict) else {})


def sidecar_text(attribution: dict[str, dict]) -> str:
    """The sidecar: no "type" key (their collector skips it), one line per profile."""
    rows = ",\n".join(f"    {json.dumps(p)}: {json.dumps(v, separators=(',', ':'))}"
                      for p, v in sorted(attribution.items()))
    return ('{\n  "mlir-lsp": "dispatch attribution of the compstat file beside this one",\n  "version": 1,\n'
            f'  "attribution": {{\n{rows}\n  }}\n}}\n')


# -- the goldens written back -------------------------------------------------------------------
def _indent(text: str) -> str:
    m = re.search(r"\n([ \t]+)\"", text)
    return m.group(1) if m else "  "


def rewrite_goldens(text: str, values: dict[str, int]) -> str:
    """`text` (a compstat file) with the top-level keys of `values` set: each number replaced in
    place, a key it lacks added after the last one in the file's own indent; every other byte
    kept. Raises BaselineError when the text is not a flat compstat object we can edit."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise BaselineError("not a JSON object")
    out = text
    for key, value in values.items():
        pat = re.compile(r'("' + re.escape(key) + r'"\s*:\s*)(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|null)')
        hits = list(pat.finditer(out))
        if len(hits) > 1:
            raise BaselineError(f"{key} appears {len(hits)} times")
        if not hits and key in data:
            raise BaselineError(f"its {key} is {data[key]!r}, not a number")
        if hits:
            m = hits[0]
            out = out[:m.start(2)] + str(value) + out[m.end(2):]
        else:  # after the last value, before the closing brace
            end = out.rfind("}")
            body_end = len(out[:end].rstrip())
            sep = "\n" + _indent(out) if "\n" in out[:end] else " "
            out = f"{out[:body_end]},{sep}{json.dumps(key)}: {value}{out[body_end:]}"
    want = {**data, **values}
    if json.loads(out) != want or list(json.loads(out)) != list(want):
        raise BaselineError("cannot rewrite its goldens in place (not a flat JSON object)")
    return out


def write_goldens(path: str, values: dict[str, int], profile: str, attribution: dict | None) -> None:
    """The goldens written into the compstat file at `path` (atomically, all else kept), and the
    attribution of `profile` into its sidecar. Raises BaselineError or OSError."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        new = rewrite_goldens(text, values)
    except (ValueError, BaselineError) as e:
        raise BaselineError(f"{path}: {e}") from None
    if new != text:
        write_new_or_atomic(path, new.encode("utf-8"))
    if attribution is not None:
        stored = load_sidecar(path)
        stored[profile] = attribution
        write_new_or_atomic(sidecar_path(path), sidecar_text(stored).encode("utf-8"))
