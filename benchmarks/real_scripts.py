"""Real launch scripts, out of the box (issue 22): does `p2paudit scan --config SCRIPT` give the
right verdict, for the right reason, on scripts people actually run?

For every script of `real_scripts/manifest.toml` (fetched by `real_scripts/fetch.py CORPUS_DIR`)
it runs `python -m auditor scan --config SCRIPT` with the python running this file (so
PYTHONPATH picks the tree under test), no --target / --torch / --set, in the directory its
authors run it from, with a clean environment (PATH, HOME, locale, PYTHONPATH; nothing of
P2PAUDIT_*, SLURM_*, TORCH_*, NCCL_*), and prints one row per script: origin, exit, headline,
expected, what it got, right?. `--torch-variant` adds the second pass: every script that sets
PP > 1, with `export TORCH_DISTRIBUTED_DEBUG=DETAIL` inserted after its shebang, under
`--torch 2.10.0` (expected: FINDINGS, or the entry's `detail_verdict`) and `--torch 2.11.0`
(expected: no contradiction).

How an answer is judged (README.md of real_scripts/ has the long form):
- the headline is the first stdout line that starts with an upper-case word and a colon
  (`CLEAN:`, `FINDINGS:`, `INCONCLUSIVE:`, `NOT A PIPELINE RUN:`, ...), or the exit-2 line;
- its class: CLEAN or INCONCLUSIVE for a headline starting so (whatever it says of other cases);
  else NOT-PIPELINE
  if it says "not a pipeline ..." (or "no pipeline"), DOES-NOT-START if it says the run "does
  not start" / "cannot start" / "stops before", else its first word
  (HANG, DEADLOCK, FAIL count as FINDINGS), ERROR for exit 2, TIMEOUT;
- right: the class matches the expected one (and the entry's `headline_re`); an INCONCLUSIVE is
  right only if its "decide it with" names a concrete step: a flag the script does not already
  pass, `--set KEY=VALUE` with a key the rules of the tree under test know and do not derive, or
  `--target NAME==VERSION` with the name; never a placeholder, never "input";
- wrong: a decided verdict that contradicts the expected one (CLEAN where something is wrong or
  unknown, FINDINGS on a clean run, any verdict on a script bash rejects), unless the entry lists
  it in `not_wrong`.

    python benchmarks/real_scripts.py /work/upstream/real_scripts --half dev [--torch-variant]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
CORPUS_META = HERE / "real_scripts"
# the halves of split.toml: dev and test (turn 6), test7 (turn 7; all three open for development
# now), test8 (sealed in turn 8, open from turn 9), test9 (sealed in turn 9, open from turn 10),
# test10 (sealed in turn 10, measured once, then opened) and dev10, drawn with it, open from the start;
# test11 (sealed in turn 11, measured once, then opened); test12 (sealed in turn 12, measured once,
# then opened); test13 (sealed in turn 13, measured once, then opened); test14 (sealed in turn 14,
# measured once, then opened); test15 (sealed in turn 15,
# measured once, then opened); test16 (sealed in turn 16, measured once, then opened); test17
# (sealed in turn 17, measured once, then opened); test18 (sealed in turn 18, measured once, then
# opened); test19 (sealed in turn 19, measured once, then opened); test20 (sealed in turn 20,
# measured once, then opened); test21 (sealed in turn 21, measured once, then opened); test22
# (sealed in turn 22, measured once, then opened); test23 (sealed in turn 23, measured once, then
# opened); test24 (sealed in turn 24, measured and opened); test25 (sealed in turn 25, measured and opened);
# test26 (sealed in turn 25 after the code was final, measured once on it, opened); test27 (drawn and
# sealed in turn 26 before its code changes, measured on the unchanged code and on the final code); test28
# (drawn and sealed in turn 26 after the code was final, 0d2f544, measured once on it); test29 (drawn
# and sealed in turn 27 before its code changes, b9b3d6a: measured on the unchanged and the final code);
# test30 (drawn and sealed in turn 27 after the code was final, 1077f54, measured once on it); test31
# (drawn and sealed in turn 28 before its code changes, 6c71078: measured on the unchanged and the final code);
# test32 (drawn and sealed in turn 28 after the code was final, 195b652, measured once on it); test33
# (drawn and sealed in turn 29 before its code changes, d266cf5: measured on the unchanged and the final code);
# test34 (drawn, base da24d78, and sealed in turn 29 while its second-round fixes were being made; measured
# once on the final code)
HALVES = ("dev", "test", "test7", "test8", "test9", "test10", "dev10", "test11", "test12", "test13",
          "test14", "test15", "test16", "test17", "test18", "test19", "test20", "test21", "test22",
          "test23", "test24", "test25", "test26", "test27", "test28", "test29", "test30",
          "test31", "test32", "test33", "test34")
# halves still sealed: `--half open` leaves them out, so development runs never read them
SEALED: tuple[str, ...] = ()
DETAIL_LINE = "export TORCH_DISTRIBUTED_DEBUG=DETAIL  # inserted by benchmarks/real_scripts.py\n"
KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME", "TERM")

HEADLINE = re.compile(r"^([A-Z][A-Z][A-Z -]*[A-Z]):")
NOT_PIPELINE = re.compile(r"(?i)not an? (pipeline|pipeline-parallel|megatron|training) run|no pipeline|"
                          r"not a pipeline")
NOT_START = re.compile(r"(?i)does not start|cannot start|can't start|won't start|would not start|"
                       r"stops? before|never starts|fails? at start-?up|would stop at start-?up")
# The DETAIL pass's FINDINGS names the batch that runs op by op (the cause's headline since
# findings are grouped by cause: "DETAIL on torch 2.10.0 makes every pipeline batch_isend_irecv
# run op by op"), or the unbatched sites.
CONTRADICTION = re.compile(r"(?i)unbatched|batch_p2p_comm|coalesc|run op by op")
FINDINGS_WORDS = {"FINDINGS", "HANG", "DEADLOCK", "FAIL"}
DECIDED = {"CLEAN", "FINDINGS", "DOES-NOT-START", "NOT-PIPELINE"}


@dataclass
class Scan:
    exit: int | None
    headline: str
    got: str
    seconds: float
    decider: str = ""


@dataclass
class Row:
    id: str
    half: str
    origin: str
    expected: str
    scan: Scan
    right: bool
    wrong: bool
    why: str = ""
    detail: dict = field(default_factory=dict)


def load(meta: Path = CORPUS_META) -> tuple[list[dict], dict[str, str]]:
    with (meta / "manifest.toml").open("rb") as f:
        scripts = tomllib.load(f)["script"]
    with (meta / "split.toml").open("rb") as f:
        split = tomllib.load(f)
    # `dev_*` lists (appended by later batches, e.g. dev_mlm_front_ends) belong to the dev half.
    half = {i: name for key, ids in split.items() if isinstance(ids, list)
            for name in HALVES if key == name or (name == "dev" and key.startswith("dev_"))
            for i in ids}
    for s in scripts:
        if s["id"] not in half:
            raise SystemExit(f"real_scripts.py: {s['id']} is in no half of split.toml")
    return scripts, half


def tree(corpus: Path, s: dict) -> Path:
    return corpus / f"{s['repo'].replace('/', '+')}@{s['commit'][:10]}"


def clean_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    pp = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if pp:
        env["PYTHONPATH"] = os.pathsep.join(pp)
    env["COLUMNS"] = "10000"  # the headline on one line (text output wraps at the terminal width)
    return env


def run_scan(script: Path, cwd: Path, extra: list[str], timeout: float) -> Scan:
    cmd = [sys.executable, "-m", "auditor", "scan", "--config", str(script), *extra]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, check=False, cwd=cwd, env=clean_env(), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Scan(None, f"(no answer within {timeout:.0f} s)", "TIMEOUT", time.monotonic() - t0)
    secs = time.monotonic() - t0
    if p.returncode == 2 or p.returncode not in (0, 1):
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        msg = (lines[-1] if lines else "(no message)").replace("p2paudit scan: error: ", "error: ")
        return Scan(p.returncode, msg.replace(str(script.parent) + "/", ""), "ERROR", secs)
    head = next((ln for ln in p.stdout.splitlines() if HEADLINE.match(ln)), "")
    return Scan(p.returncode, head, classify(head, p.returncode), secs, decider_of(head))


CAUSE_LINE = re.compile(r"^  (ERROR|WARNING|INFO)\s+(\S+.*)$")  # kind and where
WHERE = re.compile(r"\(([^()]+:\d+)\)\.")  # on the text with blanks removed: a long path wraps


def first_screen(script: Path, cwd: Path, timeout: float) -> list[str]:
    """Issue 25 on an upstream script: its scan at 80 columns has no wider line, shows each cause
    once, and (for FINDINGS) names the cause's line within its first 15 lines."""
    env = clean_env() | {"COLUMNS": "80"}
    try:
        p = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script)],
                           check=False, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return ["timeout"]
    if p.returncode not in (0, 1):
        return []
    lines = p.stdout.splitlines()
    problems = [f"{len(ln)} columns" for ln in lines if len(ln) > 80][:1]
    try:
        doc = subprocess.run([sys.executable, "-m", "auditor", "scan", "--config", str(script),
                              "--format", "json"], check=False, cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:  # the text scan finished in time, the JSON one did not
        return ["timeout"]
    try:
        causes = [(c["kind"], c["where"], c["headline"])
                  for c in json.loads(doc)["verdict"].get("causes", [])]
    except (ValueError, KeyError):
        causes = []
    problems += [f"{k} at {w} shown twice" for k, w, _ in sorted({c for c in causes if causes.count(c) > 1})]
    shown = [m[2].split()[0] for ln in lines if (m := CAUSE_LINE.match(ln))]
    if causes and len(shown) != len(causes):
        problems.append(f"{len(shown)} causes shown, {len(causes)} in the document")
    top = "".join("".join(lines[:15]).split())
    if "FINDINGS:" in top or "DOESNOTSTART:" in top:
        where = WHERE.search(top)
        if where is None:
            problems.append("no cause line in the first 15 lines")
    return problems


def classify(head: str, code: int) -> str:
    """The verdict class of a headline. A CLEAN or INCONCLUSIVE headline is that, whatever its
    clauses say about other cases ("at 2, 4 the run does not start"; a quoted reading of another
    release, "0.19.2 reads NOT A PIPELINE RUN")."""
    for word in ("CLEAN", "INCONCLUSIVE"):
        if head.startswith(word + ":"):
            return word
    if NOT_PIPELINE.search(head):
        return "NOT-PIPELINE"
    if NOT_START.search(head):
        return "DOES-NOT-START"
    m = HEADLINE.match(head)
    word = m.group(1).split()[0] if m else ""
    if word == "CLEAN" or word == "PASS":
        return "CLEAN"
    if word in FINDINGS_WORDS:
        return "FINDINGS"
    if word == "INCONCLUSIVE":
        return "INCONCLUSIVE"
    return "CLEAN" if code == 0 else "OTHER"


def decider_of(head: str) -> str:
    m = re.search(r"decide (?:it )?with (.*?)(?: \(\+\d+ more|\. Not analysed|$)", head)
    return m.group(1) if m else ""


def rules_keys(tree_under_test: Path) -> tuple[set[str], set[str]]:
    """Keys the tree's rules know, and those only derived (a rule's `value` computes them and no
    flag, argument or default sets them: torch_eager_init, not distributed_backend)."""
    known: set[str] = set()
    computed: set[str] = set()
    settable: set[str] = set()
    for f in sorted((tree_under_test / "rules").glob("*.toml")):
        with f.open("rb") as fh:
            data = tomllib.load(fh)
        for tname, table in data.items():
            for entry in table if isinstance(table, list) else [table]:
                if not isinstance(entry, dict):
                    continue
                # `--set env.NAME=VALUE` states a variable a rule reads (auditor.config.envread)
                settable.update(re.findall(r"\benv\.[A-Z_][A-Z0-9_]*", f"{entry.get('when')} {entry.get('value')}"))
                if not isinstance(entry.get("key"), str):
                    continue
                key = entry["key"]
                known.add(key)
                if "value" in entry and tname == "rule":
                    computed.add(key)
                else:
                    settable.add(key)
    # The issue names `--set world_size=N` as the override of a launcher-derived world size.
    return known | {k for k in settable if k.startswith("env.")}, computed - settable - {"world_size"}


def decider_ok(decider: str, script_text: str, keys: tuple[set[str], set[str]]) -> tuple[bool, str]:
    """One concrete step: a flag the script lacks, --set with a real underived key, --target with
    a name. Placeholders (KEY=VALUE, NAME==VERSION, MODULE:QUALNAME) and 'input' are not steps."""
    known, derived = keys
    if not decider:
        return False, "names no step"
    if re.search(r"\binput\b", decider) and "--" not in decider:
        return False, "says 'input'"
    steps: list[str] = []
    for name, value in re.findall(r"(--[a-z][a-z0-9_-]*)(?:[ =]([^ ,;()]+))?", decider):
        if name == "--set":
            named = re.findall(r"\b(env\.[A-Z_][A-Z0-9_]*|[a-z][a-z0-9_]+)=", value or "")
            named += re.findall(r"(?:for|of) ([a-z][a-z0-9_]+(?:, [a-z][a-z0-9_]+)*)", decider)
            flat = [k.strip() for grp in named for k in grp.split(",")]
            real = [k for k in flat if k in known and k not in derived]
            if real:
                steps.append(f"--set {real[0]}")
        elif name == "--target":
            if value and "==" in value and not value.startswith("NAME"):
                steps.append(f"--target {value}")
        elif name == "--torch":
            steps.append("--torch")
        elif name == "--entry":
            if value and "MODULE" not in value:
                steps.append(f"--entry {value}")
        elif name not in ("--config",):
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", script_text):
                return False, f"{name} is already in the script"
            steps.append(name)
    if not steps:
        return False, "no concrete step (placeholder only)"
    return True, steps[0]


def judge(expected: str, scan: Scan, s: dict, headline_re: str | None,
          script_text: str, keys: tuple[set[str], set[str]]) -> tuple[bool, bool, str]:
    """(right, wrong, why) of one answer against one expectation."""
    got, head = scan.got, scan.headline
    reason_ok = not headline_re or re.search(headline_re, head) is not None
    not_wrong = set(s.get("not_wrong", []))
    if expected == "CLEAN":
        right = got == "CLEAN"
        wrong = got in ("FINDINGS", "DOES-NOT-START")
    elif expected == "FINDINGS":
        right = got == "FINDINGS" and reason_ok
        wrong = got in ("CLEAN", "NOT-PIPELINE")
    elif expected == "DOES-NOT-START":
        right = got in ("DOES-NOT-START", "FINDINGS") and reason_ok
        wrong = got in ("CLEAN", "NOT-PIPELINE")
    elif expected == "NOT-PIPELINE":
        right = got == "NOT-PIPELINE" and reason_ok
        wrong = got in ("FINDINGS", "DOES-NOT-START")
    elif expected == "NOT-COVERED":
        right = got not in ("CLEAN", "FINDINGS", "ERROR", "TIMEOUT") and reason_ok
        wrong = got in ("CLEAN", "FINDINGS")
    elif expected == "BAD-SCRIPT":
        right = got == "ERROR" and reason_ok
        wrong = got in DECIDED
    elif expected == "INCONCLUSIVE":
        ok, _ = decider_ok(scan.decider, script_text, keys)
        wanted = s.get("decide", [])
        named = not wanted or any(w in scan.decider for w in wanted)
        right = got == "INCONCLUSIVE" and ok and named
        wrong = got in DECIDED
    else:
        raise SystemExit(f"real_scripts.py: {s['id']}: unknown expected verdict {expected!r}")
    why = ""
    if got == "INCONCLUSIVE":
        ok, what = decider_ok(scan.decider, script_text, keys)
        why = f"decider {'ok: ' if ok else 'NOT concrete: '}{what}"
        right = right and ok
    elif not reason_ok and got == expected:
        why = "headline does not give the expected reason"
    if got in not_wrong:
        wrong = False
    return right, wrong and not right, why


def pp_values(s: dict) -> list[int]:
    pp = s.get("pp")
    return [pp] if isinstance(pp, int) else [v for v in pp if isinstance(v, int)] if isinstance(pp, list) else []


def in_detail_pass(s: dict) -> bool:
    """Scripts that set PP > 1 for a pipeline training run (not an export, not a script bash
    rejects)."""
    return max(pp_values(s), default=1) > 1 and s["verdict"] not in ("BAD-SCRIPT", "NOT-PIPELINE")


def detail_variant(script: Path) -> Path:
    """The script with DETAIL exported after its leading comments, next to it (its relative paths
    hold): after the shebang would end a job script's `#SBATCH` block, which sbatch reads only up
    to the first command. Written atomically, so concurrent benchmark runs share it safely."""
    text = script.read_text(errors="surrogateescape")
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")),
              len(lines))
    out = script.with_name(script.stem + ".p2paudit-detail" + script.suffix)
    new = "".join(lines[:at] + [DETAIL_LINE] + lines[at:])
    if not out.is_file() or out.read_text(errors="surrogateescape") != new:
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        tmp.write_text(new, errors="surrogateescape")
        os.replace(tmp, out)
    return out


