"""Spellings that span modules: a package's files, written to a directory and inventoried as a
target. VALID packages must yield exactly the given sites of `user.py`; INVALID ones none."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import sources
from auditor.static.inventory import inventory

# files (pkg/<name>: text); user.py's expected (api, form), in source order.
VALID = {
    "star import of a module that imports torch (DeepSpeed's comm/torch.py)": (
        {"comm.py": "import torch\n", "user.py": "from .comm import *\ntorch.distributed.send(t, 1)\n"},
        [("send", "call")],
    ),
    "a chain of star imports": (
        {"a.py": "import torch.distributed as dist\n", "b.py": "from .a import *\n",
         "user.py": "from pkg.b import *\ndist.isend(t, 1)\n"},
        [("isend", "call")],
    ),
    "star import of a name __all__ lists": (
        {"a.py": "from torch.distributed import irecv\n__all__ = ['irecv']\n",
         "user.py": "from .a import *\nirecv(t, 0)\n"},
        [("irecv", "call")],
    ),
    "a re-exported module": (
        {"aliases.py": "import torch.distributed as dist\n",
         "user.py": "from pkg.aliases import dist\ndist.send(t, 1)\n"},
        [("send", "call")],
    ),
    "a re-export under another name, through a package __init__": (
        {"aliases.py": "import torch.distributed as dist\n", "__init__.py": "from .aliases import dist\n",
         "user.py": "from pkg import dist as d\nd.recv(t, 0)\n"},
        [("recv", "call")],
    ),
    "a module-level alias of torch.distributed, re-exported": (
        {"aliases.py": "import torch.distributed as dist\nbackend = dist\n",
         "user.py": "from .aliases import backend\nbackend.isend(t, 1)\n"},
        [("isend", "call")],
    ),
    "a re-exported function and getattr": (
        {"aliases.py": "import torch.distributed as dist\nsnd = getattr(dist, 'send')\n",
         "user.py": "from .aliases import snd\nsnd(t, 1)\n"},
        [("send", "call")],
    ),
}

INVALID = {
    "__all__ leaves the name out": {
        "a.py": "import torch.distributed as dist\n__all__ = ['helper']\n",
        "user.py": "from .a import *\ndist.isend(t, 1)\n",
    },
    "a private name is not star-exported": {
        "a.py": "import torch.distributed as _dist\n", "user.py": "from .a import *\n_dist.isend(t, 1)\n",
    },
    "the module's own binding after the star import wins": {
        "a.py": "import torch.distributed as dist\n",
        "user.py": "from .a import *\ndist = FakeDist()\ndist.isend(t, 1)\n",
    },
    "a package function that shares the name": {
        "fake.py": "def isend(t, peer):\n    pass\n", "user.py": "from pkg.fake import isend\nisend(t, 1)\n",
    },
    "an import inside a function exports nothing": {
        "a.py": "def f():\n    import torch.distributed as dist\n", "user.py": "from .a import *\ndist.isend(t, 1)\n",
    },
}


def _package(root: Path, files: dict[str, str]) -> sources.SourceSet:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(text)
    return sources.resolve(str(root))


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid(name, tmp_path):
    files, expect = VALID[name]
    inv = inventory(_package(tmp_path, files))
    assert [(s.api, s.form) for s in inv.sites if s.path == "pkg/user.py"] == expect


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name, tmp_path):
    assert [s for s in inventory(_package(tmp_path, INVALID[name])).sites if s.path == "pkg/user.py"] == []


def test_a_changed_exporter_changes_the_importer_result(tmp_path):
    """The importer's bytes do not change, but what it receives does: not a stale cache hit."""
    src = _package(tmp_path, {"comm.py": "import torch\n", "user.py": "from .comm import *\ntorch.distributed.send(t, 1)\n"})
    assert len(inventory(src).sites) == 1
    (tmp_path / "pkg" / "comm.py").write_text("torch = None\n")
    assert inventory(sources.resolve(str(tmp_path))).sites == []


def test_the_call_graph_and_the_inventory_share_the_cache(tmp_path):
    """The call graph parses a module without knowing its package routes; the inventory then
    redoes that file with them (and the call graph reads the inventory's result afterwards)."""
    from auditor.static.interp.program import Program

    src = _package(tmp_path, {"comm.py": "import torch\n", "user.py": "from .comm import *\ntorch.distributed.send(t, 1)\n"})
    program = Program([src], jobs=0)
    assert program.module("pkg.user") is not None
    program.close()
    assert [(s.path, s.api) for s in inventory(src).sites] == [("pkg/user.py", "send")]
    again = Program([src], jobs=0)
    again.module("pkg.user")
    assert (again.parsed, again.cached) == (0, 1)
    assert [(s.path, s.api) for s in inventory(src).sites] == [("pkg/user.py", "send")]
