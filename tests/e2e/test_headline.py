"""Each command's headline agrees with its exit status: a run that exits 1 never reads clean, and
one that exits 0 never reads like a failure. Every command that prints a verdict is run as a user
runs it (the real CLI, the shipped GLM-5.1 script, the real megatron-core PP=4 trace); where one
command shows its headline in two places (report: stderr and the HTML) they are the same text.
`record` and `doctor` launch ranks and `diff` exits 0 whatever changed, so they are not here."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = "examples/glm5_1_lora_pp4.sh"
TRACE = "tests/record_fixtures/megatron_pp4"
BASELINE = "ci/baseline/glm5_1_lora_pp4.megatron-core-0.17.0.json"
# The clean headlines of each command; anything else announces a problem.
CLEAN = re.compile(r"^(CLEAN: |PASS: |\d+ P2P (call )?sites?\b|[^:]+: CLEAN: )")
HEADLINE = re.compile(r"^(CLEAN|FINDINGS|DOES NOT START|INCONCLUSIVE|HANG|DEADLOCK): ")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=dict(os.environ))


@pytest.fixture(scope="module")
def scans(real_sources, tmp_path_factory) -> dict[str, str]:
    out = {}
    for torch in ("2.10.0", "2.11.0"):
        path = tmp_path_factory.mktemp("scan") / f"scan-{torch}.json"
        cli("scan", "--config", SEED, "--torch", torch, "--format", "json", "-o", str(path))
        out[torch] = str(path)
    return out


def _verdict_line(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stdout.splitlines() if HEADLINE.match(line)]


def _html_verdict(path: Path) -> list[str]:
    return [html.unescape(m) for m in re.findall(r'<p id="verdict"[^>]*>([^<]*)</p>',
                                                  path.read_text(encoding="utf-8"))]


def _stderr_line(command: str):
    def get(proc: subprocess.CompletedProcess) -> list[str]:
        prefix = f"p2paudit {command}: "
        return [line.removeprefix(prefix) for line in proc.stderr.splitlines()
                if line.startswith(prefix) and not line.startswith(prefix + "wrote ")]
    return get


def _first_line_of(pattern: str):
    def get(proc: subprocess.CompletedProcess) -> list[str]:
        return [line for line in proc.stdout.splitlines() if re.match(pattern, line)][:1]
    return get


CASES = {
    "scan-contradiction": (["scan", "--config", SEED, "--torch", "2.10.0"], _verdict_line),
    "scan-clean": (["scan", "--config", SEED, "--torch", "2.11.0"], _verdict_line),
    "scan-error-finding": (["scan", "--config", SEED, "--torch", "2.11.0", "--set",
                            "pipeline_model_parallel_size=8"], _verdict_line),
    "scan-trace": (["scan", "--config", SEED, "--torch", "2.11.0", "--trace", TRACE],
                   _verdict_line),
    "scan-trace-html": (["scan", "--config", SEED, "--torch", "2.11.0", "--trace", TRACE,
                         "--format", "html", "-o", "{out}"], None),
    "report-scan-only": (["report", "--scan", "{scan-2.11.0}", "-o", "{out}"], "both"),
    "report-scan-only-errors": (["report", "--scan", "{scan-2.10.0}", "-o", "{out}"], "both"),
    "report-hang": (["report", "--scan", "{scan-2.10.0}", "--trace", TRACE, "--transport", "net",
                     "-o", "{out}"], "both"),
    "gate-pass": (["gate", "--config", SEED, "--baseline", BASELINE,
                   "--target", "megatron-core==0.17.0"], _first_line_of(r"(PASS|FAIL): ")),
    "repro-predict-hang": (["repro", "fallback-1f1b", "--predict", "--backend", "nccl",
                            "--transport", "net", "--size", "24MiB"],
                           _first_line_of(r"fallback-1f1b")),
    "repro-predict-fixed": (["repro", "fallback-1f1b", "--predict", "--backend", "nccl",
                             "--transport", "net", "--size", "24MiB", "--fix", "detail-off"],
                            _first_line_of(r"fallback-1f1b")),
    # its summary goes to stderr when the table goes to a file
    "sites": (["sites", "megatron-core==0.17.0", "-o", "{out}"], lambda p: p.stderr.splitlines()[-1:]),
}


@pytest.mark.heavy
@pytest.mark.parametrize("case", sorted(CASES))
def test_headline_agrees_with_exit_status(case, scans, tmp_path):
    args, how = CASES[case]
    out = tmp_path / "out"
    argv = [a.replace("{out}", str(out)).replace("{scan-2.10.0}", scans["2.10.0"])
            .replace("{scan-2.11.0}", scans["2.11.0"]) for a in args]
    proc = cli(*argv)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    if how is None:
        heads = _html_verdict(out)
    elif how == "both":
        heads = _stderr_line(args[0])(proc)
        assert heads == _html_verdict(out), "the report's two headlines differ"
    else:
        heads = how(proc)
    assert len(heads) == 1, (heads, proc.stdout[-2000:], proc.stderr[-2000:])
    clean = bool(CLEAN.match(heads[0]))
    assert clean == (proc.returncode == 0), (proc.returncode, heads[0])