def origin(s: dict) -> str:
    return f"{s['repo'].split('/')[1]}@{s['commit'][:7]}:{s['path']}"


def evaluate(s: dict, half: str, corpus: Path, timeout: float, variant: bool,
             keys: tuple[set[str], set[str]]) -> Row:
    root = tree(corpus, s)
    script = root / s["path"]
    cwd = root / s.get("cwd", "")
    text = script.read_text(errors="surrogateescape")
    scan = run_scan(script, cwd, [], timeout)
    right, wrong, why = judge(s["verdict"], scan, s, s.get("headline_re"), text, keys)
    row = Row(s["id"], half, origin(s), s["verdict"], scan, right, wrong, why)
    if variant and in_detail_pass(s):
        v = detail_variant(script)
        want = s.get("detail_verdict", "FINDINGS")
        on10 = run_scan(v, cwd, ["--torch", "2.10.0"], timeout)
        head_re = s.get("headline_re") if want == s["verdict"] else None
        if want == "FINDINGS":
            head_re = CONTRADICTION.pattern
        r10, w10, _ = judge(want, on10, s, head_re, text, keys)
        on11 = run_scan(v, cwd, ["--torch", "2.11.0"], timeout)
        ok11 = on11.got not in ("ERROR", "TIMEOUT") and not (
            on11.got == "FINDINGS" and CONTRADICTION.search(on11.headline))
        row.detail = {"expected_2.10": want, "got_2.10": on10.got, "exit_2.10": on10.exit,
                      "headline_2.10": on10.headline, "right_2.10": r10, "wrong_2.10": w10,
                      "got_2.11": on11.got, "exit_2.11": on11.exit,
                      "headline_2.11": on11.headline, "ok_2.11": ok11,
                      "pass": r10 and ok11}
    return row


