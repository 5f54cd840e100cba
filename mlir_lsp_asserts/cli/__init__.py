"""The command line (`mlir-lsp`): it parses arguments and translates between the user and the
core, the way ruff keeps its CLI apart from `ruff_linter`.

    main.py        arguments, modes (check, fix, watch, server, dispatch count), exit codes
    arguments.py   the argparse groups of the other modes (parsing imports none of their code)
    plain_check.py `--check [switches] PATH...` read without argparse (start-up)
    profiles.py    `--list-profiles`
    (one file's check and fix are the core's `file_job.py` and `file_fix.py`)
    watch.py       `--watch`: check again when a file changes
    output.py      output formats (concise, full, json, json-lines, github, sarif, junit)
    dispatch.py    `--dispatch-count`: counts, what-if, budgets and baselines
    dispatch_diff.py  `--dispatch-diff`: the dispatches one compile has and another has not, and why
"""

from .main import command, main

__all__ = ["command", "main"]
