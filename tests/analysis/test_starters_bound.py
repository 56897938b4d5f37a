"""Process starters the entry reaches other than by an import alias of the standard library
(config/shell_command.py starts_programs; review r38-starters 1-3), and an entry issuing torch P2P
itself (config/own_p2p.py, asked by analysis/schedule_reach.py): before, each read NOT A PIPELINE RUN for
`torchrun --nproc_per_node 8 e2e.py --pp 4`, the torchrun it starts (or its own sends) never read.

The driver is tests/analysis/test_schedule_reach.py's (microsoft/DeepSpeedExamples@83757d9c93
applications/DeepSpeed-Chat/e2e_rlhf.py:159-173 builds a command and starts it). The forms:
a starter bound in a class body and called as `Cfg.start(...)` / `self.sp.check_call(...)`;
one a local module gives (`run = subprocess.run` in launch_utils.py, `from subprocess import *`
in helpers.py star-imported by the entry, as public launch helpers re-export subprocess);
psutil.Popen; `sys.modules["subprocess"].run`; torch's own launcher called from Python
(`torch.distributed.run.main([...])`, `elastic_launch(config, entrypoint)()`: the training run
itself, rules/stacks.toml [[package_starter]]).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from auditor.analysis.schedule_reach import KIND
from auditor.config.own_p2p import of_tree
from auditor.config.shell_command import starts_programs
from tests.analysis.test_schedule_reach import _driver, _scan

LAUNCHERS = ["torchrun --nproc_per_node 8", "python"]
FORMS = [
    # (the entry's call, its module-level lines, local modules {name: text})
    ("Cfg.start(get_cmd(args))", "import os\n\n\nclass Cfg:\n    start = os.system\n", {}),
    ("Launcher().go(get_cmd(args))",
     "class Launcher:\n    runner = subprocess.run\n\n    def go(self, cmd):\n        self.runner(cmd, shell=True)\n", {}),
    ("Runner().go(get_cmd(args))",
     "class Runner:\n    sp = subprocess\n\n    def go(self, cmd):\n        self.sp.check_call(cmd, shell=True)\n", {}),
    ("run(get_cmd(args), shell=True)", "from launch_utils import run",
     {"launch_utils.py": "import subprocess\n\nrun = subprocess.run\n"}),
    ("check_call(get_cmd(args), shell=True)", "from launch_utils import check_call",
     {"launch_utils.py": "from subprocess import check_call\n"}),
    ("check_call(get_cmd(args), shell=True)", "from helpers import *", {"helpers.py": "from subprocess import *\n"}),
    ("psutil.Popen(get_cmd(args), shell=True).wait()", "import psutil", {}),
    ('sys.modules["subprocess"].run(get_cmd(args), shell=True)', "import sys", {}),
    ("torchrun_main(get_cmd(args).split()[1:])", "from torch.distributed.run import main as torchrun_main", {}),
    ('elastic_launch(LaunchConfig(1, 1, 8), "python")(get_cmd(args).split()[-1])',
     "from torch.distributed.launcher.api import LaunchConfig, elastic_launch", {}),
    # the package's own re-export (torch/distributed/launcher/__init__.py), review r39-starters
    ('launch_agent(LaunchConfig(1, 1, 8), "python", get_cmd(args).split()[1:])',
     "from torch.distributed.launcher import LaunchConfig, launch_agent", {}),
    # a starter module a local module gives under its import alias, or as its attribute, and
    # torchrun's module reached through getattr (review r39-starters 2, 5)
    ("sp.run(get_cmd(args), shell=True)", "from launch_utils import sp", {"launch_utils.py": "import subprocess as sp\n"}),
    ("launch_utils.subprocess.run(get_cmd(args), shell=True)", "import launch_utils",
     {"launch_utils.py": "import subprocess\n"}),
    ("lu.sp.Popen(get_cmd(args), shell=True).wait()", "import launch_utils as lu",
     {"launch_utils.py": "import subprocess as sp\n"}),
    ('getattr(trun, "main")(get_cmd(args).split()[1:])', "from torch.distributed import run as trun", {}),
    # review r40-holes 2: the local module reads its alias itself (an exception class, torchrun's
    # parser) and still gives it to the entry
    ("sp.run(get_cmd(args), shell=True)", "from launch_utils import sp",
     {"launch_utils.py": "import subprocess as sp\n\n\ndef git_rev():\n    try:\n        return open('.git/HEAD').read()\n"
                         "    except (OSError, sp.SubprocessError):\n        return 'unknown'\n"}),
    ("lu.sp.Popen(get_cmd(args), shell=True).wait()", "import launch_utils as lu",
     {"launch_utils.py": "import subprocess as sp\n\nERRORS = (sp.CalledProcessError,)\n"}),
    ("trun.main(get_cmd(args).split()[1:])", "from launch_utils import trun",
     {"launch_utils.py": "import torch.distributed.run as trun\n\n\ndef launcher_parser():\n"
                         "    return trun.get_args_parser()\n"}),
    # review r40-holes 3: psutil's module handed on as a class attribute or an argument
    ("R().go(get_cmd(args))",
     "import psutil\n\n\nclass R:\n    lib = psutil\n\n    def go(self, cmd):\n        self.lib.Popen(cmd, shell=True).wait()\n",
     {}),
    ("launch(psutil, get_cmd(args))", "import psutil\n\n\ndef launch(m, cmd):\n    m.Popen(cmd, shell=True).wait()\n", {}),
    # review r41-interp 3: a local module's alias reached through a star import
    ("sp.run(get_cmd(args), shell=True)", "from launch_utils import *",
     {"launch_utils.py": "import subprocess as sp\n\nERRORS = (sp.CalledProcessError,)\n"}),
    ("sp.run(get_cmd(args), shell=True)", "from launch_utils import *",
     {"launch_utils.py": "import subprocess as sp\n\n__all__ = ['sp', 'ERRORS']\nERRORS = (sp.CalledProcessError,)\n"}),
]


def _entry(tmp_path: Path, run: str, more: str, local: dict[str, str], launcher: str) -> Path:
    for name, text in local.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return _driver(tmp_path, run, launcher, more)


@pytest.mark.heavy
@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("run, more, local", FORMS)
def test_a_starter_reached_otherwise_keeps_the_run_undecided(capsys, tmp_path, run, more, local, launcher):
    code, doc = _scan(capsys, _entry(tmp_path, run, more, local, launcher))
    verdict = doc["verdict"]
    assert verdict["status"] == "inconclusive" and code == 1, verdict["headline"]
    assert not any(f["kind"] == KIND for f in doc["findings"])


@pytest.mark.heavy
@pytest.mark.parametrize("run, more, local", FORMS[:3] + FORMS[6:])
def test_an_entry_importing_megatron_says_the_command(capsys, tmp_path, run, more, local):
    """Through the call-graph reader (analysis/schedule_reach.py): the command it runs is said."""
    more = f"{more}\nfrom megatron.training import get_args"
    code, doc = _scan(capsys, _entry(tmp_path, run, more, local, "torchrun --nproc_per_node 8"))
    assert doc["verdict"]["status"] == "inconclusive", doc["verdict"]["headline"]
    assert any(f["kind"] == "entry.runs-command" for f in doc["findings"]), doc["verdict"]["headline"]


@pytest.mark.parametrize("text", [
    # a name a module keeps to itself, a starter only bound in a function, a type only
    "import subprocess\n\n_run = subprocess.run\n",
    "import subprocess\n\n\ndef f():\n    run = subprocess.run\n    run(['mkdir', '-p', 'out'])\n",
    "from subprocess import CalledProcessError, PIPE\n",
    "import sys\n\nsys.modules['json'].dumps({})\nsys.modules[__name__].x = 1\n",
    "import psutil\n\nprint(psutil.cpu_count(), psutil.Process().memory_info())\n",
    "try:\n    import psutil\nexcept ImportError:\n    psutil = None\nif psutil is not None:\n    print(psutil.cpu_count())\n",
    "try:\n    import psutil\nexcept ImportError:\n    psutil = None\nif not psutil or x:\n    pass\n"
    "HAVE = psutil is not None and psutil.cpu_count() > 1\nwhile psutil:\n    break\n",
])
def test_what_starts_nothing_is_no_starter(text):
    assert starts_programs(ast.parse(text)) == []


# A torchrun'd script with hand-written P2P and no framework (the ring exchange of torch's
# distributed tutorial, https://pytorch.org/tutorials/intermediate/dist_tuto.html `run`:
# `dist.send(tensor=tensor, dst=1)` / `dist.recv(tensor=tensor, src=0)`; a batch as megatron-core's
# p2p_communication.py builds one): a P2P run whose own sites are judged, never NOT A PIPELINE RUN.
P2P_SH = "#!/bin/bash\n# megatron-core==0.19.2 torch==2.11.0\ntorchrun --nproc_per_node 8 ring.py --pp 4\n"
P2P_PY = """import torch
import torch.distributed as dist
{more}

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
buf, out = torch.zeros(4), torch.zeros(4)
{body}
"""


@pytest.mark.heavy
@pytest.mark.parametrize("more, body", [
    ("", "if rank % 2 == 0:\n    dist.send(buf, rank + 1)\nelse:\n    dist.recv(buf, rank - 1)"),
    ("", "ops = [dist.P2POp(dist.isend, buf, (rank + 1) % world), dist.P2POp(dist.irecv, out, (rank - 1) % world)]\n"
         "for req in dist.batch_isend_irecv(ops):\n    req.wait()"),
    ("from torch.distributed import isend, irecv", "isend(buf, (rank + 1) % world).wait()\nirecv(out).wait()"),
])
def test_an_entry_s_own_p2p_is_no_run_without_a_pipeline(capsys, tmp_path, more, body):
    (tmp_path / "ring.py").write_text(P2P_PY.format(more=more, body=body), encoding="utf-8")
    (tmp_path / "ring.sh").write_text(P2P_SH, encoding="utf-8")
    code, doc = _scan(capsys, tmp_path / "ring.sh")
    assert doc["verdict"]["status"] != "not-pipeline", doc["verdict"]["headline"]
    assert not any(f["kind"] == KIND for f in doc["findings"])


def test_a_send_of_another_object_is_not_torch_p2p():
    """A multiprocessing pipe's or a socket's `.send` is no torch P2P (the reader keeps the run)."""
    assert not of_tree(ast.parse("import socket\nconn = socket.socket()\nconn.send(b'x')\nparent.recv()\n")).issues
    assert of_tree(ast.parse("import torch.distributed as dist\nops = [dist.P2POp(dist.isend, t, 1)]\n")).issues


def test_a_local_module_s_alias_running_a_file_utility_starts_nothing(tmp_path):
    """The alias a local module gives, read through it: `sp.run(["mkdir", ...])` is a file
    utility's command line (review r40-holes 2's fix must not count every alias given on)."""
    (tmp_path / "launch_utils.py").write_text("import subprocess as sp\n\nsp.run(['mkdir', '-p', 'out'])\n")
    entry = tmp_path / "e2e.py"
    entry.write_text("from launch_utils import sp\n\nsp.run(['mkdir', '-p', 'logs'])\n")
    assert starts_programs(ast.parse(entry.read_text()), entry) == []
    entry.write_text("from launch_utils import sp\n\nsp.run(cmd, shell=True)\n")
    assert starts_programs(ast.parse(entry.read_text()), entry) != []
