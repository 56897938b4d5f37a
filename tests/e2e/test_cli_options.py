"""One spelling per idea across the commands, with the older spellings kept as aliases: the trace
directory (`--trace`; `record --out`, `simulate --trace-dir`), the init mode (`--init`;
`doctor --eager`), targets (`--target`; `sites TARGET`) and `-o` on every command that prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import build_parser


def parse(*argv: str):
    return build_parser(only=argv[0]).parse_args(list(argv))


def p2paudit(*args: str, cwd: Path | None = None):
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=300)


# VALID: every spelling of one idea lands on the value the command reads.
@pytest.mark.parametrize("argv, dest, value", [
    (("record", "--trace", "t/"), "out", Path("t/")),
    (("record", "--out", "t/"), "out", Path("t/")),
    (("record", "-o", "t/"), "out", Path("t/")),
    (("record",), "out", Path("p2paudit-trace")),
    (("simulate", "--config", "r.sh", "--trace", "t/"), "trace_dir", Path("t/")),
    (("simulate", "--config", "r.sh", "--trace-dir", "t/"), "trace_dir", Path("t/")),
    (("simulate", "--config", "r.sh"), "trace_dir", None),
    (("report", "--scan", "s.json", "--trace", "t/"), "trace", "t/"),
    (("scan", "--config", "r.sh", "--trace", "t/"), "trace", "t/"),
    (("doctor", "--init", "eager"), "eager", True),
    (("doctor", "--eager"), "eager", True),
    (("doctor", "--init", "lazy"), "eager", False),
    (("doctor",), "eager", False),
    (("report", "--scan", "s.json", "--init", "eager"), "init", "eager"),
    (("report", "--scan", "s.json"), "init", None),
    (("sites", "a==1", "b==2"), "targets", ["a==1", "b==2"]),
    (("sites", "--target", "a==1", "--target", "b==2"), "targets", ["a==1", "b==2"]),
    (("sites", "a==1", "--target", "b==2"), "targets", ["a==1", "b==2"]),
    (("sites", "--target", "b==2", "a==1"), "targets", ["b==2", "a==1"]),
    (("scan", "--config", "r.sh", "--target", "a==1"), "target", ["a==1"]),
    (("gate", "--config", "r.sh", "--baseline", "b.json"), "target", []),
    (("repro", "fallback-1f1b", "-o", "x.txt"), "output", "x.txt"),
    (("doctor", "--output", "x.txt"), "output", "x.txt"),
    (("diff", "a.json", "b.json", "-o", "x.txt"), "output", "x.txt"),
])
def test_valid_spellings(argv, dest, value):
    assert getattr(parse(*argv), dest) == value


# INVALID: a mode outside lazy/eager, an option a command does not take, is bad input (exit 2).
@pytest.mark.parametrize("argv", [
    ("doctor", "--init", "Eager"),
    ("report", "--scan", "s.json", "--init", "early"),
    ("record", "--trace"),
    ("scan", "--config", "r.sh", "--trace-dir", "t/"),
])
def test_invalid_spellings(argv):
    with pytest.raises(SystemExit) as exc:
        parse(*argv)
    assert exc.value.code == 2


def test_sites_without_a_target_is_bad_input():
    proc = p2paudit("sites", "--format", "json")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "p2paudit sites: error: TARGET: name at least one target (`sites NAME==VERSION` or `--target`)"]


def test_sites_target_option_prints_what_the_positional_prints(tmp_path):
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "comm.py").write_text("import torch.distributed as dist\n\n\ndef ping(t):\n    dist.send(t, 1)\n")
    positional = p2paudit("sites", str(tmp_path / "proj"))
    option = p2paudit("sites", "--target", str(tmp_path / "proj"))
    assert positional.returncode == option.returncode == 0, positional.stderr + option.stderr
    def sites(out: str) -> list[str]:  # the second run reads the first one's parse from the cache
        return [line for line in out.splitlines() if "from cache" not in line]

    assert "pkg/comm.py" in positional.stdout and sites(option.stdout) == sites(positional.stdout)


@pytest.mark.heavy
def test_repro_predict_writes_to_o(tmp_path):
    out = tmp_path / "predict.txt"
    printed = p2paudit("repro", "fallback-1f1b", "--predict")
    written = p2paudit("repro", "fallback-1f1b", "--predict", "-o", str(out))
    assert printed.returncode == written.returncode == 1, printed.stderr + written.stderr
    assert written.stdout == "" and out.read_text() == printed.stdout
    assert printed.stdout.startswith("fallback-1f1b, 2 stages")
