"""PP-BugBench: each case's buggy release really holds the code its issue names.

Every `[[code]]` entry of `benchmarks/ppbugs/cases/*/case.toml` names a release, a file and a function
and says what must (`contains`, `op_order`) or must not (`lacks`, `absent`) be in it. The releases
come from PyPI through the p2paudit cache, as `p2paudit sites NAME==VERSION` fetches them; torch is
read from the installed build, which must be the pinned version.
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from auditor import sources
from auditor.analysis.waitfor.transports import transport_names
from auditor.errors import InputError

pytestmark = pytest.mark.wheels

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "benchmarks" / "ppbugs" / "cases"
VERDICTS = {"hang", "may hang", "mismatch", "clean"}
RUNNERS = {"scan", "simulate", "record"}


def load_cases() -> dict[str, dict]:
    return {p.parent.name: tomllib.loads(p.read_text(encoding="utf-8")) for p in sorted(CASES.glob("*/case.toml"))}


CORPUS = load_cases()
CODE = [(case_id, i, entry) for case_id, case in CORPUS.items() for i, entry in enumerate(case.get("code", []))]


def release_root(release: str) -> Path:
    name, _, version = release.partition("==")
    if name == "torch":
        import torch
        if torch.__version__.split("+")[0] != version:
            pytest.skip(f"{release}: installed torch is {torch.__version__}")
        return Path(torch.__file__).parent.parent
    try:
        return Path(sources.resolve(release).root)
    except InputError:
        # DeepSpeed publishes source distributions only; p2paudit's pin resolver fetches wheels.
        return Path(sources.resolve(str(fetch_sdist(name, version))).root)


def fetch_sdist(name: str, version: str) -> Path:
    """The release's sdist, downloaded once into the p2paudit cache next to the wheels."""
    folder = sources.cache_dir() / "downloads" / f"{name}-{version}"
    found = sorted(folder.glob("*.tar.gz"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--disable-pip-version-check", "-q", "-d", str(folder), f"{name}=={version}"],
                       check=True, timeout=600)
        found = sorted(folder.glob("*.tar.gz"))
    return found[0]


def find_function(tree: ast.Module, dotted: str) -> ast.FunctionDef | None:
    """The function `f` or method `Class.f` defined at the top of a module, else None."""
    scope: list[ast.stmt] = tree.body
    *classes, name = dotted.split(".")
    for cls in classes:
        found = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if found is None:
            return None
        scope = found.body
    return next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)


def appended_ops(func: ast.FunctionDef) -> list[str]:
    """Names passed to `ops.append(...)`, in source order: the order a batch is built in."""
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "append" and isinstance(n.func.value, ast.Name) and n.func.value.id == "ops"
             and len(n.args) == 1 and isinstance(n.args[0], ast.Name)]
    return [c.args[0].id for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]


def squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("case_id,index,entry", CODE, ids=[f"{c}:{i}:{e['release']}:{e['function']}" for c, i, e in CODE])
def test_release_holds_the_named_code(case_id, index, entry):
    path = release_root(entry["release"]) / entry["path"]
    assert path.is_file(), f"{entry['release']} has no {entry['path']}"
    text = path.read_text(encoding="utf-8")
    func = find_function(ast.parse(text), entry["function"])
    if entry.get("absent"):
        assert func is None, f"{entry['release']} already defines {entry['function']}"
        return
    assert func is not None, f"{entry['release']}: no {entry['function']} in {entry['path']}"
    body = squash(ast.get_source_segment(text, func))
    if "contains" in entry:
        assert squash(entry["contains"]) in body
    for absent in entry.get("lacks", []):
        assert absent not in body, f"{entry['function']} reads {absent!r}"
    if "op_order" in entry:
        assert appended_ops(func) == entry["op_order"]


def test_find_function_and_op_order_on_known_source():
    tree = ast.parse("class P:\n    def f(self):\n        ops = []\n        ops.append(b)\n        ops.append(a)\n"
                     "def g():\n    pass\n")
    assert appended_ops(find_function(tree, "P.f")) == ["b", "a"]
    assert find_function(tree, "g") is not None
    assert find_function(tree, "P.g") is None and find_function(tree, "Q.f") is None