def table(rows: list[Row], variant: bool) -> str:
    out = [f"{'id':28} {'half':5} {'exit':>4} {'expected':14} {'got':14} right  headline / origin"]
    for r in rows:
        mark = "yes" if r.right else ("WRONG" if r.wrong else "no")
        ex = "-" if r.scan.exit is None else str(r.scan.exit)
        out.append(f"{r.id:28} {r.half:5} {ex:>4} {r.expected:14} {r.scan.got:14} {mark:6} "
                   f"{r.scan.headline[:80]}")
        out.append(f"{'':28} {'':5} {'':>4} {'':14} {'':14} {'':6} {r.origin}"
                   + (f"  [{r.why}]" if r.why else ""))
    if variant:
        out.append("")
        out.append(f"{'DETAIL pass (PP > 1)':28} {'half':5} {'2.10 want':14} {'2.10 got':14} "
                   f"{'2.11 got':14} pass   2.10 headline")
        for r in rows:
            if not r.detail:
                continue
            d = r.detail
            out.append(f"{r.id:28} {r.half:5} {d['expected_2.10']:14} {d['got_2.10']:14} "
                       f"{d['got_2.11']:14} {'yes' if d['pass'] else 'no':6} "
                       f"{d['headline_2.10'][:70]}")
    return "\n".join(out)


