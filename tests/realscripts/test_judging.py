"""The real-scripts benchmark's judging (benchmarks/real_scripts.py): the class of a headline is
its verdict; clauses about other cases do not change it."""

from tests.benchmark_module import ROOT, load_benchmark

bench = load_benchmark("real_scripts.py")


def test_a_clean_headline_that_names_sizes_which_do_not_start_is_clean() -> None:
    head = ("CLEAN: 0 reachable P2P site(s), all run as the config says. Holds for any "
            "pipeline_model_parallel_size (judged at 1, 2 and 4; at 2, 4 the run does not start).")
    assert bench.classify(head, 0) == "CLEAN"


def test_a_findings_headline_giving_why_the_run_does_not_start_is_does_not_start() -> None:
    head = "FINDINGS: the run does not start: num_layers 30 is not divisible by 4 pipeline stages"
    assert bench.classify(head, 1) == "DOES-NOT-START"


def test_what_the_run_is_outranks_its_first_word_except_for_clean() -> None:
    assert bench.classify("NOT A PIPELINE RUN: `megatron export` converts a checkpoint", 0) == "NOT-PIPELINE"
    assert bench.classify("DOES NOT START: the script exits at line 9", 1) == "DOES-NOT-START"
    assert bench.classify("INCONCLUSIVE: not decided: pipeline_model_parallel_size", 1) == "INCONCLUSIVE"


def test_an_inconclusive_headline_quoting_another_release_s_reading_is_inconclusive() -> None:
    head = ("INCONCLUSIVE: the releases disagree: megatron-core 0.19.2 reads NOT A PIPELINE RUN, "
            "0.17.0 is not decided; decide it with --target megatron-core==VERSION")
    assert bench.classify(head, 1) == "INCONCLUSIVE"


def test_the_detail_line_goes_after_a_job_script_s_sbatch_block(tmp_path) -> None:
    """sbatch reads `#SBATCH` lines only up to the first command: a DETAIL export after the
    shebang made the job's own directives (Megatron-Bridge examples/models/stepfun/step35/
    slurm_pretrain.sh @ 067f987df0, `#SBATCH --nodes=2`) comments, changing its world size."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\n\n# a comment\nset -e\ntorchrun train.py\n")
    lines = bench.detail_variant(script).read_text().splitlines()
    assert lines[:4] == ["#!/bin/bash", "#SBATCH --nodes=2", "", "# a comment"]
    assert lines[4] == bench.DETAIL_LINE.rstrip("\n") and lines[5] == "set -e"


def test_set_of_a_variable_a_rule_reads_is_a_concrete_step() -> None:
    keys = bench.rules_keys(ROOT)
    assert bench.decider_ok("--set env.TORCH_DISTRIBUTED_DEBUG=VALUE", "", keys) == \
        (True, "--set env.TORCH_DISTRIBUTED_DEBUG")
    assert not bench.decider_ok("--set env.NO_SUCH_VARIABLE=VALUE", "", keys)[0]
    assert not bench.decider_ok("--set torch_debug_wrapper=VALUE", "", keys)[0]  # derived
