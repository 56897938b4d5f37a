"""simulate's stand-ins for modules a release imports but its schedule never calls (triton, from
megatron-core 0.18 on: pipeline_parallel/schedules.py -> transformer/moe/paged_stash.py). Without
them `simulate` failed on every megatron-core >= 0.18 on a CPU machine ("No module named
'triton'"), including the newest release it picks when the script states none."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from auditor import sources
from auditor.rulebook import files

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent('''
    import sys
    from auditor.simulate import standins
    assert standins.install([{"module": "p2paudit_absent_kernels", "imported_by": "pkg/kernels.py"}]) \\
        == ["p2paudit_absent_kernels"]
    import pkg.kernels, pkg.other
    assert pkg.other.HAVE is False          # another importer still finds it missing
    standins.arm()
    try:
        pkg.kernels.add(1)
    except standins.StoodInError as e:
        print("raised:", e)
    try:
        import p2paudit_absent_kernels
    except ImportError:
        print("gone after arm")
''')


def test_only_the_named_importer_gets_the_stand_in_and_a_call_raises(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    # The shape of megatron/core/transformer/moe/ops/paged_stash.py (megatron-core 0.19.2):
    # `import triton`, `import triton.language as tl`, `@triton.jit` kernels with tl.constexpr.
    (pkg / "kernels.py").write_text(textwrap.dedent('''
        import p2paudit_absent_kernels
        import p2paudit_absent_kernels.language as tl

        @p2paudit_absent_kernels.jit
        def add(x, BLOCK: tl.constexpr = 4):
            return x
    '''))
    # The shape of megatron/core/inference/contexts/fused_kv_append_kernel.py: a guarded import.
    (pkg / "other.py").write_text(textwrap.dedent('''
        try:
            import p2paudit_absent_kernels
            HAVE = True
        except ImportError:
            HAVE = False
    '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "raised: p2paudit_absent_kernels.jit(add) was called" in done.stdout
    assert "gone after arm" in done.stdout


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.18.0", "0.19.2"])
def test_rules_name_the_file_that_imports_it_at_module_level(version):
    entries = files.load("megatron-core", version).table("import_stand_in")
    assert entries, f"megatron-core {version} imports triton from its schedules"
    root = sources.resolve(f"megatron-core=={version}").root
    for e in entries:
        tree = ast.parse((root / e["imported_by"]).read_text())
        top = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        assert e["module"] in top, (version, e["imported_by"])
    chain = (root / "megatron/core/pipeline_parallel/schedules.py").read_text()
    assert "from megatron.core.transformer.moe.paged_stash import" in chain


@pytest.mark.wheels
@pytest.mark.heavy
def test_a_script_stating_no_release_is_simulated_on_the_newest(tmp_path):
    """Megatron-LM's GPT example without its `# megatron-core==` comment: simulate picks the
    newest release the rules verify (0.19.x, which imports triton) and completes."""
    script = tmp_path / "run.sh"
    script.write_text("".join(line for line in (ROOT / "examples/megatron_lm_gpt_pp2.sh")
                              .read_text().splitlines(keepends=True)
                              if not line.startswith("# megatron-core==")))
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, "-m", "auditor", "simulate", "--config", str(script),
                           "--format", "json", "-o", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["simulation"]["verdict"] == "completes"
    assert doc["config"]["release_choice"].startswith("no release stated: simulated on the newest")
    (mcore,) = [t for t in doc["targets"] if t["name"] == "megatron-core"]
    assert mcore["version"].startswith("0.19")
    has_triton = subprocess.run([sys.executable, "-c", "import triton"], capture_output=True).returncode == 0
    assert doc["simulation"]["stood_in"] == ([] if has_triton else ["triton"])
