"""A rank file written through a shared memory map, so that a SIGKILL cannot lose what was written.

A write is a copy into the page cache (no system call): once copied, a line outlives the process.
The file grows by `CHUNK` (zeros until written; the trace reader skips them); `close` cuts it to
what was written. Where a filesystem cannot map files, each write is one `pwrite` instead.
"""

from __future__ import annotations

import mmap
import os


class MappedFile:
    """The map's own position is the write position (`mmap.write` copies and advances in one C
    call, and raises ValueError past the map's end): the recorder's hot path calls `map.write`
    itself and falls back to `write`, which grows the map, only when that raises."""

    # A remap per ~5,000 lines (each costs a munmap, an ftruncate and an mmap); what a killed
    # process leaves as zeros at most (a hole: no disk blocks).
    CHUNK = 1 << 20

    __slots__ = ("fd", "map", "base", "through")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.map: mmap.mmap | None = None  # None: not mapped yet, or writing through
        self.base = os.fstat(fd).st_size  # file offset of the map's first byte (unmapped: the end)
        self.through = False  # the filesystem cannot map files: one pwrite per line

    @property
    def pos(self) -> int:
        """File offset past the last byte written."""
        return self.base + (self.map.tell() if self.map is not None else 0)

    def write(self, data: bytes) -> None:
        if self.map is not None:
            try:
                self.map.write(data)
                return
            except ValueError:  # past the map's end
                pass
        if not self.through:
            self._grow(len(data))
            if self.map is not None:
                self.map.write(data)
                return
        os.pwrite(self.fd, data, self.base)
        self.base += len(data)

    def _grow(self, need: int) -> None:
        pos = self.pos
        size = ((pos + need) // self.CHUNK + 1) * self.CHUNK
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        if self.map is not None:
            self.map.close()
            self.map = None
        try:
            os.ftruncate(self.fd, size)
            self.map = mmap.mmap(self.fd, size - base, offset=base)
        except OSError:
            os.ftruncate(self.fd, pos)
            self.base, self.through = pos, True
            return
        self.map.seek(pos - base)
        self.base = base

    def close(self) -> None:
        pos = self.pos
        if self.map is not None:
            self.map.close()
            self.map = None
        os.ftruncate(self.fd, pos)
        os.close(self.fd)
