"""Write the pinned upstream trees of the real-scripts corpus into DEST (issue 22).

The scripts are not copied into this repository: `manifest.toml` pins each one (repository, full
commit, path) and this step materialises, for every pinned (repository, commit), the whole tree
at that commit under DEST/<owner>+<name>@<commit[:10]>/, so that a script finds what its authors
run it next to (ms-swift's YAML configs, slime's sourced model files, pretrain_gpt.py, the
Megatron-LM checkout a front end is read from).

Source of the commits: a bare git snapshot per repository, looked up as
  $P2PAUDIT_MIRROR/<owner>+<name>/repo   (default /work/.mirror, where the session's `fetch`
                                          tool puts GitHub snapshots)
else a local clone made here with `git clone --filter=blob:none https://github.com/OWNER/NAME`
(only where github.com is reachable; pass --no-clone to refuse). Blobs a snapshot lacks (large
binaries kept out of it) are skipped and counted; a pinned script that is missing is an error.

Writes nothing in this repository; refuses a DEST inside it. Idempotent: a tree already written
(its .pinned file names the commit) is kept.

    python benchmarks/real_scripts/fetch.py /work/upstream/real_scripts
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
MANIFEST = HERE / "manifest.toml"
MAX_BLOB = 8 * 1024 * 1024  # larger files are data or media, never what a launch script reads


def load_manifest(path: Path = MANIFEST) -> list[dict]:
    with path.open("rb") as f:
        return tomllib.load(f)["script"]


def tree_dir(dest: Path, repo: str, commit: str) -> Path:
    return dest / f"{repo.replace('/', '+')}@{commit[:10]}"


def git_dir_for(repo: str, mirror: Path, clones: Path, allow_clone: bool) -> Path:
    snap = mirror / repo.replace("/", "+") / "repo"
    if snap.is_dir():
        return snap
    local = clones / (repo.replace("/", "+") + ".git")
    if local.is_dir():
        return local
    if not allow_clone:
        raise SystemExit(f"fetch.py: no snapshot of {repo} under {mirror} (fetch github:{repo} "
                         "with the session's fetch tool, or run without --no-clone)")
    clones.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--bare", "--filter=blob:none",
                    f"https://github.com/{repo}", str(local)], check=True)
    return local


def write_tree(git_dir: Path, commit: str, out: Path) -> tuple[int, int]:
    """Every blob of `commit` under `out`; returns (written, skipped)."""
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", "-z", commit],
                             check=True, capture_output=True).stdout.split(b"\0")
    entries: list[tuple[str, str, bytes]] = []
    absent = 0
    for rec in listing:
        if not rec:
            continue
        meta, raw_name = rec.split(b"\t", 1)
        mode, kind, raw_sha, size = meta.split()
        if kind != b"blob" or mode == b"120000":
            continue
        if not size.isdigit():  # ls-tree prints BAD for a blob the snapshot lacks
            absent += 1
            continue
        if int(size) > MAX_BLOB:
            continue
        entries.append((raw_sha.decode(), raw_name.decode("utf-8", "surrogateescape"), mode))
    written, skipped = 0, absent
    proc = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    for sha, name, mode in entries:
        proc.stdin.write(sha.encode() + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":  # "<sha> missing": not in the snapshot
            skipped += 1
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = out / name
        if ".." in Path(name).parts:
            raise SystemExit(f"fetch.py: refusing path {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if mode == b"100755":
            target.chmod(0o755)
        written += 1
    proc.stdin.close()
    proc.wait()
    return written, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--mirror", type=Path,
                    default=Path(os.environ.get("P2PAUDIT_MIRROR", "/work/.mirror")))
    ap.add_argument("--no-clone", action="store_true")
    args = ap.parse_args(argv)
    dest = args.dest.resolve()
    if dest == REPO_ROOT or REPO_ROOT in dest.parents:
        raise SystemExit(f"fetch.py: {dest} is inside this repository; pick a directory outside it")
    scripts = load_manifest()
    pins = sorted({(s["repo"], s["commit"]) for s in scripts})
    for repo, commit in pins:
        out = tree_dir(dest, repo, commit)
        stamp = out / ".pinned"
        if stamp.is_file() and stamp.read_text().strip() == f"{repo} {commit}":
            print(f"{repo}@{commit[:10]}: already written")
            continue
        git_dir = git_dir_for(repo, args.mirror, dest / ".clones", not args.no_clone)
        written, skipped = write_tree(git_dir, commit, out)
        stamp.write_text(f"{repo} {commit}\n")
        print(f"{repo}@{commit[:10]}: {written} files, {skipped} absent from the snapshot")
    missing = [f"{s['id']}: {s['repo']}@{s['commit'][:10]}:{s['path']}" for s in scripts
               if not (tree_dir(dest, s["repo"], s["commit"]) / s["path"]).is_file()]
    if missing:
        print("fetch.py: pinned scripts missing:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    print(f"{len(scripts)} scripts from {len(pins)} pinned trees in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
