"""The action's second step: `mlir-lsp --check` (annotations: the CLI's `--output-format github`),
then, when a budget input is set, `mlir-lsp --dispatch-count` (its JSON); a job summary built from
the CLI's JSON output ($GITHUB_STEP_SUMMARY) and the outputs `findings` and `dispatches`
($GITHUB_OUTPUT). Nothing is analysed here: every figure comes from the CLI.

Inputs, from the environment only (action.yml): INPUT_PATHS, INPUT_ARGS, INPUT_CHECK,
INPUT_DISPATCH_PATHS, INPUT_DISPATCH_PROFILE, INPUT_DISPATCH_BASELINE, INPUT_MAX_DISPATCHES,
INPUT_WHAT_IF. Lists are split as a shell splits words (quotes group), but no shell ever runs.
Exit: 2 when a run failed (bad input, a file that cannot be read or compiled), else 1 when
there are findings or a count is over its budget, else 0 (the CLI's own codes, `--exit-zero` too).
"""

from __future__ import annotations

import html
import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

MLIR_LSP = str(Path(sys.executable).with_name("mlir-lsp"))


def escape(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped as the runner reads them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def words(name: str) -> list[str]:
    """An input's value split into words; ValueError (an unclosed quote) names the input."""
    try:
        return shlex.split(os.environ.get(name, ""))
    except ValueError as e:
        raise ValueError(f"{name.removeprefix('INPUT_').lower().replace('_', '-')}: {e}") from None


def flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    return default if not value else value in ("true", "1", "yes")


def check(paths: list[str], args: list[str]) -> tuple[int, list[dict] | None]:
    """The annotations printed (the runner reads them from stdout); (the exit code, the findings
    of the JSON run)."""
    annotate = subprocess.run([MLIR_LSP, "--check", *args, "--output-format", "github", "--", *paths])
    sys.stdout.flush()
    got = subprocess.run([MLIR_LSP, "--check", *args, "--output-format", "json", "--quiet", "--no-progress",
                          "--", *paths], capture_output=True, text=True)
    try:
        findings = json.loads(got.stdout) if got.stdout.strip() else None
    except json.JSONDecodeError:
        findings = None
    return annotate.returncode, findings if isinstance(findings, list) else None


def count(paths: list[str]) -> tuple[int, list[dict] | None]:
    """`--dispatch-count` with the budget inputs; its stderr (verdicts, new dispatches) passed to the
    log, its errors also as annotations; (the exit code, the JSON records)."""
    cmd = [MLIR_LSP, "--dispatch-count", "--output-format", "json"]
    for option, name in (("--profile", "INPUT_DISPATCH_PROFILE"), ("--baseline", "INPUT_DISPATCH_BASELINE"),
                         ("--max-dispatches", "INPUT_MAX_DISPATCHES")):
        value = os.environ.get(name, "").strip()
        if value:
            cmd.append(f"{option}={value}")
    if flag("INPUT_WHAT_IF", True):
        cmd.append("--what-if")
    got = subprocess.run([*cmd, "--", *paths], capture_output=True, text=True)
    for line in got.stderr.splitlines():
        print(line)
        if line.startswith("mlir-lsp: error: "):
            print(f"::error title=mlir-lsp dispatch count::{escape(line.removeprefix('mlir-lsp: error: '))}")
    try:
        records = json.loads(got.stdout) if got.stdout.strip() else None
    except json.JSONDecodeError:
        records = None
    return got.returncode, records if isinstance(records, list) else None


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('ch') else 's'}"


def cell(text: object) -> str:
    """Text for a Markdown table cell: no HTML, no column break."""
    return html.escape(str(text)).replace("|", "&#124;").replace("`", "&#96;").replace("\n", " ")


def summary(findings: list[dict] | None, counts: list[dict] | None, check_rc: int | None, count_rc: int | None) -> str:
    """The job summary: one row per file (findings by rule, dispatches, what-if, the change against
    the baseline and the new dispatches' names), then the totals."""
    by_file: dict[str, Counter] = {}
    for f in findings or []:
        by_file.setdefault(f["path"], Counter())[f["code"]] += 1
    counted = {r["path"]: r for r in counts or []}
    rows = []
    for path in [*by_file, *(p for p in counted if p not in by_file)]:
        rules = by_file.get(path, Counter())
        r = counted.get(path)
        rule_text = ", ".join(f"{code} × {n}" for code, n in sorted(rules.items())) or ("none" if findings is not None
                                                                                         else "")
        dispatches = what_if = change = new = ""
        if r is not None:
            dispatches = f"{r['flow_dispatches']} ({r['profile']})"
            w = r.get("what_if")
            if w:
                what_if = f"{w['flow_dispatches']} without the asserts ({w['saved']} saved)"
            budget = r.get("budget") or {}
            base = budget.get("baseline")
            if base and base.get("count") is not None:
                change = f"{base['change']:+d} against {base['count']}" + ("" if budget.get("passed") else " ❌")
            elif base:
                change = "not in the baseline"
            if budget.get("max_dispatches") is not None and not budget.get("passed") and not change:
                change = f"over the cap {budget['max_dispatches']} ❌"
            new = ", ".join(budget.get("new_dispatches") or [])
        rows.append([path, sum(rules.values()) if findings is not None else "", rule_text, dispatches, what_if,
                     change, new])
    out = ["## mlir-lsp", ""]
    if rows:
        out += ["| file | findings | by rule | dispatches | what-if | against the baseline | new dispatches |",
                "|---|---:|---|---|---|---|---|"]
        out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
        out.append("")
    totals = []
    if findings:
        totals.append(f"{plural(len(findings), 'finding')} in {plural(len(by_file), 'file')}")
    elif findings is not None:
        totals.append("No findings")
    elif check_rc is not None:
        totals.append(f"the check failed (exit {check_rc}): see the log")
    if counts is not None:
        totals.append(f"{plural(sum(r['flow_dispatches'] for r in counts), 'dispatch')} in "
                      f"{plural(len(counts), 'file')}")
    if count_rc == 2:
        totals.append("a count failed: see the log")
    elif count_rc == 1:
        totals.append("a count is over its budget")
    out.append("; ".join(totals) + "." if totals else "Nothing was checked or counted.")
    return "\n".join(out) + "\n"


def append(env: str, text: str) -> None:
    target = os.environ.get(env)
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)


def main() -> int:
    try:
        paths = words("INPUT_PATHS")
        args = words("INPUT_ARGS")
        dispatch_paths = words("INPUT_DISPATCH_PATHS") or paths
    except ValueError as e:
        print(f"::error title=mlir-lsp action::{escape(str(e))}")
        return 2
    budget = ("INPUT_DISPATCH_PATHS", "INPUT_DISPATCH_PROFILE", "INPUT_DISPATCH_BASELINE", "INPUT_MAX_DISPATCHES")
    counting = any(os.environ.get(n, "").strip() for n in budget)
    check_rc = findings = count_rc = counts = None
    if flag("INPUT_CHECK", True):
        check_rc, findings = check(paths, args)
    if counting:
        count_rc, counts = count(dispatch_paths)
    append("GITHUB_STEP_SUMMARY", summary(findings, counts, check_rc, count_rc))
    outputs = {"findings": len(findings) if findings is not None else "",
               "dispatches": sum(r["flow_dispatches"] for r in counts) if counts is not None else ""}
    append("GITHUB_OUTPUT", "".join(f"{k}={v}\n" for k, v in outputs.items()))
    codes = [c for c in (check_rc, count_rc) if c is not None]
    return 2 if 2 in codes or any(c not in (0, 1) for c in codes) else max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())
