"""A function recursing through itself with new arguments each time is walked, not cut by the
depth budget: torch's own construct (pytorch/pytorch v2.13.0 cf30153c,
torch/utils/_config_module.py:189-236, `install_config_module`'s `visit(value, proxy,
f"{name}.")`, its prefix one level longer per call), which every `torch._dynamo` import runs and
which cut torchtitan's scan at MAX_DEPTH, leaving the pipelining stage's metadata sends unknown."""

from __future__ import annotations

from tests.static.interp.test_callgraph import COMM, analyse

CONFIG = '''
from pkg import comm

class Entry:
    def __init__(self, name):
        self.name = name

class SubConfigProxy:
    def __init__(self, config, prefix):
        self.__dict__["_config"] = config
        self.__dict__["_prefix"] = prefix

def install(module):
    config = {}
    def visit(source, dest, prefix):
        for key, value in list(source.__dict__.items()):
            name = f"{prefix}{key}"
            if isinstance(value, type):  # a subconfig class: a proxy one level deeper
                proxy = SubConfigProxy(module, f"{name}.")
                visit(value, proxy, f"{name}.")
                dest.__dict__[key] = proxy
            else:
                config[name] = Entry(name)
    visit(module, module, "")
    return config

def send_meta(t, use_batch):
    if use_batch:
        comm.batched(tensor=t, peer=1, group=None)
    else:
        comm.unbatched(tensor=t, peer=1, group=None)
'''
ENTRY = "from pkg.config import install, send_meta\ninstall(DATA)\nsend_meta(DATA, True)\n"


def test_a_recursion_with_growing_arguments_is_no_budget_cut(tmp_path):
    out = analyse(tmp_path, {"pkg/comm.py": COMM, "pkg/config.py": CONFIG}, ENTRY, {})
    assert out["<cuts>"] == []
    assert out["batched:P2POp"].reachable == "yes"
    # Decided, not left to the budget: `use_batch` is True, so the other branch never runs.
    assert out["unbatched:isend"].reachable == "no"


def test_the_recursive_call_s_sites_are_still_reached(tmp_path):
    """The deeper calls are walked with their arguments unknown: what they reach stays reached."""
    files = {"pkg/comm.py": COMM, "pkg/deep.py": '''
        from pkg import comm
        class Node:
            pass
        def walk(node, depth):
            if depth == 3:
                comm.unbatched(tensor=node, peer=1, group=None)
            walk(Node(), depth + 1)
    '''}
    out = analyse(tmp_path, files, "from pkg.deep import walk, Node\nwalk(Node(), 0)\n", {})
    assert out["<cuts>"] == []
    assert out["unbatched:isend"].reachable == "yes"
