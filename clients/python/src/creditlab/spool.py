"""
A run's spool: its events on local disk, in order, until the server has them.

One folder per run, under a spool root (CREDITLAB_SPOOL_DIR, else ~/.creditlab/spool):

- `run.json`: how to create the run (its body, with the client-chosen id), the server it was meant for,
  and whether it was created;
- `events.ndjson`: event lines, appended in the order they were logged, each with its final id;
- `sent`: how many bytes of `events.ndjson` the server has acknowledged (replaced atomically).

Uploading (`creditlab sync`, or the sender once the server is back) sends what follows `sent` in order, in
requests under the size limit, and moves `sent` after each acknowledged request. A crash between a request
and the move of `sent` resends events the server already has: it acknowledges them as duplicates and stores
them once, so the upload is exactly once however often it is interrupted.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

try:
    import fcntl
except ImportError:  # not POSIX: one uploader at a time is then the caller's business
    fcntl = None  # type: ignore[assignment]

SPOOL_FORMAT = "creditlab-spool/v1"


def default_root() -> Path:
    return Path(os.environ.get("CREDITLAB_SPOOL_DIR") or Path.home() / ".creditlab" / "spool")


class Spool:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.events_file = self.folder / "events.ndjson"
        self._appender = None

    @staticmethod
    def create(root: Path, run_id: str, create_body: dict, created: bool, url: Optional[str] = None) -> "Spool":
        spool = Spool(Path(root) / run_id)
        spool.folder.mkdir(parents=True, exist_ok=True)
        if not (spool.folder / "run.json").exists():
            meta = {"format": SPOOL_FORMAT, "runId": run_id, "url": url, "run": create_body, "created": created}
            spool.write_meta(meta)
        spool.events_file.touch()
        return spool

    @staticmethod
    def is_spool(folder: Path) -> bool:
        return (Path(folder) / "run.json").is_file()

    # ---- metadata ----

    def meta(self) -> dict:
        meta = json.loads((self.folder / "run.json").read_text(encoding="utf-8"))
        if meta.get("format") != SPOOL_FORMAT:
            raise ValueError(f"{self.folder}/run.json: not a {SPOOL_FORMAT} spool")
        return meta

    def write_meta(self, meta: dict) -> None:
        _replace(self.folder / "run.json", json.dumps(meta, indent=1).encode("utf-8"))

    # ---- events ----

    def append(self, lines: List[bytes], fsync: bool = False) -> int:
        """Appends lines; returns the file's size after them (their end offset)."""
        if self._appender is None:
            _drop_partial_line(self.events_file)
            self._appender = open(self.events_file, "ab")
        f = self._appender
        f.write(b"".join(lines))
        f.flush()
        if fsync:
            os.fsync(f.fileno())
        return f.tell()

    def sent(self) -> int:
        try:
            return int((self.folder / "sent").read_text().strip() or 0)
        except FileNotFoundError:
            return 0

    def mark_sent(self, offset: int) -> None:
        _replace(self.folder / "sent", str(offset).encode("ascii"))

    def size(self) -> int:
        return self.events_file.stat().st_size if self.events_file.exists() else 0

    def pending(self, max_request_bytes: int) -> Iterator[Tuple[List[bytes], int]]:
        """The unsent lines in request-sized batches, each with the offset that follows it."""
        with open(self.events_file, "rb") as f:
            offset = self.sent()
            f.seek(offset)
            batch: List[bytes] = []
            size = 0
            for raw in f:
                if not raw.endswith(b"\n"):
                    break  # a line being written right now (or cut by a crash): not an event yet
                if batch and size + len(raw) > max_request_bytes:
                    yield batch, offset
                    batch, size = [], 0
                batch.append(raw)
                size += len(raw)
                offset += len(raw)
            if batch:
                yield batch, offset

    @contextmanager
    def lock(self):
        """One uploader per run folder at a time (so events go up in order)."""
        with open(self.folder / "lock", "a") as f:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None


def _replace(path: Path, data: bytes) -> None:
    """Write-then-rename, so a reader sees the old content or the new, never half of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _drop_partial_line(path: Path) -> None:
    """A last line without its newline was cut by a crash mid-write: it was never logged, so drop it."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(max(0, size - (1 << 20)))
        tail = f.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        if cut < 0 and size > len(tail):
            raise ValueError(f"{path}: last line longer than 1 MiB and unterminated; remove it by hand")
        f.truncate(size - len(tail) + cut + 1)


def run_folders(path: Path) -> List[Path]:
    """A spool folder itself, or the run folders of a spool root, oldest first."""
    path = Path(path)
    if Spool.is_spool(path):
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder")
    folders = [p for p in path.iterdir() if Spool.is_spool(p)]
    return sorted(folders, key=lambda p: (p / "run.json").stat().st_mtime)
