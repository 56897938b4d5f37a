"""The rules agree with the real code of every version they claim.

For ms-swift, mcore-bridge, megatron-core, Megatron-LM's front end (megatron/training, shipped
in the megatron-core wheels) and DeepSpeed (sdists), each `[[arg]]`, `[[rule]]` and `[[check]]` entry is
checked in every release its `[framework] verified` list names (wheels fetched once with pip into
the p2paudit cache, unpacked, never imported): its `code` is in its `source` file, at its line in
the release it was `read` in; a dataclass default (`class`) has the stated value, or, for an
`absent = "FIELD"` variant, no class of the source file declares that field; a derivation
or check (`function`, unless `guard = false`) sits under exactly the conditions its `when` states
and assigns the stated value. torch's entries are checked against the installed torch's own
files and library, and its run-time rules against real torch.distributed (gloo on CPU).
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest

from auditor import rulebook, sources
from auditor.rulebook.frameworks import frameworks
from auditor.config.derive import derive
from auditor.config.torch_version import installed_torch_version
from auditor.config.launch import parse_launch

# The frameworks whose rules were read from releases: every one that lists them.
FRAMEWORKS = tuple(f.name for f in frameworks() if f.verified)
PREFIXES = ("self", "config", "args")


def entries(framework: str) -> list[tuple[str, dict]]:
    data = rulebook.load(framework).data
    return [(table, e) for table in ("arg", "rule", "check") for e in data.get(table, [])]


def entry_name(framework: str, table: str, e: dict) -> str:
    return f"{framework}:{e.get('id') or table + ':' + e['key']}"


def cases() -> list:
    out = []
    for fw in FRAMEWORKS:
        meta = rulebook.load(fw).section("framework")
        for table, e in entries(fw):
            # `source = "OWNER/NAME@COMMIT PATH:LINE"`: read from a checkout, not the release
            # (Megatron-DeepSpeed's front end in rules/deepspeed.toml), checked against that checkout
            # (tests/realscripts/test_megatron_deepspeed.py)
            if "code" not in e or "@" in str(e.get("source", "")).split(" ")[0]:
                continue
            for version in meta["verified"]:
                if rulebook.version_in(version, e.get("versions", "*")):
                    out.append(pytest.param(fw, version, table, e,
                                            id=f"{entry_name(fw, table, e)}@{version}"))
    return out


@cache
def release_root(framework: str, version: str) -> Path:
    distribution = rulebook.load(framework).section("framework")["distribution"]
    return sources.resolve(f"{distribution}=={version}").root


@cache
def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def parse(path: Path) -> ast.Module:
    return ast.parse(read_text(path))


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@cache
def squashed(path: Path) -> str:
    """A release file's text without whitespace, once: thousands of entries search few files."""
    return squash(read_text(path))


class _Strip(ast.NodeTransformer):
    """`self.x`, `config.x`, `args.x` -> `x`: the rules' flat names; `not a < b` -> `a >= b`, so
    an else-branch or a failed assert reads as a rule would write it."""

    INVERSE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
               ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
               ast.In: ast.NotIn, ast.NotIn: ast.In}

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in PREFIXES:
            return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
        return self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)
        operand = node.operand
        if isinstance(node.op, ast.Not) and isinstance(operand, ast.Compare) and len(operand.ops) == 1:
            inverse = self.INVERSE[type(operand.ops[0])]()
            return ast.copy_location(ast.Compare(operand.left, [inverse], operand.comparators), node)
        return node


def negated(test: ast.expr) -> str:
    return canon(ast.UnaryOp(ast.Not(), test))


def canon(node_or_text) -> str:
    """Source text with the flat names; the cached module's nodes are left untouched."""
    if isinstance(node_or_text, str):
        node = ast.parse(node_or_text, mode="eval").body
    else:
        node = copy.deepcopy(node_or_text)
    return ast.unparse(_Strip().visit(node))


def conjuncts(node: ast.AST) -> list[str]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [c for v in node.values for c in conjuncts(v)]
    return [canon(node)]


