"""The recall/precision table of README.md: `p2paudit sites` against an independent resolver.

The resolver is written apart from auditor/static (plain `ast`, no scopes, no data flow): a call
is a P2P call when its function, read through the module's imports, its package's star imports
and re-exports, and (in torch itself) the module's own defs, names a torch.distributed P2P API.
It sees calls only, so the comparison is on the inventory's calls (`form` call and partial);
references and ProcessGroup methods are counted apart. `torch` is the installed torch.

    python benchmarks/recall_table.py [TARGET ...]     # prints the markdown table
"""

from __future__ import annotations

import ast
import sys

from auditor import sources
from auditor.static.inventory import inventory

TARGETS = ["megatron-core==0.9.0", "megatron-core==0.13.0", "megatron-core==0.17.0", "megatron-core==0.19.2",
           "ms-swift==4.3.0", "mcore-bridge==1.4.1", "deepspeed==0.16.0", "colossalai==0.4.9", "torch"]
APIS = {"send", "recv", "isend", "irecv", "send_object_list", "recv_object_list", "P2POp",
        "batch_isend_irecv", "ring_exchange"}
TORCH_MODULES = {"torch.distributed", "torch.distributed.distributed_c10d"}


def _imports(tree: ast.Module, module: str, is_package: bool) -> tuple[dict[str, str], list[str]]:
    names: dict[str, str] = {}
    stars: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, base] if base else parts)
            for a in node.names:
                if a.name == "*":
                    stars.append(base)
                else:
                    names[a.asname or a.name] = f"{base}.{a.name}"
    return names, stars


def resolver_calls(src: sources.SourceSet) -> set[tuple[str, int]]:
    trees, maps = {}, {}
    for rel in src.files:
        try:
            tree = ast.parse((src.root / rel).read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        module = src.module_name(rel)
        trees[rel] = (module, tree)
        maps[module] = _imports(tree, module, rel.endswith("__init__.py"))

    def visible(module: str, seen: frozenset = frozenset()) -> dict[str, str]:
        names, stars = maps.get(module, ({}, []))
        out: dict[str, str] = {}
        for star in stars:
            if star not in seen:
                out.update((k, v) for k, v in visible(star, seen | {module}).items() if not k.startswith("_"))
        out.update(names)
        return out

    def qual(expr: ast.expr, env: dict[str, str]) -> str | None:
        if isinstance(expr, ast.Name):
            return env.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = qual(expr.value, env)
            return f"{base}.{expr.attr}" if base else None
        return None

    found = set()
    for rel, (module, tree) in trees.items():
        env = visible(module)
        if module in TORCH_MODULES:
            env.update((n.name, f"{module}.{n.name}") for n in tree.body
                       if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                q = qual(node.func, env)
                for _ in range(3):  # re-exports: pkg.aliases.dist -> torch.distributed
                    if q is None or q.startswith("torch"):
                        break
                    mod, _, name = q.rpartition(".")
                    q = visible(mod).get(name) if mod in maps else None
                if q and q.rsplit(".", 1)[0] in TORCH_MODULES and q.rsplit(".", 1)[1] in APIS:
                    found.add((rel, node.lineno))
    return found


def row(target: str) -> str:
    src = sources.resolve(target)
    inv = inventory(src)
    ours = {(s.path, s.line) for s in inv.sites if s.form in ("call", "partial")}
    theirs = resolver_calls(src)
    misses, extra = theirs - ours, ours - theirs
    others = sum(1 for s in inv.sites if s.form not in ("call", "partial"))
    return (f"| {src.name} {src.version} | {len(ours)} | {len(theirs)} | {len(ours & theirs)} | "
            f"{len(misses)} | {len(extra)} | {others} |")


def main() -> None:
    print("| target | call sites found | resolver's calls | both | misses | extra | references, methods |")
    print("|---|---|---|---|---|---|---|")
    for target in sys.argv[1:] or TARGETS:
        print(row(target))


if __name__ == "__main__":
    main()
