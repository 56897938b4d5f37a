"""What an NCCL_DEBUG=INFO log states about the cluster: the NCCL release, the transport of each
connection, the channels per peer, the P2P chunk and the NCCL_* settings, each with the file:line
that states it, per process ("host:pid"). Nothing is inferred here: a fact the log does not print
is listed as missing (`NcclLog.missing`); `auditor.analysis.ncclbounds` decides what they mean.

The formats are NCCL's own, lines at v2.28.9-1 (the same text at v2.21.5-1 and v2.27.5-1): the
prefix "host:pid:tid [cudaDev] NCCL INFO " (src/debug.cc:349-363); "NCCL version 2.28.9+cuda12.9"
(VERSION_STRING, src/init.cc:603-608; older releases print it bare, on stdout); "Using network IB"
(init.cc:428); "P2P Chunksize set to 131072" (init.cc:730); "8 coll channels, ..., 8 p2p channels,
2 p2p channels per peer" (init.cc:1358); a communicator's section starts at "comm 0x... rank R
nRanks N nNodes K" (init.cc:1170), which says whether it spans nodes; a connection
"Channel 02/1 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" (src/transport/net.cc:313, :359;
p2p.cc:386-406 "via P2P/..."; shm.cc:128 "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", with
no connection index), where connection index 1 is point-to-point (src/group.cc:140); and
"NCCL_BUFFSIZE set by environment to 8388608." (src/misc/param.cc:89).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor import reads
from auditor.errors import InputError

PREFIX = re.compile(r"^(?:\[\d+\] )?(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) "
                    r"\[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+)(?P<suffix>\S*)")
NETWORK = re.compile(r"^Using network (?P<net>\S+)")
CHUNK = re.compile(r"^P2P Chunksize set to (?P<n>\d+)")
PER_PEER = re.compile(r"(?P<p2p>\d+) p2p channels, (?P<n>\d+) p2p channels per peer")
COMM = re.compile(r"comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) nRanks (?P<nranks>\d+) "
                  r"nNodes (?P<nnodes>\d+)")
CONNECTION = re.compile(r"^Channel (?P<ch>\d+)(?:/(?P<idx>\d+))? : (?P<src>\d+)\[[^\]]*\] -> "
                        r"(?P<dst>\d+)\[[^\]]*\] (?:\[(?P<dir>send|receive)\] )?via (?P<via>\S+)")
ENV = re.compile(r"^(?P<name>NCCL_\w+) set by environment to (?P<value>\S+?)\.?$")
P2P_CONNECTION = 1  # connection index of point-to-point send/recv (src/group.cc:140)


@dataclass(frozen=True)
class Fact:
    """One value the log states, and where: `process` is "host:pid" ("" for an unprefixed line);
    `nnodes` the nodes of the communicator whose section it is in (None: no section seen)."""

    value: Any
    where: str  # path:line
    process: str = ""
    nnodes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "where": self.where, "process": self.process or None,
                "nnodes": self.nnodes}


@dataclass(frozen=True)
class Connection:
    """One "Channel xx/i : a[d] -> b[d] via ..." line."""

    channel: int
    index: int | None  # connection index (1: point-to-point); None where the line has none (SHM)
    src: int  # communicator ranks
    dst: int
    direction: str  # "send", "receive", or "" (P2P and SHM lines say neither)
    via: str  # "NET/IB/0/GDRDMA", "P2P/CUMEM/read", "SHM/direct/direct"
    where: str
    process: str
    nnodes: int | None

    @property
    def family(self) -> str:
        """The transport as rules/nccl.toml names it: "P2P", "SHM", "NET/IB", "NET/IBext_v8"..."""
        parts = self.via.split("/")
        return "/".join(parts[:2]) if parts[0] == "NET" and len(parts) > 1 else parts[0]


@dataclass
class NcclLog:
    """Every fact the files state, in file order."""

    files: list[str]
    versions: list[Fact] = field(default_factory=list)
    networks: list[Fact] = field(default_factory=list)
    chunks: list[Fact] = field(default_factory=list)
    per_peer: list[Fact] = field(default_factory=list)
    env: list[Fact] = field(default_factory=list)  # value: (name, value)
    connections: list[Connection] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    info_lines: int = 0

    def setting(self, name: str) -> list[Fact]:
        """Where the log says NCCL read `name` from the environment (value: its text)."""
        return [Fact(f.value[1], f.where, f.process, f.nnodes) for f in self.env
                if f.value[0] == name]

    def missing(self) -> list[str]:
        """What this log does not state that a decision reads, each as the line NCCL prints."""
        out = []
        if not self.versions:
            out.append("the NCCL version ('NCCL version X.Y.Z+cudaA.B')")
        if not self.connections:
            out.append("the transport per peer ('Channel xx/y : a[d] -> b[d] via ...')")
        if not any(c.index == P2P_CONNECTION for c in self.connections) and not self.per_peer:
            out.append("the channels per peer ('Channel xx/1 : ... via' point-to-point lines, "
                       "or 'N p2p channels per peer')")
        if not self.chunks:
            out.append("the P2P chunk ('P2P Chunksize set to N')")
        return out

    def per_process(self) -> dict[str, dict[str, Any]]:
        """Each rank's process ("host:pid") and what its own lines state."""
        out: dict[str, dict[str, Any]] = {
            p: {"versions": [], "transports": [], "p2p_channels_per_peer": [], "chunks": []}
            for p in self.processes}
        for key, facts in (("versions", self.versions), ("p2p_channels_per_peer", self.per_peer),
                           ("chunks", self.chunks)):
            for f in facts:
                if f.process in out and f.value not in out[f.process][key]:
                    out[f.process][key].append(f.value)
        for c in self.connections:
            if c.family not in out[c.process]["transports"]:
                out[c.process]["transports"].append(c.family)
        return out

    def to_json(self) -> dict[str, Any]:
        transports: dict[str, list[str]] = {}
        for c in self.connections:
            transports.setdefault(c.family, []).append(c.where)
        return {"files": self.files, "info_lines": self.info_lines, "processes": self.processes,
                "per_process": self.per_process(),
                "versions": [f.to_json() for f in self.versions],
                "networks": [f.to_json() for f in self.networks],
                "chunks": [f.to_json() for f in self.chunks],
                "p2p_channels_per_peer": [f.to_json() for f in self.per_peer],
                "env": [{"name": f.value[0], "value": f.value[1], "where": f.where}
                        for f in self.env],
                "transports": {k: {"lines": len(v), "first": v[0]} for k, v in transports.items()},
                "missing": self.missing()}