def find_function(module: ast.Module, qualname: str) -> ast.AST:
    scope: ast.AST = module
    for part in qualname.split("."):
        scope = next(n for n in ast.walk(scope)
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
    return scope


def find_statements(function: ast.AST, code: str) -> list[tuple[ast.stmt, list[str]]]:
    """Each statement written as `code`, in source order, with the conditions it runs under
    (else-branches negated). `if TEST:` and `assert TEST, \\` (its message left out) match on
    the test alone."""
    if code.startswith("if "):
        want = ast.dump(ast.parse(code[3:].rstrip().rstrip(":"), mode="eval").body)
        match = lambda s: isinstance(s, ast.If) and ast.dump(s.test) == want  # noqa: E731
    elif code.startswith("assert "):
        want = ast.dump(ast.parse(code[7:].rstrip(" ,(\\"), mode="eval").body)
        match = lambda s: isinstance(s, ast.Assert) and ast.dump(s.test) == want  # noqa: E731
    else:
        want = ast.dump(ast.parse(code).body[0])
        match = lambda s: ast.dump(s) == want  # noqa: E731

    found: list[tuple[ast.stmt, list[str]]] = []

    def walk(body: list[ast.stmt], conds: list[str]) -> None:
        for stmt in body:
            if match(stmt):
                found.append((stmt, conds))
            elif isinstance(stmt, ast.If):
                walk(stmt.body, conds + conjuncts(stmt.test))
                walk(stmt.orelse, conds + [negated(stmt.test)])
            elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                walk(getattr(stmt, "body", []) + getattr(stmt, "orelse", [])
                     + getattr(stmt, "finalbody", []), conds)

    walk(function.body, [])
    assert found, f"no statement `{code}` in {getattr(function, 'name', '?')}"
    return found


def find_statement(framework: str, version: str, entry: dict) -> tuple[ast.stmt, list[str]]:
    """The entry's statement in `version`. Where the function writes the same statement more
    than once, the one meant is the one at the entry's line in the release it was read in, and
    in other releases the one in the same position."""
    path_text, _, line = entry["source"].rpartition(":")
    read = entry.get("read", rulebook.load(framework).section("framework")["read"])

    def statements(release: str) -> list[tuple[ast.stmt, list[str]]]:
        module = parse(release_root(framework, release) / path_text)
        return find_statements(find_function(module, entry["function"]), entry["code"])

    at_line = [n for n, (stmt, _) in enumerate(statements(read)) if stmt.lineno == int(line)]
    assert at_line, f"`{entry['code']}` is not a statement of {entry['function']} at line {line} in {read}"
    return statements(version)[at_line[0]]


def declared_fields(module: ast.Module) -> set[str]:
    """Every field a class of the module declares (its dataclass mixins included)."""
    return {stmt.target.id for cls in ast.walk(module) if isinstance(cls, ast.ClassDef)
            for stmt in cls.body if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)}


def class_default(module: ast.Module, cls: str, key: str):
    node = find_function(module, cls)
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id == key:
            value = stmt.value
            if isinstance(value, ast.Call):  # field(default=...)
                value = next(k.value for k in value.keywords if k.arg == "default")
            return ast.literal_eval(value)
    raise AssertionError(f"{cls} has no field {key}")


