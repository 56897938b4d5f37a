"""The sites wing: one walk of a module's `ast` tree finds every P2P call site (`finder`, with
`scope`, `pgroups`, `aliases`, `valueflow`, `flows`, `pending`, `syntax`) and `sites` makes them
`Site` records with stable ids. It reads the static floor below it (`source`, `names`,
`exports`), never the IR or the interpreter."""
