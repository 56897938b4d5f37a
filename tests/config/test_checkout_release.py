"""auditor.config.checkout_release: a run launched beside a framework's checkout is judged on the
release the checkout states (torchtitan's README: `cd torchtitan && ./run_train.sh`), as a
`# torchtitan==X` comment would say; `--target` settles it instead."""

from __future__ import annotations

from auditor.config.launch import read_launch
from auditor.sources import resolve
from tests.test_checkout_version import titan

RUN_TRAIN = """\
#!/usr/bin/bash
NGPU=${NGPU:-"8"}
torchrun --nproc_per_node=${NGPU} -m torchtitan.train --job.config_file ./train.toml \\
    --parallelism.pipeline_parallel_degree 2
"""


def test_the_checkout_beside_the_script_pins_its_release(tmp_path):
    script = titan(tmp_path) / "run_train.sh"
    script.write_text(RUN_TRAIN)
    launch = read_launch(script)
    assert launch.pins.get("torchtitan") == "0.2.2"
    assert any(d.kind == "launch.checkout-release" for d in launch.diagnostics)


def test_a_checkout_stating_nothing_is_an_undecided_input(tmp_path):
    script = titan(tmp_path, version_file=None) / "run_train.sh"
    script.write_text(RUN_TRAIN)
    launch = read_launch(script)
    assert "torchtitan" not in launch.pins
    found = next(d for d in launch.diagnostics if d.kind == "launch.checkout-unversioned")
    assert found.detail["decide"] == "--target torchtitan==VERSION"


def test_a_target_with_its_version_settles_it(tmp_path):
    from auditor.config.checkout_release import settled_by_targets
    script = titan(tmp_path, version_file=None) / "run_train.sh"
    script.write_text(RUN_TRAIN)
    launch = read_launch(script)
    settled_by_targets(launch, [resolve("torchtitan==0.2.2")])
    assert not any(d.kind.startswith("launch.checkout") for d in launch.diagnostics)