@pytest.mark.parametrize("case_id", sorted(CORPUS))
def test_case_is_complete(case_id):
    """Each case: a README, the issue URL, a code claim and two sides that are runnable as written."""
    case, folder = CORPUS[case_id], CASES / case_id
    assert case["case"]["id"] == case_id
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for url in case["case"]["issues"]:
        assert url.startswith("https://github.com/") and url in readme
    # No code claim only where the case says why no PyPI release holds the code (`no_release`).
    assert case.get("code") or case["case"].get("no_release")
    sides = case["side"]
    assert len(sides) >= 2 and len({s["name"] for s in sides}) == len(sides)
    for side in sides:
        assert side["expected"] in VERDICTS and side["runner"] in RUNNERS and side["pins"]
        if side["runner"] == "record":
            driver = next(arg for arg in side["command"] if arg.endswith(".py"))
            assert (folder / driver).is_file(), f"{case_id}: no {driver}"
            assert side["transport"] in transport_names()
        else:
            assert (ROOT / side["script"]).is_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.heavy
@pytest.mark.parametrize("recv_numel,expected", [(4, [1.0, 2.0, 3.0, 0.0]), (5, [1.0, 2.0, 3.0, 0.0, 0.0]), (3, [1.0, 2.0, 3.0])])
def test_size_mismatch_driver_truncates_silently_on_gloo(recv_numel, expected):
    """pytorch #113376 on gloo: the larger receive completes with the send's 3 elements and no error."""
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                          "--master_port", str(free_port()), "driver.py", str(recv_numel)],
                         cwd=CASES / "pytorch-113376", capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"rank 1: done, received {expected}" in run.stdout


def interleaved_order(defer: str) -> dict[int, list[str]]:
    """torch's own lowering of Interleaved1F1B, pp=2, 4 stages, 4 micro-batches (as in #172668)."""
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
    from torch.distributed.pipelining.schedules import _defer_recv_ops
    rows = get_schedule_ops("Interleaved1F1B", pp_degree=2, num_microbatches=4, with_comms=True)
    actions = {rank: [a for a in row if a is not None] for rank, row in enumerate(rows)}
    stage_to_rank = {"naive": lambda stage: -1, "parity": lambda stage: stage % 2}.get(defer)
    if stage_to_rank is not None:
        actions = _defer_recv_ops(actions, stage_to_rank=stage_to_rank)
    return {rank: [str(a) for a in row] for rank, row in actions.items()}


def p2p(order: list[str]) -> list[str]:
    return [a for a in order if "SEND" in a or "RECV" in a]


def test_naive_deferral_reaches_the_stuck_state_of_the_thread():
    """The thread's 2-node hang: rank 0 [0SEND_F1, 2RECV_F0], rank 1 [1SEND_F0, 1RECV_F1], both send first."""
    order = interleaved_order("naive")
    rank0, rank1 = p2p(order[0]), p2p(order[1])
    assert rank0[rank0.index("0SEND_F1") + 1] == "2RECV_F0"
    assert rank1[rank1.index("1SEND_F0") + 1] == "1RECV_F1"
    asap = p2p(interleaved_order("asap")[0])
    assert asap.index("2RECV_F0") < asap.index("0SEND_F1")


def test_rank_parity_order_keeps_a_send_send_pair():
    """torch 2.13.0's fix (defer_pp_recv=True): rank 0 sends 2F1 before receiving 2B0 while rank 1
    sends 3B0 before receiving 3F1: a send-first pair, so the order can deadlock (the case's
    README); the fix's PR claims none. Rank 0's send-first is already in the ASAP order, where
    rank 1 received 3F1 first; the deferral moves rank 1's receive behind its send, and the
    parity rule (flush *deferred* receives before sending to a higher peer) has nothing to flush
    on rank 0."""
    order = interleaved_order("parity")
    rank0, rank1 = p2p(order[0]), p2p(order[1])
    assert rank0.index("2SEND_F1") < rank0.index("2RECV_B0")
    assert rank1.index("3SEND_B0") < rank1.index("3RECV_F1")
    asap = interleaved_order("asap")
    asap0, asap1 = p2p(asap[0]), p2p(asap[1])
    assert asap0.index("2SEND_F1") < asap0.index("2RECV_B0")
    assert asap1.index("3RECV_F1") < asap1.index("3SEND_B0")
