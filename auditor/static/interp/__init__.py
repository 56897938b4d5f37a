"""The interpreter wing: the call graph by abstract interpretation of the IR from the entry
points (`callgraph`, with the mixins it composes), its abstract values (`values`, `formula`,
`state`, `typetests`), the graph it builds (`graph`), the modules it loads (`program`) and
reachability over the graph (`reach`). It sits above the IR wing and `parsed`."""