@pytest.mark.wheels
@pytest.mark.parametrize("framework,version,table,entry", cases())
def test_entry_matches_release(framework, version, table, entry):
    path_text, _, line_text = entry["source"].rpartition(":")
    path = release_root(framework, version) / path_text
    assert path.is_file(), f"{path_text} missing in {framework} {version}"
    text = read_text(path)
    code = squash(entry["code"])
    assert code in squashed(path), f"`{entry['code']}` not in {path_text} of {framework} {version}"
    read = entry.get("read", rulebook.load(framework).section("framework")["read"])
    if version == read:
        tail = squash("\n".join(text.splitlines()[int(line_text) - 1:]))
        assert tail.startswith(code), f"{path_text}:{line_text} in {version} is not `{entry['code']}`"
    if path.suffix != ".py":  # a config file's default (verl's YAML): its text is the whole check
        return
    module = parse(path)
    if "absent" in entry:
        assert entry["absent"] not in declared_fields(module), \
            f"{path_text} declares {entry['absent']} in {framework} {version}"
    elif "class" in entry:
        stated = entry.get("default") if table == "arg" else entry["value"]
        if isinstance(stated, str) and table == "rule":
            stated = ast.literal_eval(stated)
        assert class_default(module, entry["class"], entry["key"]) == stated
    if "function" in entry and entry.get("guard", True):
        stmt, conds = find_statement(framework, version, entry)
        if table == "check":
            # An `if` raises under its test; an `assert` under the negation of its test.
            conds = conds + (conjuncts(stmt.test) if isinstance(stmt, ast.If) else [negated(stmt.test)])
        stated = set(conjuncts(ast.parse(entry["when"], mode="eval").body)) if "when" in entry else set()
        if entry.get("action") == "default":
            guard = f"{entry['key']} is None"
            assert guard in conds, f"default rule not guarded by `{guard}`: {conds}"
            stated.add(guard)
        assert set(conds) <= stated, f"code runs under {conds}, rule states {sorted(stated)}"
        if table == "rule":
            assert isinstance(stmt, ast.Assign)
            assert canon(stmt.value) == canon(str(entry["value"]))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_entry_covers_a_verified_release(framework):
    meta = rulebook.load(framework).section("framework")
    assert meta["read"] in meta["verified"]
    for table, e in entries(framework):
        # An entry quoting a checkout between releases (`OWNER/NAME@COMMIT PATH:LINE`, verl's
        # 0.8.0.dev) holds where a checkout's code confirms it (rulebook.checkout), no release.
        between = "@" in str(e.get("source", "")).split(" ")[0]
        assert between or any(rulebook.version_in(v, e.get("versions", "*")) for v in meta["verified"]), \
            entry_name(framework, table, e)
        assert e.get("read", meta["read"]) in meta["verified"], entry_name(framework, table, e)


# --- a drift must fail: the same check on a doctored copy of a real release ------------------


@pytest.mark.wheels
def test_drifted_release_fails(tmp_path, monkeypatch):
    root = release_root("mcore-bridge", "1.4.1")
    doctored = tmp_path / "mcore_bridge" / "config" / "model_config.py"
    doctored.parent.mkdir(parents=True)
    doctored.write_text(read_text(root / "mcore_bridge/config/model_config.py")
                        .replace("variable_seq_lengths: bool = True",
                                 "variable_seq_lengths: bool = False"))
    monkeypatch.setattr(sys.modules[__name__], "release_root", lambda fw, v: tmp_path)
    entry = next(e for _, e in entries("mcore-bridge")
                 if e.get("id") == "bridge.default.variable_seq_lengths")
    with pytest.raises(AssertionError):
        test_entry_matches_release("mcore-bridge", "1.4.1", "rule", entry)


@pytest.mark.wheels
def test_drifted_guard_fails(tmp_path, monkeypatch):
    """A rule whose statement is still there, under another condition, no longer agrees."""
    root = release_root("megatron-lm", "0.17.0")
    doctored = tmp_path / "megatron" / "training" / "arguments.py"
    doctored.parent.mkdir(parents=True)
    text = read_text(root / "megatron/training/arguments.py")
    guard = "    if args.virtual_pipeline_model_parallel_size is not None:\n        if args.overlap_p2p_comm:"
    assert text.count(guard) == 1
    doctored.write_text(text.replace(guard, guard.replace("virtual_pipeline_model_parallel_size is not None",
                                                          "pipeline_model_parallel_size > 1")))
    entry = next(e for _, e in entries("megatron-lm") if e.get("id") == "mlm.no-vpp-no-overlap")
    test_entry_matches_release("megatron-lm", "0.17.0", "rule", entry)  # the real release agrees
    monkeypatch.setattr(sys.modules[__name__], "release_root", lambda fw, v: tmp_path)
    with pytest.raises(AssertionError, match="code runs under"):
        test_entry_matches_release("megatron-lm", "0.17.0", "rule", entry)


