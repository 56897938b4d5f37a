"""Each spelling of a P2P call carries VALID examples (code that must yield exactly the given
sites) and INVALID examples (code that must yield none), fixit style; the examples are the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from textwrap import dedent

import pytest

from auditor.rulebook.apis import load_table
from auditor.static.sites.sites import find_sites

# (api, op, batched, group, form) per site, in source order.
Expect = list[tuple[str, str | None, bool, str, str]]


@dataclass
class Spelling:
    name: str
    valid: list[tuple[str, Expect]] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)


SPELLINGS = [
    Spelling(
        "torch.distributed.X",
        valid=[("import torch\ntorch.distributed.isend(t, 1)\n", [("isend", None, False, "default", "call")])],
        invalid=["import torch\ntorch.isend(t, 1)\n", "torch.distributed.isend(t, 1)  # never imported\n"],
    ),
    Spelling(
        "import torch.distributed as dist",
        valid=[(
            "import torch.distributed as dist\ndist.irecv(t, src=0, group=pp)\n",
            [("irecv", None, False, "pp", "call")],
        )],
        invalid=["import torch.distributed as dist\ndist.all_reduce(t)\n"],
    ),
    Spelling(
        "from torch import distributed",
        valid=[("from torch import distributed\ndistributed.send(t, 1)\n", [("send", None, False, "default", "call")])],
        invalid=["from torch import nn\nnn.send(t)\n"],
    ),
    Spelling(
        "from torch.distributed import isend as snd",
        valid=[("from torch.distributed import isend as snd\nsnd(t, 1)\n", [("isend", None, False, "default", "call")])],
        invalid=["from mylib import isend as snd\nsnd(t, 1)\n"],
    ),
    Spelling(
        "distributed_c10d module",
        valid=[(
            "import torch.distributed.distributed_c10d as c10d\nc10d.recv(t, 0)\n",
            [("recv", None, False, "default", "call")],
        )],
    ),
    Spelling(
        "alias assignment",
        valid=[
            ("import torch.distributed as dist\nsnd = dist.isend\nsnd(t, 1)\n", [("isend", None, False, "default", "call")]),
            # The op escapes as a value where the alias is used.
            ("import torch.distributed as dist\nsnd = dist.isend\nregister(snd)\n", [("isend", None, False, "unknown", "reference")]),
            # Never used: the assignment is the site.
            ("import torch.distributed as dist\nsnd = dist.isend\n", [("isend", None, False, "unknown", "reference")]),
            # Assigned in two branches: each keeps its own API (Megatron-LM's bridge_communicator).
            (
                "import torch.distributed as dist\nif sending:\n    p2p_op = dist.isend\nelse:\n"
                "    p2p_op = dist.irecv\np2p_op(t, peer)\n",
                [("isend", None, False, "default", "call"), ("irecv", None, False, "default", "call")],
            ),
            (
                "import torch.distributed as dist\nif sending:\n    p2p_op = dist.isend\nelse:\n"
                "    p2p_op = dist.irecv\nregister(p2p_op)\n",
                [("isend", None, False, "unknown", "reference"), ("irecv", None, False, "unknown", "reference")],
            ),
        ],
        invalid=["import torch.distributed as dist\ndist = FakeDist()\ndist.isend(t, 1)\n"],
    ),
    Spelling(
        "functools.partial",
        valid=[
            (
                "import functools\nimport torch.distributed as dist\nf = functools.partial(dist.isend, group=pp)\n",
                [("isend", None, False, "pp", "partial")],
            ),
            (
                "from functools import partial\nfrom torch import distributed as d\nf = partial(d.irecv, t, 0, g)\n",
                [("irecv", None, False, "g", "partial")],
            ),
        ],
        invalid=["import functools\nf = functools.partial(print, 1)\n"],
    ),
    Spelling(
        "P2POp with the op passed as a value",
        valid=[(
            dedent("""\
                import torch
                op = torch.distributed.P2POp(torch.distributed.isend, t, 1, pp)
                torch.distributed.batch_isend_irecv([op])
            """),
            [("P2POp", "isend", True, "pp", "call"), ("batch_isend_irecv", None, True, "pp", "call")],
        ), (
            # Never handed to a batch: it describes an op nothing issues.
            "import torch.distributed as dist\nop = dist.P2POp(op=dist.irecv, tensor=t, peer=0)\n",
            [("P2POp", "irecv", False, "default", "call")],
        )],
        invalid=["class P2POp: pass\nP2POp(print, 1)\n"],
    ),
    Spelling(
        "an op passed as a value",
        valid=[(
            "import torch.distributed as dist\nops = []\nops.append(dist.irecv)\n",
            [("irecv", None, False, "unknown", "reference")],
        )],
        invalid=["import torch.distributed as dist\nops: list[dist.P2POp] = []\n"],
    ),
    Spelling(
        "coalescing manager block",
        valid=[(
            dedent("""\
                import torch.distributed as dist
                from torch.distributed import _coalescing_manager
                def f(t, pg):
                    with _coalescing_manager(pg, async_ops=True) as cm:
                        dist.isend(t, 1, group=pg)
                    dist.irecv(t, 1, group=pg)
            """),
            [("isend", None, True, "pg", "call"), ("irecv", None, False, "pg", "call")],
        )],
    ),
    Spelling(
        "ProcessGroup methods on a known process group",
        valid=[(
            dedent("""\
                import torch.distributed as dist
                from torch.distributed import ProcessGroup
                from typing import Optional
                def f(t, pg: dist.ProcessGroup, other: Optional[ProcessGroup]):
                    pg.send([t], 1, 0)
                    other.recv([t], 0, 0)
                class Ring:
                    def __init__(self, ranks):
                        self.group = dist.new_group(ranks)
                    def step(self, t):
                        self.group.send([t], 1, 0)
                        dist.new_group([0, 1]).recv([t], 0, 0)
            """),
            [
                ("send", None, False, "pg", "method"),
                ("recv", None, False, "other", "method"),
                ("send", None, False, "self.group", "method"),
                ("recv", None, False, "dist.new_group([0, 1])", "method"),
            ],
        )],
        invalid=[
            "import socket\ns = socket.socket()\ns.send(b'x')\n",
            "from multiprocessing import Pipe\nconnection, _ = Pipe()\nconnection.send(1)\nconnection.recv()\n",
            "import zmq\nsock = zmq.Context().socket(zmq.REQ)\nsock.send(b'')\nsock.recv()\n",
            "import torch.distributed as dist\ndef f(pg):\n    pg.send([t], 1, 0)  # pg's type is unknown\n",
        ],
    ),
    Spelling(
        "a call on the result of a P2P call",
        valid=[(
            "import torch.distributed as dist\ndist.irecv(t, 0).wait()\ndist.new_group([0, 1]).send([t], 1, 0).wait()\n",
            [("irecv", None, False, "default", "call"), ("send", None, False, "dist.new_group([0, 1])", "method")],
        )],
    ),
    Spelling(
        "module-level alias of the module",
        valid=[("import torch.distributed as dist\nbackend = dist\nbackend.isend(t, 1)\n",
                [("isend", None, False, "default", "call")])],
        invalid=["import torch.distributed as dist\nbackend = dist\nbackend = Other()\nbackend.isend(t, 1)\n"],
    ),
    Spelling(
        "instance attribute alias",
        valid=[(
            dedent("""\
                import torch
                class Comm:
                    def __init__(self):
                        self.d = torch.distributed
                    def step(self, t):
                        self.d.send(t, 1)
                        self.d.isend(t, 2)
            """),
            [("send", None, False, "default", "call"), ("isend", None, False, "default", "call")],
        )],
        invalid=[
            "import torch\nclass C:\n    def __init__(self):\n        self.d = mylib\n    def f(self, t):\n        self.d.send(t, 1)\n",
            "import torch\nclass C:\n    def f(self, t):\n        self.d.send(t, 1)  # never set to torch\n",
        ],
    ),
    Spelling(
        "getattr with a constant name",
        valid=[
            ("import torch.distributed as dist\ngetattr(dist, 'isend')(t, 1)\n",
             [("isend", None, False, "default", "call")]),
            ("import torch.distributed as dist\nf = getattr(dist, 'irecv')\nf(t, 0)\n",
             [("irecv", None, False, "default", "call")]),
        ],
        invalid=[
            "import torch.distributed as dist\ngetattr(dist, name)(t, 1)\n",
            "import mylib\ngetattr(mylib, 'isend')(t, 1)\n",
            "import torch.distributed as dist\ndef getattr(a, b):\n    pass\ngetattr(dist, 'isend')(t, 1)\n",
        ],
    ),
    Spelling(
        "ops kept in a table and called through it",
        valid=[
            ("import torch.distributed as dist\nOPS = {'send': dist.isend, 'recv': dist.irecv}\nOPS['recv'](t, 0)\n",
             [("irecv", None, False, "default", "call")]),
            ("import torch.distributed as dist\nOPS = [dist.isend, dist.irecv]\ndef f(i):\n    OPS[i](t, 0)\n",
             [("isend", None, False, "default", "call"), ("irecv", None, False, "default", "call")]),
            # Never called through: the table holds references.
            ("import torch.distributed as dist\nOPS = {'send': dist.isend}\n",
             [("isend", None, False, "unknown", "reference")]),
        ],
        invalid=["import torch.distributed as dist\nOPS = {'send': mylib.isend}\nOPS['send'](t, 0)\n",
                 "OPS = {}\nOPS['send'](t, 0)\n"],
    ),
    Spelling(
        "comparisons and type tests are not sites",
        invalid=[
            "import torch.distributed as dist\nif op_types == {dist.isend}:\n    pass\n",
            "import torch.distributed as dist\nsame = op.op is dist.irecv\n",
            "import torch.distributed as dist\nok = isinstance(op, dist.P2POp)\n",
        ],
    ),
    Spelling(
        "P2POp batched only where a batch takes it",
        valid=[
            (  # through a list and its append
                dedent("""\
                    import torch.distributed as dist
                    def f(t):
                        ops = []
                        op = dist.P2POp(dist.isend, t, 1)
                        ops.append(op)
                        dist.batch_isend_irecv(ops)
                """),
                [("P2POp", "isend", True, "default", "call"), ("batch_isend_irecv", None, True, "default", "call")],
            ),
            (  # an op passed as a value into a helper that makes the P2POp (ColossalAI's queue filler)
                dedent("""\
                    import torch.distributed as dist
                    def fill(t, comm_op, peer, queue, group):
                        queue.append(dist.P2POp(comm_op, t, peer, group))
                    def step(t):
                        ops = []
                        fill(t, dist.isend, 1, ops, None)
                        fill(t, dist.irecv, 0, ops, None)
                        return dist.batch_isend_irecv(ops)
                """),
                [("P2POp", "comm_op", True, "group", "call"), ("batch_isend_irecv", None, True, "from ops", "call")],
            ),
            (  # through a return value into the caller's batch
                dedent("""\
                    import torch.distributed as dist
                    def make(t):
                        return [dist.P2POp(dist.irecv, t, 0)]
                    def step(t):
                        dist.batch_isend_irecv(make(t))
                """),
                [("P2POp", "irecv", True, "default", "call"), ("batch_isend_irecv", None, True, "from ops", "call")],
            ),
            (  # confined to a function and never batched: it describes an op nothing issues
                dedent("""\
                    import torch.distributed as dist
                    def f(t):
                        ops = [dist.P2POp(dist.isend, t, 1)]
                        del ops
                """),
                [("P2POp", "isend", False, "default", "call")],
            ),
        ],
    ),
    Spelling(
        "local functions that share a P2P name",
        invalid=[
            "def send(x):\n    pass\nsend(1)\n",
            "import torch.distributed as dist\ndef f():\n    def recv():\n        pass\n    recv()\n",
            "from torch.distributed import isend\ndef isend(x):\n    pass\nisend(1)\n",
        ],
    ),
]

CASES = [(s.name, code, expect) for s in SPELLINGS for code, expect in s.valid]
NEGATIVE = [(s.name, code) for s in SPELLINGS for code in s.invalid]


def sites_of(code: str):
    return find_sites(code, "m.py", "m", "pkg", load_table())


@pytest.mark.parametrize("name,code,expect", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_valid(name, code, expect):
    got = [(s.api, s.op, s.batched, s.group, s.form) for s in sites_of(code)]
    assert got == expect


@pytest.mark.parametrize("name,code", NEGATIVE, ids=[f"{c[0]}-{i}" for i, c in enumerate(NEGATIVE)])
def test_invalid(name, code):
    assert sites_of(code) == []


def test_every_api_in_the_rules_has_a_valid_example():
    covered = {e[0] for _, _, expect in CASES for e in expect}
    rules_apis = {entry["name"] for entry in load_table().by_qualname.values()}
    assert rules_apis - covered <= {"send_object_list", "recv_object_list", "ring_exchange"}


def test_lines_are_exact_in_multiline_calls_and_look_alikes():
    code = dedent("""\
        import torch.distributed as dist
        def f(t):
            dist.irecv(t, 1)
            ops = [
                dist.irecv,
            ]
            return dist.isend(
                t,
                2,
            )
    """)
    got = [(s.api, s.form, s.line, s.end_line) for s in sites_of(code)]
    assert got == [("irecv", "call", 3, 3), ("irecv", "reference", 5, 5), ("isend", "call", 7, 10)]


@pytest.mark.parametrize("module,expect", [
    ("torch.distributed.distributed_c10d", [("send", "call"), ("batch_isend_irecv", "call"), ("P2POp", "call")]),
    ("mylib.comm", []),
])
def test_names_defined_in_the_module_when_the_target_is_torch(module, expect):
    """torch's own `send_object_list` calls its module's `send` and `P2POp(isend, ...)` bare."""
    code = dedent("""\
        def send(tensor, dst): ...
        def isend(tensor, dst): ...
        class P2POp: ...
        def batch_isend_irecv(ops): ...
        def send_object_list(t, dst):
            send(t, dst)
            batch_isend_irecv([P2POp(isend, t, dst)])
    """)
    got = [(s.api, s.form) for s in find_sites(code, "x.py", module, "torch", load_table())]
    assert got == expect


def test_site_ids_are_stable_across_line_shifts():
    code = "import torch.distributed as dist\ndef f(t):\n    dist.isend(t, 1)\n    dist.isend(t, 2)\n"
    before = [s.id for s in sites_of(code)]
    after = [s.id for s in sites_of("# a new comment\n\n" + code)]
    assert before == after == ["pkg:m.f:isend:0", "pkg:m.f:isend:1"]


def test_lines_and_texts_as_written_with_crlf_and_non_ascii():
    """Columns are UTF-8 bytes in `ast`; the texts must still be the code as written."""
    code = ('import torch.distributed as dist\r\ndef f(t):\r\n    x = "é"; dist.isend(t, 1)\r\n'
            '    return dist.irecv(\r\n        t, src=0, group=(pp))\r\n')
    got = [(s.api, s.line, s.end_line, s.text, s.group) for s in sites_of(code)]
    assert got == [("isend", 3, 3, "dist.isend(t, 1)", "default"),
                   ("irecv", 4, 5, "dist.irecv(", "pp")]