def summary(rows: list[Row], variant: bool) -> str:
    lines = []
    for name in (*HALVES, "all"):
        sel = [r for r in rows if name == "all" or r.half == name]
        if not sel or (name == "all" and len({r.half for r in rows}) < 2):
            continue
        n = len(sel)
        right = sum(r.right for r in sel)
        decided = sum(r.scan.got in DECIDED for r in sel)
        wrong = [r.id for r in sel if r.wrong]
        errors = sum(r.scan.got in ("ERROR", "TIMEOUT") for r in sel)
        inc = [r for r in sel if r.scan.got == "INCONCLUSIVE"]
        inc_ok = sum("decider ok" in r.why for r in inc)
        line = (f"{name:5}: right {right}/{n} ({100 * right / n:.0f}%), decided {decided}/{n}, "
                f"wrong verdicts {len(wrong)}" + (f" ({', '.join(wrong)})" if wrong else "")
                + f", exit 2/timeout {errors}, INCONCLUSIVE naming a concrete step "
                  f"{inc_ok}/{len(inc)}")
        if variant:
            det = [r for r in sel if r.detail]
            passed = sum(r.detail["pass"] for r in det)
            line += (f"; DETAIL pass {passed}/{len(det)}"
                     + (f" ({100 * passed / len(det):.0f}%)" if det else ""))
        lines.append(line)
    return "\n".join(lines)