def log_files(paths: list[Path]) -> list[Path]:
    """The files `--nccl-log` names: each file, and every file of a directory (per-rank logs),
    sorted; InputError for one that does not exist."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            reads.note_folder(p)
            files = sorted(f for f in p.iterdir() if f.is_file())
            if not files:
                raise InputError(str(p), "--nccl-log: an empty directory (one log per rank)")
            out += files
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(str(p), "--nccl-log: no such file or directory")
    return out


def read_logs(paths: list[Path]) -> NcclLog:
    """The facts of every NCCL_DEBUG=INFO file in `paths` (files or directories); InputError for
    one that cannot be read or holds no NCCL line at all (it is not such a log)."""
    files = log_files(paths)
    log = NcclLog([str(f) for f in files])
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(str(f), f"--nccl-log: cannot read: {exc.strerror or exc}") from None
        before = log.info_lines + len(log.versions)
        parse(text, str(f), log)
        if log.info_lines + len(log.versions) == before:
            raise InputError(str(f), "--nccl-log: no 'NCCL INFO' line: not an NCCL_DEBUG=INFO log")
    return log


def parse(text: str, path: str, log: NcclLog) -> NcclLog:
    """Add the facts of one file's `text` to `log`."""
    nnodes: dict[tuple[str, str], int] = {}  # (process, tid) -> nodes of its current communicator
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        where = f"{path}:{number}"
        m = PREFIX.match(line)
        if m is None:  # older releases print the version line bare, on stdout
            v = VERSION.match(line.strip())
            if v:
                log.versions.append(Fact(v["v"] + v["suffix"], where))
            continue
        log.info_lines += 1
        process, msg = f"{m['host']}:{m['pid']}", m["msg"]
        if process not in log.processes:
            log.processes.append(process)
        stream = (process, m["tid"])
        here = nnodes.get(stream)
        if (c := COMM.search(msg)) is not None:
            nnodes[stream] = int(c["nnodes"])
        elif (v := VERSION.match(msg)) is not None:
            log.versions.append(Fact(v["v"] + v["suffix"], where, process))
        elif (n := NETWORK.match(msg)) is not None:
            log.networks.append(Fact(n["net"], where, process))
        elif (ch := CHUNK.match(msg)) is not None:
            log.chunks.append(Fact(int(ch["n"]), where, process, here))
        elif (pp := PER_PEER.search(msg)) is not None:
            log.per_peer.append(Fact(int(pp["n"]), where, process, here))
        elif (e := ENV.match(msg)) is not None:
            log.env.append(Fact((e["name"], e["value"]), where, process))
        elif (k := CONNECTION.match(msg)) is not None:
            log.connections.append(Connection(
                int(k["ch"]), None if k["idx"] is None else int(k["idx"]), int(k["src"]),
                int(k["dst"]), k["dir"] or "", k["via"], where, process, here))
    return log


def version_number(text: str) -> str:
    """"2.21.5" of "2.21.5+cuda12.4"."""
    return text.split("+")[0]
