"""A `--section.key` override torchtitan's config class lacks stops the run at start-up:
ConfigManager.parse_args hands the command line to `tyro.cli(config_cls, args=args, ...)`
(torchtitan 0.2.2 torchtitan/config/manager.py:56, 0.3.0 :40), which exits with status 2,
"Unrecognized options: --parallelism.pipeline_parallel_degre" (run with the real releases and
tyro 1.0.17: /work/upstream/titan-venv, titan030-venv). The headline is DOES NOT START naming
the key and that line; a custom config module (0.2.2 `--job.custom_config_module`) may add the
field, so there it stays a warning.

The launches are run_train.sh's torchrun line (pytorch/torchtitan v0.2.2 73a0e697 and main
b5bcd76c, run_train.sh) with `"$@"` spelled out, as tests/titan/test_titan_config.py writes them."""

from __future__ import annotations

import pytest

from auditor import rulebook
from auditor.scan import ScanInputs, run_scan
from tests.rules.test_rules_agree import read_text, release_root, squash
from tests.titan.test_titan_config import registry_launch, toml_launch

pytestmark = pytest.mark.wheels

TYPO = "--parallelism.pipeline_parallel_degre 2"


def scan(path: str, release: str) -> dict:
    return run_scan(ScanInputs(path, targets=[f"torchtitan=={release}", "torch"],
                               torch_version="2.10.0", jobs=1))


@pytest.mark.parametrize("release,line", [("0.2.2", "torchtitan/config/manager.py:56"),
                                          ("0.3.0", "torchtitan/config/manager.py:40")])
def test_a_misspelt_override_does_not_start(tmp_path, release, line):
    path = (toml_launch(tmp_path, TYPO) if release == "0.2.2"
            else registry_launch(tmp_path, "llama3", "llama3_8b", TYPO))
    verdict = scan(path, release)["verdict"]
    assert verdict["status"] == "findings" and verdict["exit_code"] == 1
    head = verdict["headline"]
    assert head.startswith("DOES NOT START"), head
    assert "--parallelism.pipeline_parallel_degre" in head and line in head, head


def test_a_custom_config_module_may_add_the_field(tmp_path):
    path = toml_launch(tmp_path, f"--job.custom_config_module my_ext.job_config {TYPO}")
    doc = scan(path, "0.2.2")
    assert not doc["verdict"]["headline"].startswith("DOES NOT START"), doc["verdict"]["headline"]
    said = [f for f in doc["findings"] if f["kind"] == "launch.titan-unknown-flag"]
    assert said and said[0]["severity"] == "warning" and "my_ext.job_config" in said[0]["message"]


def cli_entries() -> list:
    meta = rulebook.load("torchtitan").section("framework")
    return [pytest.param(e, v, id=f"{e['kind']}@{v}")
            for e in rulebook.load("torchtitan").data["config_file"]
            for v in meta["verified"] if rulebook.version_in(v, e.get("versions", "*"))]


@pytest.mark.parametrize("entry,version", cli_entries())
def test_the_cli_parse_line_is_the_release_s(entry, version):
    """Each [[config_file]]'s `cli_code` is at `cli_source` in the release it was read in, and
    in the file of every release it covers."""
    path_text, _, line = entry["cli_source"].rpartition(":")
    text = read_text(release_root("torchtitan", version) / path_text)
    assert squash(entry["cli_code"]) in squash(text)
    if version == entry["read"]:
        assert text.splitlines()[int(line) - 1].strip() == entry["cli_code"]
