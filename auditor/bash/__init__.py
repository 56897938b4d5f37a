"""Reads bash the way bash reads it, without running anything: lexing (lexer), parsing (parser), the
values a walk keeps (values), expanding words (expand), the branches a known value decides
(conditions), whether bash accepts the text at all (syntax) and walking the script in order (walk).

Quotes, `\\` continuations, `${VAR:-default}`, arrays, word splitting of unquoted expansions,
here-documents, if/for/case blocks, `eval`, `source` and positional parameters are all modelled,
because a flag hidden in `${EXTRA_ARGS[@]}` or a value quoted the wrong way is exactly what an
infra engineer needs to see. What cannot be known statically (`$(hostname)`, a variable the script
inherits) stays `Symbolic`, and a value known in part (`--tp ${TP} --pp 4`) is a `Partial` that
keeps its known words. An unassigned variable is unknown; where the script gives it a fallback
(`${NNODES:-16}`, `[ -z "$NNODES" ] && NNODES=16`) the fallback is taken and remembered. Code the
walk cannot see (a `source` of a missing file, `eval` of unknown text) makes the variables the
caller names unknown from there on. Which external commands matter is the caller's business:
`walk.Shell.external` is where a reader picks them out.
"""
