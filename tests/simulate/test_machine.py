"""auditor.simulate.machine: a simulation refused before it forks ranks the kernel would kill,
an OOM kill named as one after, and --jobs capped at the cores. The estimate is held to what
the module's docstring measured (megatron-core 0.17.0, torch 2.13.0 CPU,
examples/glm5_1_lora_pp4.sh: PP 4, 4 micro-batches of 24 MiB; ranks 0 and 3 at 322 and 225 MiB
private at their peak)."""

from __future__ import annotations

from auditor.simulate.machine import (available_memory, estimate, jobs_option, killed_words, oom_kills,
                                      refusal)
from auditor.static.analyze import usable_cpus

MIB = 1 << 20


def test_the_estimate_of_the_measured_run_is_above_every_measured_rank():
    # Rank r holds 2 messages per micro-batch in flight (1F1B warm-up: the stages after its own) + 4.
    per_rank = [230 + (2 * min(4, 4 - r) + 4) * 24 for r in range(4)]
    assert per_rank[0] == 518 and per_rank[3] == 374  # the docstring's estimates
    assert per_rank[0] > 322 and per_rank[3] > 225  # above what was measured
    assert estimate(4, 4, 4, 24 * MIB) == (365 + sum(per_rank)) * MIB
    # More micro-batches than stages in flight cost nothing more; larger messages do.
    assert estimate(4, 4, 64, 24 * MIB) == estimate(4, 4, 4, 24 * MIB)
    assert estimate(4, 4, 4, 48 * MIB) > estimate(4, 4, 4, 24 * MIB)


def test_a_simulation_beyond_the_memory_available_is_refused_with_its_numbers():
    have = available_memory()
    assert have is not None and have > 0  # /proc/meminfo: Linux
    assert refusal(2, 2, 1, 1) is None
    words = refusal(8, 8, 8, have)  # each message as large as all the memory there is
    assert words is not None and words.startswith("8 rank processes (8 micro-batch(es) of ")
    assert words.endswith(f"({usable_cpus()} core(s)): the kernel would kill the ranks")


def test_what_killed_a_rank_is_named_from_its_status():
    assert killed_words(0, None) is None and killed_words(1, None) is None
    assert killed_words(128 + 15, None) == "a rank was killed by signal 15"
    assert killed_words(128 + 65, None) is None  # not a signal's status
    assert "its counter did not change" in killed_words(128 + 9, None)
    now = oom_kills()
    if now is None:  # no counter readable here: a SIGKILL is said to be likely another process's
        assert "its counter did not change" in killed_words(128 + 9, 0)
    else:
        assert killed_words(128 + 9, now - 1).startswith(
            "a rank was killed by the kernel's OOM killer (out of memory: 1 OOM kill(s) during the run)")
        assert "its counter did not change" in killed_words(128 + 9, now)


def test_jobs_beyond_the_cores_are_capped_and_said_once(capsys):
    cores = usable_cpus()
    assert jobs_option("1") == 1 and capsys.readouterr().err == ""
    assert jobs_option(str(cores + 3)) == cores
    assert capsys.readouterr().err == (f"p2paudit: --jobs {cores + 3} is more than this machine's {cores} "
                                       f"usable core(s): using {cores}\n")
