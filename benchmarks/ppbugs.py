"""PP-BugBench: run p2paudit on every side of every case in benchmarks/ppbugs/cases/ and score it.

    python benchmarks/ppbugs.py [--case ID ...] [--format text|json] [--timeout SECONDS]

Each case's `case.toml` lists sides (the buggy release and the fixed one, or a control), each with the
p2paudit command that judges it:
- `scan`: `p2paudit scan --config SCRIPT ARGS`;
- `simulate`: `p2paudit simulate --config SCRIPT ARGS` (where the command is missing, the side is
  reported as "not run (needs simulate)", never as a pass);
- `record`: the case's driver under `p2paudit record`, then `p2paudit report` of the trace against
  the case folder's site inventory, with the side's `--transport`.

A side whose expected verdict is `hang`, `may hang` or `mismatch` is a bug. `may hang` is a bug
whose order can deadlock at a size inside the side's transport's open range (rules/nccl.toml: above
what is seen to complete, below what hangs on every host), where the host decides. p2paudit *flags* a side when it
exits 1, or, for a `record` side (a CPU run that completed), when the replay says its order will
deadlock over the side's transport (`replay-would-hang`), or can deadlock and the transport's bound
leaves open whether it will (`replay-can-hang`; `got` is then `may hang`). Recall counts the bugs flagged, over every bug side, so a side not run counts as missed.
Precision counts the flagged sides that are bugs, over the flagged sides. The `got` column gives
p2paudit's verdict: `hang`, `mismatch`, or the first error finding's kind. Where that verdict is
not the expected one, the score still counts the side as flagged, and the table shows the
difference.

A bug side is flagged *for the right reason* when its verdict is the expected one and a finding
of that mechanism (a hang's: a wait-for cycle, a would-hang replay, a count mismatch, a batch run
op by op; a mismatch's: a pair that disagrees) names one of the side's `reason_lines` (the source
lines the case names): where it is, in its message, or as the line that chose its op (`chosen`). Scores are printed overall and per half of benchmarks/ppbugs/split.toml:
`original` (the cases the model was built on), `dev` and the sealed `test` half of the cases
added later; `--half NAME` runs one half. `--ci` leaves out the cases whose `[case] heavy` says
why they are slow (CI's representative subset).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "ppbugs" / "cases"
BUGS = {"hang", "may hang", "mismatch"}
# Findings that say the run hangs: the scan's contradiction that makes torch run a batch op by op,
# and the replay's wait-for cycle.
HANG_KINDS = {"batch-runs-unbatched", "unbatched-contradiction", "wait-for-cycle",
              "p2p-count-mismatch"}
# The findings that name each mechanism, for "the right reason".
REASON_KINDS = {"hang": HANG_KINDS | {"replay-would-hang", "unbatched-run"},
                "may hang": {"replay-can-hang"}, "mismatch": {"p2p-mismatch"}}
SPLIT = ROOT / "benchmarks" / "ppbugs" / "split.toml"


@dataclass
class Outcome:
    case: str
    side: str
    expected: str
    got: str            # hang | mismatch | clean | <first error kind> | error | not run (...)
    flagged: bool | None  # p2paudit exited 1; None when the side was not run
    where: str          # the source line p2paudit names
    command: str
    right: bool = False  # flagged with the expected verdict, by a finding naming a reason line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only this case id (repeatable)")
    parser.add_argument("--half", choices=("original", "dev", "test"), help="run only this half")
    parser.add_argument("--ci", action="store_true",
                        help="skip the cases marked heavy (their [case] heavy says why): CI's subset")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per command (default 300)")
    args = parser.parse_args(argv)
    try:
        cases = load_cases()
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    unknown = sorted(set(args.case or []) - set(cases))
    if unknown:
        print(f"ppbugs: no case {', '.join(unknown)} in {CASES} (known: {', '.join(cases)})", file=sys.stderr)
        return 2
    halves = load_split()
    wanted = set(args.case or cases) & (set(halves[args.half]) if args.half else set(cases))
    selected = {cid: c for cid, c in cases.items()
                if cid in wanted and not (args.ci and c.get("case", {}).get("heavy"))}
    runner = Runner(timeout=args.timeout)
    try:
        outcomes = [runner.run(cid, case, side) for cid, case in selected.items() for side in case["side"]]
    finally:
        runner.close()
    score = scores(outcomes)
    by_half = {half: scores([o for o in outcomes if o.case in ids])
               for half, ids in halves.items() if any(o.case in ids for o in outcomes)}
    if args.format == "json":
        print(json.dumps({"outcomes": [asdict(o) for o in outcomes], "score": score,
                          "halves": by_half}, indent=2))
    else:
        print(table(outcomes, score))
        for half, sc in by_half.items():
            print(f"{half:<9} recall {sc['recall']}  precision {sc['precision']}  right reason "
                  f"{sc['right_reason']} ({sc['right']} of {sc['bug_sides']} bug sides), "
                  f"{sc['sides']} sides")
    return 0


def load_split() -> dict[str, list[str]]:
    """The halves of benchmarks/ppbugs/split.toml: original, dev, test."""
    data = tomllib.loads(SPLIT.read_text(encoding="utf-8"))
    return {half: list(data[half]) for half in ("original", "dev", "test")}


def load_cases() -> dict[str, dict]:
    cases = {}
    for path in sorted(CASES.glob("*/case.toml")):
        try:
            case = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"ppbugs: {path}: {e}") from None
        for side in case.get("side", []):
            problem = side_problem(side)
            if problem:
                raise ValueError(f"ppbugs: {path}: side {side.get('name', '?')!r}: {problem}")
        cases[path.parent.name] = case
    return cases


def side_problem(side: dict) -> str | None:
    """What makes a side unrunnable as written, or None."""
    missing = [k for k in ("name", "runner", "expected") if k not in side]
    if missing:
        return f"missing {', '.join(missing)}"
    if side["expected"] not in BUGS | {"clean"}:
        return f"expected must be hang, may hang, mismatch or clean, not {side['expected']!r}"
    needs = {"scan": ("script",), "simulate": ("script",), "record": ("command", "transport")}.get(side["runner"])
    if needs is None:
        return f"runner must be scan, simulate or record, not {side['runner']!r}"
    missing = [k for k in needs if k not in side]
    return f"a {side['runner']} side needs {', '.join(missing)}" if missing else None


class Runner:
    """Runs the sides; a driver recorded once per case and command serves every transport."""

    def __init__(self, timeout: int) -> None:
        self.timeout = timeout
        self.work = Path(tempfile.mkdtemp(prefix="ppbugs-"))
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.traces: dict[tuple[str, tuple[str, ...]], Path] = {}
        self.inventories: dict[str, Path] = {}
        self.has_simulate: bool | None = None

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def run(self, case_id: str, case: dict, side: dict) -> Outcome:
        expected, name = side["expected"], side["name"]
        kind = side["runner"]
        if kind == "simulate" and not self.simulate_exists():
            return Outcome(case_id, name, expected, "not run (needs simulate)", None, "", "p2paudit simulate")
        if kind == "record":
            missing = [m for m in side.get("requires", []) if importlib.util.find_spec(m) is None]
            if missing:
                return Outcome(case_id, name, expected, f"not run (needs {', '.join(missing)})", None, "", "")
            return self.record_side(case_id, side)
        out = self.work / f"{case_id}.{name}.json"
        cmd = ["-m", "auditor", kind, "--config", str(ROOT / side["script"]), *side.get("args", []),
               "--format", "json", "-o", str(out)]
        rc = self.call([sys.executable, *cmd], cwd=ROOT)
        return judge(case_id, side, rc, out, shown=f"p2paudit {kind} --config {side['script']} {' '.join(side.get('args', []))}")

    def simulate_exists(self) -> bool:
        if self.has_simulate is None:
            self.has_simulate = self.call([sys.executable, "-m", "auditor", "simulate", "--help"], cwd=ROOT, quiet=True) == 0
        return self.has_simulate

    def record_side(self, case_id: str, side: dict) -> Outcome:
        folder = CASES / case_id
        key = (case_id, tuple(side["command"]))
        if key not in self.traces:
            trace = self.work / f"trace-{case_id}-{len(self.traces)}"
            command = [str(free_port()) if arg == "{port}" else arg for arg in side["command"]]
            self.call([sys.executable, "-m", "auditor", "record", "--out", str(trace), "--hang-after", "10", "--", *command],
                      cwd=folder, timeout=side.get("timeout", self.timeout))
            self.traces[key] = trace
        if case_id not in self.inventories:
            inventory = self.work / f"sites-{case_id}.json"
            self.call([sys.executable, "-m", "auditor", "sites", str(folder), "--format", "json", "-o", str(inventory)], cwd=ROOT)
            self.inventories[case_id] = inventory
        out = self.work / f"{case_id}.{side['name']}.json"
        rc = self.call([sys.executable, "-m", "auditor", "report", "--scan", str(self.inventories[case_id]),
                        "--trace", str(self.traces[key]), "--transport", side["transport"], "--format", "json", "-o", str(out)],
                       cwd=ROOT)
        shown = f"p2paudit record -- {' '.join(side['command'])}; p2paudit report --transport {side['transport']}"
        return judge(case_id, side, rc, out, shown=shown)

    def call(self, cmd: list[str], cwd: Path, timeout: int | None = None, quiet: bool = True) -> int:
        """The command's exit code; on timeout its whole process group is ended and 124 returned."""
        with subprocess.Popen(cmd, cwd=cwd, env=self.env, start_new_session=True,
                              stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.DEVNULL if quiet else None) as proc:
            try:
                return proc.wait(timeout=timeout or self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                return 124


def judge(case_id: str, side: dict, rc: int, out: Path, shown: str) -> Outcome:
    """p2paudit's verdict on one side, from its exit code and JSON document."""
    expected, name = side["expected"], side["name"]
    if rc not in (0, 1) or not out.is_file():
        return Outcome(case_id, name, expected, f"error (exit {rc})", None, "", shown)
    doc = json.loads(out.read_text(encoding="utf-8"))
    # A side recorded on CPU asks what NCCL would do over its transport: the replay's answer
    # ("would hang", a warning, since the CPU run itself completed) is p2paudit's verdict there.
    for kind, got in (("replay-would-hang", "hang"), ("replay-can-hang", "may hang")):
        would = [f for f in doc.get("findings", []) if f.get("kind") == kind]
        if rc == 0 and side.get("runner") == "record" and would:
            where = source_line(doc, would)
            return Outcome(case_id, name, expected, got, True, where, shown,
                           right_reason(side, got, doc, where))
    if rc == 0:
        return Outcome(case_id, name, expected, "clean", False, "", shown)
    errors = [f for f in doc.get("findings", []) if f.get("severity") == "error"]
    waitfor = (doc.get("run") or {}).get("waitfor") or {}
    simulation = doc.get("simulation") or {}
    if simulation.get("mismatched_pairs") or any(f["kind"] == "p2p-mismatch" for f in errors):
        got = "mismatch"
    elif waitfor.get("hang") or simulation.get("hang") or any(f["kind"] in HANG_KINDS for f in errors):
        got = "hang"
    elif (simulation.get("deadlock") or {}).get("can_deadlock"):
        got = "may hang"  # can deadlock; the transport's bound leaves open whether it will
    else:
        got = errors[0]["kind"] if errors else "flagged"
    where = source_line(doc, errors)
    return Outcome(case_id, name, expected, got, True, where, shown, right_reason(side, got, doc, where))


def right_reason(side: dict, got: str, doc: dict, where: str) -> bool:
    """The expected verdict, and a finding of its mechanism naming one of the side's reason lines
    (where it is, its message, or the line that chose its op)."""
    lines = side.get("reason_lines") or []
    if got != side["expected"] or not lines:
        return False
    kinds = REASON_KINDS.get(got, set())
    # A finding names a line by where it is, in its message, or as the framework line that chose
    # its op (`chosen`, behind a comm wrapper: the line a user can act on).
    texts = [f"{f.get('where') or ''} {f.get('message') or ''} {' '.join(f.get('chosen') or [])}"
             for f in doc.get("findings", []) if f.get("kind") in kinds]
    texts.append(where)
    return any(line in text for line in lines for text in texts)


def source_line(doc: dict, errors: list[dict]) -> str:
    """Where p2paudit points: the first framework line it blames, else the first blocked op."""
    for f in errors:
        where = f.get("where") or ""
        if where and not where.split(":")[0].endswith(".sh"):
            return where
    for rank in ((doc.get("run") or {}).get("timeline") or {}).get("ranks", []):
        for event in rank.get("events", []):
            if event.get("recorded") not in (None, "done") or event.get("blocked_on"):
                return f"rank {rank['rank']}: {event.get('api')} {event.get('where')}"
    return next((f["where"] for f in errors if f.get("where")), "")


def scores(outcomes: list[Outcome]) -> dict:
    bugs = [o for o in outcomes if o.expected in BUGS]
    flagged = [o for o in outcomes if o.flagged]
    hits = [o for o in bugs if o.flagged]
    return {
        "sides": len(outcomes),
        "not_run": sum(o.flagged is None for o in outcomes),
        "bug_sides": len(bugs),
        "bug_sides_run": sum(o.flagged is not None for o in bugs),
        "true_positives": len(hits),
        "false_positives": sum(o.expected not in BUGS for o in flagged),
        "verdict_matches": sum(o.got == o.expected for o in hits),
        "right": sum(o.right for o in hits),
        "right_reason": round(sum(o.right for o in hits) / len(bugs), 3) if bugs else None,
        "recall": round(len(hits) / len(bugs), 3) if bugs else None,
        "recall_of_run": round(len(hits) / max(1, sum(o.flagged is not None for o in bugs)), 3) if bugs else None,
        "precision": round(len(hits) / len(flagged), 3) if flagged else None,
    }


def table(outcomes: list[Outcome], score: dict) -> str:
    rows = [("case", "side", "expected", "got", "result", "source line")]
    for o in outcomes:
        if o.flagged is None:
            result = "not run"
        elif o.expected in BUGS:
            result = ("TP" if o.got == o.expected else "TP (other verdict)") if o.flagged else "FN (missed)"
            result += "" if not o.flagged or o.right else " wrong line"
        else:
            result = "FP" if o.flagged else "TN"
        rows.append((o.case, o.side, o.expected, o.got, result, o.where))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 11)
    s = score
    lines += ["",
              f"{s['sides']} sides, {s['not_run']} not run; {s['bug_sides']} bug sides, {s['bug_sides_run']} of them run",
              f"recall    {s['recall']}  ({s['true_positives']} of {s['bug_sides']} bug sides flagged; not-run sides count as missed)",
              f"          {s['recall_of_run']}  over the {s['bug_sides_run']} bug sides that ran",
              f"precision {s['precision']}  ({s['true_positives']} of {s['true_positives'] + s['false_positives']} flagged sides are bugs)",
              f"verdicts  {s['verdict_matches']} of {s['true_positives']} flagged bug sides got the expected verdict",
              (f"right reason {s['right_reason']}  ({s['right']} of {s['bug_sides']} bug sides: the expected "
               "verdict, by a finding of its mechanism naming a line the case names)")]
    return "\n".join(lines)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