# --- torch: the installed release's files and library ---------------------------------------------

TORCH_VERSION = installed_torch_version()
needs_torch = pytest.mark.skipif(TORCH_VERSION is None, reason="torch is not installed")


def torch_dir() -> Path:
    import importlib.metadata
    return Path(importlib.metadata.distribution("torch").locate_file("torch"))


def torch_cases() -> list:
    data = rulebook.load("torch").data
    out = []
    for table in ("rule", "check", "env_var"):
        for e in data.get(table, []):
            src = e.get("source", "")
            if "code" in e and src.startswith("torch/") and \
                    rulebook.version_in(TORCH_VERSION, e.get("versions", "*")):
                out.append(pytest.param(e, id=e.get("id") or e["name"]))
    return out


@needs_torch
@pytest.mark.parametrize("entry", torch_cases())
def test_torch_entry_in_installed_torch(entry):
    path = torch_dir().parent / entry["source"].rpartition(":")[0]
    assert path.is_file(), path
    assert squash(entry["code"]) in squash(path.read_text(encoding="utf-8", errors="replace"))


@needs_torch
def test_wrapper_forwarding_matches_the_library():
    """The rules say _ProcessGroupWrapper forwards supportsCoalescing from 2.11 on; the symbol must
    be in this torch's libtorch_cpu exactly when the rules admit this version to that variant."""
    forwards = any(e.get("id") == "torch.backend-supports-coalescing"
                   and "torch_debug_wrapper" not in e["value"]
                   for e in rulebook.load("torch", TORCH_VERSION).table("rule"))
    lib = next((torch_dir() / "lib").glob("libtorch_cpu.*"))
    assert (b"ProcessGroupWrapper18supportsCoalescingEv" in lib.read_bytes()) is forwards


PROBE = textwrap.dedent("""
    import json, os, sys, torch, torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    rank, port = int(sys.argv[1]), int(sys.argv[2])
    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, wait_for_workers=True)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    entered = []
    original = c10d._coalescing_manager
    def spy(*a, **k):
        entered.append(True)
        return original(*a, **k)
    c10d._coalescing_manager = spy
    send, recv = torch.full((4,), float(rank)), torch.zeros(4)
    peer = 1 - rank
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]):
        w.wait()
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    if rank == 0:
        print(json.dumps({"wrapper": type(backend).__name__ == "_ProcessGroupWrapper",
                          "coalesced": bool(entered), "received": recv.tolist()}))
    dist.destroy_process_group()
""")


def run_probe(detail: bool) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DISTRIBUTED_DEBUG"}
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    procs = [subprocess.Popen([sys.executable, "-c", PROBE, str(r), str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in (0, 1)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    return json.loads(outs[0][0].strip().splitlines()[-1])


@needs_torch
@pytest.mark.parametrize("detail", [False, True])
def test_torch_rules_match_real_gloo(detail):
    observed = run_probe(detail)
    assert observed["received"] == [1.0] * 4
    script = ("export TORCH_DISTRIBUTED_DEBUG=DETAIL\n" if detail else "") + \
        "NPROC_PER_NODE=2 megatron sft --model m --ddp_backend gloo --pipeline_model_parallel_size 2\n"
    config = derive(parse_launch(script, "run.sh"),
                    {"megatron-core": "0.17.0", "ms-swift": "4.3.0", "mcore-bridge": "1.4.1"},
                    torch_version=TORCH_VERSION)
    assert config.value("torch_debug_wrapper") is observed["wrapper"]
    # Megatron's tensors are CUDA tensors; this probe's are CPU tensors: compare the backend
    # rule, which decides batch_isend_irecv on torch >= 2.7.
    if rulebook.version_in(TORCH_VERSION, ">=2.7"):
        assert config.value("torch_batch_coalesces") is observed["coalesced"]
