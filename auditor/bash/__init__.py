"""Reads bash the way bash reads it, without running anything: lexing (lexer), parsing (parser), the
values a walk keeps (values), expanding words (expand) and walking the script in order (walk).

Quotes, `\\` continuations, `${VAR:-default}`, arrays, word splitting of unquoted expansions,
here-documents and if/for/case blocks are all modelled, because a flag hidden in
`${EXTRA_ARGS[@]}` or a value quoted the wrong way is exactly what an infra engineer needs to
see. What cannot be known statically (`$(hostname)`, `$1`, a variable the script inherits) stays
`Symbolic`. An unassigned variable is unknown; where the script gives it a fallback
(`${NNODES:-16}`, `[ -z "$NNODES" ] && NNODES=16`) the fallback is taken. Which external commands
matter is the caller's business: `walk.Shell.external` is where a reader picks them out.
"""
