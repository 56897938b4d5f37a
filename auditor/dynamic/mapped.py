"""A rank file written through a shared memory map, so that a SIGKILL cannot lose what was written.

A write is a copy into the page cache (no system call): once copied, a line outlives the process.
The file grows by `CHUNK`, each chunk's disk blocks reserved (`posix_fallocate`) before it is
mapped: a store into a mapped page the filesystem has no room for is a SIGBUS, which would kill
the training process. A reservation that fails for want of space (`DiskFull`) stops the file:
the last `RESERVE` bytes of every chunk are reserved but never mapped, so that the line saying
why recording stopped always has room. Where a filesystem cannot map files or reserve blocks,
each write is one `pwrite` instead. `close` cuts the file to what was written (zeros until
written; the trace reader skips them).
"""

from __future__ import annotations

import errno
import mmap
import os

from auditor.errors import NO_ROOM



class DiskFull(OSError):
    """The filesystem has no room for the next line: this file takes one last line, then none."""


class MappedFile:
    """The map's own position is the write position (`mmap.write` copies and advances in one C
    call, and raises ValueError past the map's end): the recorder's hot path calls `map.write`
    itself and falls back to `write`, which grows the map, only when that raises."""

    # A remap per ~5,000 lines (each costs a munmap, a posix_fallocate and an mmap); what a killed
    # process leaves as zeros at most. A file's first chunks are smaller (FIRST_CHUNK, doubling
    # with the file): the ranks sharing a nearly full filesystem each get room for their lines.
    CHUNK = 1 << 20
    FIRST_CHUNK = 1 << 14
    # Reserved at each chunk's end and never mapped: room for the line that says why the file
    # stops (a few hundred bytes), whatever happens to the filesystem after the reservation.
    RESERVE = 4096

    __slots__ = ("fd", "map", "base", "through", "full", "ended")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.map: mmap.mmap | None = None  # None: not mapped yet, or writing through
        self.base = os.fstat(fd).st_size  # file offset of the map's first byte (unmapped: the end)
        self.through = False  # the filesystem cannot map files or reserve blocks: one pwrite a line
        self.full = False  # out of space: one last line goes into the reserve (`_last`)
        self.ended = False  # that last line is written: nothing more

    @property
    def pos(self) -> int:
        """File offset past the last byte written."""
        return self.base + (self.map.tell() if self.map is not None else 0)

    def write(self, data: bytes) -> None:
        """Append `data`; DiskFull when the filesystem has no room for it (nothing is written)."""
        if self.map is not None:
            try:
                self.map.write(data)
                return
            except ValueError:  # past the map's end
                pass
        if self.full:
            self._last(data)
            return
        if not self.through:
            self._grow(len(data))
            if self.map is not None:
                self.map.write(data)
                return
        self._pwrite(data)

    def _grow(self, need: int) -> None:
        pos = self.pos
        if self.map is not None:
            self.map.close()
            self.map = None
        self.base = pos
        try:
            size = self._reserve(pos + need + self.RESERVE)
        except DiskFull:
            raise
        except OSError:
            self.through = True  # reservations unsupported: each line is a pwrite that can fail
            os.ftruncate(self.fd, pos)
            return
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        try:
            self.map = mmap.mmap(self.fd, size - self.RESERVE - base, offset=base)
        except OSError:
            os.ftruncate(self.fd, pos)
            self.through = True
            return
        self.map.seek(pos - base)
        self.base = base

    def _reserve(self, end: int) -> int:
        """Reserve the blocks up to the next chunk's boundary past `end`, or where the filesystem has less
        room, up to the largest smaller boundary (halving the step down to a page) that it takes.
        Returns the file's new size; DiskFull when not even `end` fits."""
        old_size = os.fstat(self.fd).st_size
        step = min(self.CHUNK, max(self.FIRST_CHUNK, 1 << old_size.bit_length()))
        while True:
            size = (end // step + 1) * step
            try:
                if size > old_size:
                    os.posix_fallocate(self.fd, old_size, size - old_size)
                return size
            except OSError as exc:
                os.ftruncate(self.fd, old_size)  # a partial reservation may have moved the end
                if exc.errno not in NO_ROOM:
                    raise
                if step <= mmap.PAGESIZE:
                    self.full = True
                    raise DiskFull(exc.errno, "no space left for the trace") from None
                step //= 2

    def _pwrite(self, data: bytes) -> None:
        try:
            written = os.pwrite(self.fd, data, self.base)
        except OSError as exc:
            if exc.errno in NO_ROOM:
                self.full = True
                raise DiskFull(exc.errno, "no space left for the trace") from None
            raise
        if written < len(data):  # the filesystem filled mid-line: no cut line stays behind
            os.ftruncate(self.fd, self.base)
            self.full = True
            raise DiskFull(errno.ENOSPC, "no space left for the trace")
        self.base += written

    def _last(self, data: bytes) -> None:
        """The one line written after DiskFull (the recorder's stop line): into the reserve where
        one is left, else where the filesystem still has room."""
        if self.ended:
            raise DiskFull(errno.ENOSPC, "the trace stopped: its filesystem is full")
        self.ended = True
        self._pwrite(data)

    def close(self) -> None:
        pos = self.pos
        if self.map is not None:
            self.map.close()
            self.map = None
        os.ftruncate(self.fd, pos)
        os.close(self.fd)
