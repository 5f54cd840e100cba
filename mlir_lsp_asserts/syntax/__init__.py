"""Reading MLIR text without MLIR: structure first, details only where a rule or fix asks.

    reader.py        the structural reader: top-level ops, braces and regions, syntax errors
    op_tree.py       the `Op` data: ops, regions, blocks as offsets into the text; SSA uses
    parsed_text.py   a parsed text: chunks, lazily read units, targeted reads of big blocks
    statements.py    the statements of a big block, read on demand
    lines.py         `LineIndex`: offsets <-> LSP line/character (UTF-16)
    tokens.py        token patterns several modules match: string literals, `@symbol`s
    asserts.py       where the cf.assert ops are, their messages and source locations, and
                     the source ops a lowering's asserts came from (`trace_asserts`)
    scope.py         SSA definitions and uses (fixes and navigation)
    op_details.py    one op's details (cf.assert, arith.cmpi, constants, casts): the usual
                     forms read with the grammar's terminals, the others with
    op_grammar.py    the lark grammar in ops.lark (loaded only for those)
    op_values.py     the values op_details gives
"""
