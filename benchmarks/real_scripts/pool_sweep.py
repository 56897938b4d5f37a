"""Robustness sweep over real launch scripts nobody labelled: outcomes that are defects whatever
the right verdict is.

Reads a list file (one script a line, its path relative to the corpus directory, optionally a tab
and `PP` when the script sets a literal pipeline size > 1; /work/upstream/pool14/allowed.txt is
one), runs `sys.executable -m auditor scan --config SCRIPT` in the script's tree root with the
benchmark's clean environment (benchmarks/real_scripts.py), and classifies each outcome:

- TRACEBACK: an internal error (a Python traceback, or an exit other than 0, 1, 2);
- TIMEOUT: no answer within --timeout (300 s);
- EXIT2-BASH-OK: exit 2 on a script `bash -n` accepts (read the message: the script's fault?);
- NO-HEADLINE: exit 0/1 without a verdict as the first `WORD:` line of stdout;
- VAGUE: an INCONCLUSIVE whose "decide it with" names no concrete step (real_scripts.decider_ok);
- SLOW: a scan over --slow (60) CPU seconds (its own; wall seconds are shown too, but on shared
  cores they measure the machine);
and otherwise its verdict class (CLEAN, FINDINGS, INCONCLUSIVE, NOT-PIPELINE, DOES-NOT-START,
NOT-COVERED, EXIT2-BASH-REJECTS). Prints one row per script, counts per class and per project.

    python benchmarks/real_scripts/pool_sweep.py LIST /work/upstream/real_scripts \
        --sample 120 --seed 14 [--jobs 2] [--json out.json]
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import functools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import real_scripts as rs  # noqa: E402  (the benchmark's environment and judging, not a copy)

VERDICT_WORDS = ("CLEAN", "FINDINGS", "INCONCLUSIVE", "NOT A PIPELINE RUN", "NOT COVERED",
                 "DOES NOT START", "HANG", "DEADLOCK", "FAIL", "PASS")
DEFECTS = ("TRACEBACK", "TIMEOUT", "EXIT2-BASH-OK", "NO-HEADLINE", "VAGUE", "SLOW")


@dataclass
class Outcome:
    path: str
    project: str
    pp: bool
    exit: int | None
    headline: str
    seconds: float
    cls: str
    cpu: float = 0.0
    note: str = ""


def read_list(path: Path) -> list[tuple[str, bool]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            rel, _, mark = line.partition("\t")
            out.append((rel.strip(), mark.strip() == "PP"))
    return out


def project(rel: str) -> str:
    return rel.split("/", 1)[0].split("@", 1)[0]


def sample(entries: list[tuple[str, bool]], n: int, seed: int) -> list[tuple[str, bool]]:
    """At most `n` scripts, drawn with `random.Random(seed)`: every PP script (a draw of `n` of
    them where they are more, said on stderr), then the rest in per-project shares proportional
    to the project's size (at least one each while the budget allows, the largest shares cut
    first where the minimum overshoots it)."""
    rng = random.Random(seed)
    chosen = [e for e in entries if e[1]]
    if len(chosen) > n:
        print(f"--sample {n}: {len(chosen)} PP scripts exceed it; {n} of them drawn, no other",
              file=sys.stderr)
        return sorted(rng.sample(chosen, n))
    rest: dict[str, list[tuple[str, bool]]] = collections.defaultdict(list)
    for e in entries:
        if not e[1]:
            rest[project(e[0])].append(e)
    left = n - len(chosen)
    total = sum(len(v) for v in rest.values()) or 1
    shares = {name: min(len(pool), max(1, round(left * len(pool) / total))) for name, pool in rest.items()}
    while sum(shares.values()) > left:
        shares[max(sorted(shares), key=lambda k: shares[k])] -= 1
    for name in sorted(rest):
        chosen += rng.sample(sorted(rest[name]), shares[name])
    return sorted(chosen)


def bash_accepts(script: Path) -> bool:
    return subprocess.run(["bash", "-n", str(script)], check=False, capture_output=True).returncode == 0


def run_timed(cmd: list[str], cwd: Path, timeout: float) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """The scan's result and its own CPU seconds (user + system, its children included): on 2
    cores shared with other work, wall seconds say more of the machine than of the scan. The
    scan runs in its own session; past `timeout` its whole process group is killed (its pool
    workers too), and only while its leader is not yet reaped, so no other process is hit."""
    with subprocess.Popen(cmd, cwd=cwd, env=rs.clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True) as proc:
        out: dict[str, bytes] = {}
        readers = [threading.Thread(target=lambda n=n, f=f: out.__setitem__(n, f.read()))
                   for n, f in (("out", proc.stdout), ("err", proc.stderr))]
        for t in readers:
            t.start()
        deadline, killed = time.monotonic() + timeout, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if not killed and time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)  # the leader is unreaped: its group id is its own
                killed = True
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if killed:
            for t in readers:
                t.join(timeout=5)
            raise subprocess.TimeoutExpired(cmd, timeout)
        for t in readers:
            t.join()
    done = subprocess.CompletedProcess(cmd, proc.returncode, out.get("out", b""), out.get("err", b""))
    return done, usage.ru_utime + usage.ru_stime


def scan(rel: str, pp: bool, corpus: Path, timeout: float, slow: float,
         keys: tuple[set[str], set[str]]) -> Outcome:
    root = corpus / rel.split("/", 1)[0]
    script = corpus / rel
    cmd = [sys.executable, "-m", "auditor", "scan", "--config", str(script)]
    t0 = time.monotonic()
    try:
        p, cpu = run_timed(cmd, root, timeout)
    except subprocess.TimeoutExpired:
        return Outcome(rel, project(rel), pp, None, "", time.monotonic() - t0, "TIMEOUT")
    secs = time.monotonic() - t0
    o = functools.partial(Outcome, rel, project(rel), pp, cpu=cpu)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    errlines = [ln for ln in err.splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in err or p.returncode not in (0, 1, 2):
        return o(p.returncode, errlines[-1] if errlines else "", secs, "TRACEBACK")
    if p.returncode == 2:
        msg = errlines[-1] if errlines else "(no message)"
        ok = bash_accepts(script)
        return o(2, msg, secs, "EXIT2-BASH-OK" if ok else "EXIT2-BASH-REJECTS")
    first = next((ln for ln in out.splitlines() if rs.HEADLINE.match(ln)), "")
    if not first.startswith(tuple(w + ":" for w in VERDICT_WORDS)):
        return o(p.returncode, first, secs, "NO-HEADLINE")
    cls = rs.classify(first, p.returncode)
    if first.startswith("NOT COVERED:"):
        cls = "NOT-COVERED"
    note = ""
    if cls == "INCONCLUSIVE":
        ok, note = rs.decider_ok(rs.decider_of(first), script.read_text(errors="replace"), keys)
        if not ok:
            cls = "VAGUE"
    if cpu > slow and cls not in DEFECTS:
        note, cls = f"{cls}; {note}".strip("; "), "SLOW"
    return o(p.returncode, first, secs, cls, note=note)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("list", type=Path, help="scripts, one a line, relative to CORPUS")
    ap.add_argument("corpus", type=Path, help="the directory of the pinned trees")
    ap.add_argument("--sample", type=int, default=0, help="a stratified sample of at most N (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--slow", type=float, default=60.0, help="seconds over which a scan is SLOW")
    ap.add_argument("--json", type=Path, help="also write the outcomes as JSON here")
    args = ap.parse_args(argv)
    entries = read_list(args.list)
    if args.sample:
        entries = sample(entries, args.sample, args.seed)
    corpus = args.corpus.resolve()
    import auditor
    under_test = Path(auditor.__file__).resolve().parents[1]
    keys = rs.rules_keys(under_test)
    print(f"tree under test: {under_test}; python {sys.executable}; {len(entries)} scripts")
    t0 = time.monotonic()

    def one(e: tuple[str, bool]) -> Outcome:
        r = scan(e[0], e[1], corpus, args.timeout, args.slow, keys)
        ex = "-" if r.exit is None else str(r.exit)
        print(f"{r.cls:18} {ex:>2} {r.seconds:6.1f}s {r.cpu:6.1f}cpu {r.path}\n{'':30}{r.headline[:160]}"
              + (f"  [{r.note}]" if r.note else ""), flush=True)
        return r

    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, entries))
    by_cls = collections.Counter(r.cls for r in rows)
    print("\nper class: " + ", ".join(f"{c} {n}" for c, n in by_cls.most_common()))
    print("defects: " + ", ".join(f"{c} {by_cls.get(c, 0)}" for c in DEFECTS))
    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for r in rows:
        per[r.project][r.cls] += 1
    for name in sorted(per):
        print(f"  {name:28} " + ", ".join(f"{c} {n}" for c, n in per[name].most_common()))
    print(f"{len(rows)} scripts in {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