def installed_frameworks() -> list[str]:
    import importlib.metadata as md
    found = []
    for name in ("megatron-core", "ms-swift", "mcore-bridge", "deepspeed", "megatron-bridge"):
        try:
            found.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return found


def run_rows(chosen: list[dict], measure: Callable[[dict], Row], jobs: int, out: Path | None,
             t0: float) -> list[Row]:
    """Judge every chosen script, in manifest order; a long run (the whole open corpus takes hours on
    two cores) says each row as it ends on stderr and keeps the rows so far in `out`, so that a run
    stopped early loses nothing already measured."""
    done: dict[str, Row] = {}
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(measure, s): s["id"] for s in chosen}
        for future in cf.as_completed(futures):
            row = future.result()
            done[futures[future]] = row
            print(f"[{len(done)}/{len(chosen)} {time.monotonic() - t0:.0f} s] {row.id}: "
                  f"{'right' if row.right else 'WRONG' if row.wrong else 'not right'}",
                  file=sys.stderr, flush=True)
            if out is not None:
                out.write_text(json.dumps([asdict(r) for r in done.values()], indent=1))
    return [done[s["id"]] for s in chosen]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path, help="the directory fetch.py wrote")
    ap.add_argument("--half", choices=(*HALVES, "all", "open"), default="all",
                    help="one half, every half, or every half but the sealed ones")
    ap.add_argument("--torch-variant", action="store_true",
                    help="also the DETAIL pass under --torch 2.10.0 and 2.11.0 (PP > 1 scripts)")
    ap.add_argument("--only", action="append", default=[], metavar="ID")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per scan")
    ap.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--screen", action="store_true",
                    help="also render each scan at 80 columns and check its first screen")
    args = ap.parse_args(argv)
    scripts, half = load()
    corpus = args.corpus.resolve()
    halves = {"all": set(HALVES), "open": set(HALVES) - set(SEALED)}.get(args.half, {args.half})
    chosen = [s for s in scripts if half[s["id"]] in halves and (not args.only or s["id"] in args.only)]
    missing = [s["id"] for s in chosen if not (tree(corpus, s) / s["path"]).is_file()]
    if missing:
        raise SystemExit(f"real_scripts.py: not in {corpus}: {', '.join(missing)} "
                         "(run benchmarks/real_scripts/fetch.py first)")
    import auditor
    under_test = Path(auditor.__file__).resolve().parents[1]
    keys = rules_keys(under_test)
    print(f"tree under test: {under_test}; python {sys.executable}")
    extra = installed_frameworks()
    if extra:
        print(f"note: installed here: {', '.join(extra)} (targets default to installed "
              "distributions; the issue measures a venv with only p2paudit and a CPU torch)")
    t0 = time.monotonic()
    rows = run_rows(chosen, lambda s: evaluate(s, half[s["id"]], corpus, args.timeout,
                                               args.torch_variant, keys), args.jobs, args.json, t0)
    print(table(rows, args.torch_variant))
    print()
    print(summary(rows, args.torch_variant))
    if args.screen:
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            screens = list(pool.map(lambda s: (s["id"], first_screen(
                tree(corpus, s) / s["path"], tree(corpus, s) / s.get("cwd", ""), args.timeout)),
                chosen))
        bad = [(i, p) for i, p in screens if p]
        print(f"first screen at 80 columns: {len(screens) - len(bad)} of {len(screens)} pass"
              + "".join(f"\n  {i}: {'; '.join(p)}" for i, p in bad))
    print(f"{len(rows)} scripts in {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
