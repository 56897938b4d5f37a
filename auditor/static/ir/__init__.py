"""The IR wing: the typed records the interpreter walks (`ir`), built from a module's `ast` tree
(`build`) and kept in the analysis cache as JSON (`codec`). It reads only the static floor below
it (`source`, `names`), never the sites wing or the interpreter."""
