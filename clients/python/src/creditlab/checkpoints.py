"""
Checkpoints' bytes to and from the server (`/v1/runs/{id}/checkpoints/...`): uploaded and downloaded a chunk at
a time, so that a checkpoint of many gigabytes never sits in memory, and checked against the SHA-256 the server
recorded. A download comes straight from the server's bucket when it has one (a presigned URL), else through the
server.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import re
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Tuple, Union
from urllib.parse import SplitResult, urlsplit

from . import __version__
from .errors import ApiError, ChecksumMismatch, CreditlabError, InvalidInput, ServerUnavailable
from .transport import BodyReader

CHUNK_BYTES = 1 << 20
#: How long connecting to a bucket may take before its download goes through the server instead.
CONNECT_SECONDS = 10.0
#: What the server takes in X-Creditlab-Checkpoint-Format (apps/server checkpoints.controller.ts).
_FORMAT = re.compile(r"[A-Za-z0-9_.+/-]{1,100}")

#: What `upload_checkpoint` takes: a path, the bytes themselves, or a binary file object.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, io.IOBase]


class Checkpoint(NamedTuple):
    """A stored checkpoint, as the server describes it."""

    iteration: int
    format: str
    #: SHA-256 of its bytes, hex.
    sha256: str
    #: How many bytes (the server's `bytes`).
    size: int
    #: When it was stored (ISO 8601, as the server wrote it).
    created_at: str
    #: Where to GET its bytes on the server (`/v1/runs/{id}/checkpoints/{k}`).
    path: str
    #: The object holding its bytes (s3://bucket/key) when the server keeps them in a bucket; None in its database.
    object_url: Optional[str]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Checkpoint":
        return cls(
            iteration=int(doc["iteration"]),
            format=str(doc["format"]),
            sha256=str(doc["sha256"]),
            size=int(doc["bytes"]),
            created_at=str(doc.get("createdAt", "")),
            path=str(doc["path"]),
            object_url=doc.get("objectUrl"),
        )


class CheckpointDownload(NamedTuple):
    """A downloaded checkpoint, its SHA-256 checked: its bytes in `data`, or in `file` when a destination was given."""

    iteration: int
    format: str
    sha256: str
    size: int
    data: Optional[bytes]
    file: Optional[Path]
    #: Whether the bytes came straight from the server's bucket (a presigned URL) rather than through the server.
    from_bucket: bool


def checkpoint_path(run_id: str, iteration: int) -> str:
    return f"/v1/runs/{run_id}/checkpoints/{iteration}"


def checkpoint_format(value: Any) -> str:
    """The format's name, refused here as the server would refuse it: before a large body is sent for nothing."""
    if not isinstance(value, str) or not _FORMAT.fullmatch(value):
        raise InvalidInput(f"format: 1 to 100 of the characters A-Z a-z 0-9 _ . + / -, got {value!r}")
    return value


def check_sha256(run_id: str, iteration: int, expected: str, actual: str, what: str) -> None:
    """Raises ChecksumMismatch unless `actual` is the digest the server recorded (`expected`)."""
    if actual.lower() != expected.lower():
        raise ChecksumMismatch(run_id, iteration, expected, actual, what)


# ---- upload ------------------------------------------------------------------------------------


class UploadSource:
    """
    A checkpoint's bytes as a request body: read a chunk at a time and hashed as they are sent. Called once per
    attempt, it starts again from the beginning when it can (`rereadable`: a path, bytes, a seekable file).
    """

    def __init__(self, source: Source):
        self._owned = None  # a file this object opened, and so closes
        self._view: Optional[memoryview] = None
        self._file = None
        self._start = 0
        self._read_any = False
        self._hash = hashlib.sha256()
        self.size: Optional[int] = None  # None: not known up front (sent chunked)
        self.rereadable = True
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._view = _byte_view(source)
            self.size = self._view.nbytes
            self.name = "the bytes given"
        elif isinstance(source, (str, os.PathLike)):
            self._file = self._owned = open(source, "rb")
            self.size = os.fstat(self._file.fileno()).st_size
            self.name = os.fspath(source)
        elif callable(getattr(source, "read", None)):
            if isinstance(source, io.TextIOBase):
                raise InvalidInput("source: a file opened in text mode; open it in binary mode ('rb')")
            self._file = source
            self.name = str(getattr(source, "name", "the file object given"))
            self._start, self.size = _position_and_rest(source)
            self.rereadable = self.size is not None
        else:
            raise InvalidInput(
                f"source: a path, bytes, or a binary file object, got {type(source).__name__}"
            )
        if self.size == 0:
            self.close()
            raise InvalidInput(f"source: {self.name} is empty; the server takes no empty checkpoint")

    @property
    def sha256(self) -> str:
        """The digest of the bytes the last attempt sent."""
        return self._hash.hexdigest()

    def __call__(self) -> Iterator[bytes]:
        # Not rereadable: the transport sends it again only after a refused connection, before any byte was read.
        if self._read_any and not self.rereadable:
            raise CreditlabError(f"{self.name}: cannot be read again from its start (not seekable) to send it again")
        self._hash = hashlib.sha256()
        if self._view is not None:
            return self._slices(self._view)
        if self.rereadable:
            self._file.seek(self._start)
        return self._reads()

    def _slices(self, view: memoryview) -> Iterator[bytes]:
        for at in range(0, view.nbytes, CHUNK_BYTES):
            chunk = view[at : at + CHUNK_BYTES]
            self._hash.update(chunk)
            yield chunk

    def _reads(self) -> Iterator[bytes]:
        left = self.size
        while left is None or left > 0:
            chunk = self._read(CHUNK_BYTES if left is None else min(CHUNK_BYTES, left))
            if not chunk:
                if left is None:
                    return
                # Content-Length was sent: fewer bytes would leave the request waiting for the rest.
                raise CreditlabError(
                    f"{self.name}: ended after {self.size - left} of its {self.size} bytes (changed while uploading?)"
                )
            self._read_any = True
            self._hash.update(chunk)
            if left is not None:
                left -= len(chunk)
            yield chunk

    def _read(self, n: int) -> bytes:
        try:
            chunk = self._file.read(n)
        except OSError as e:
            # Not an OSError: the transport would take it for the network's and send the file again and again.
            raise CreditlabError(f"cannot read the checkpoint from {self.name}: {e}") from e
        if isinstance(chunk, str):
            raise InvalidInput("source: a file opened in text mode; open it in binary mode ('rb')")
        return chunk or b""

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()

    def __enter__(self) -> "UploadSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _byte_view(source: Union[bytes, bytearray, memoryview]) -> memoryview:
    try:
        return memoryview(source).cast("B")
    except TypeError as e:  # a view that is not contiguous has no single run of bytes to send
        raise InvalidInput(f"source: a memoryview must be contiguous: {e}") from None


def _position_and_rest(file) -> Tuple[int, Optional[int]]:
    """Where a file object is, and how many bytes it has from there; (0, None) for one that cannot seek."""
    try:
        if not file.seekable():
            return 0, None
        start = file.tell()
        file.seek(0, io.SEEK_END)
        end = file.tell()
        file.seek(start)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both OSError and ValueError
        return 0, None
    return start, end - start


# ---- download ----------------------------------------------------------------------------------


class DownloadSink:
    """
    Where a download's bytes go as they arrive, hashed: memory, or a temporary file beside `dest` that takes its
    place only once the digest is checked, so that `dest` never holds a partial or wrong checkpoint. Each attempt
    (`read_from`) starts over.
    """

    def __init__(self, dest: Optional[Path]):
        self.dest = dest
        self._buffer = bytearray()
        self._file = None
        self._temp: Optional[Path] = None
        self._hash = hashlib.sha256()
        self.size = 0

    def read_from(self, res: http.client.HTTPResponse) -> None:
        self._restart()
        while True:
            chunk = res.read(CHUNK_BYTES)
            if not chunk:
                break
            self._write(chunk)
        # http.client ends a body cut short (a connection closed before its Content-Length) as if it were whole:
        # raised as the network error it is, the transport tries again, and a bucket's download goes through
        # the server, rather than the bytes being taken for a wrong checkpoint.
        if res.length:
            raise http.client.IncompleteRead(b"", res.length)

    def finish(self, run_id: str, iteration: int, expected: str, what: str) -> Union[bytes, Path]:
        """The bytes, or `dest` with them in place; ChecksumMismatch (and nothing written at `dest`) if they are not
        the ones the server recorded."""
        check_sha256(run_id, iteration, expected, self._hash.hexdigest(), what)
        if self.dest is None:
            return bytes(self._buffer)
        try:
            self._file.flush()
            os.fsync(self._file.fileno())  # on disk before its name says it is the checkpoint
            self._file.close()
            os.replace(self._temp, self.dest)
        except OSError as e:
            raise CreditlabError(f"cannot write the checkpoint to {self.dest}: {e}") from e
        self._temp = None
        return self.dest

    def discard(self) -> None:
        """Removes the temporary file, if one is left (a download that failed)."""
        if self._file is not None:
            self._file.close()
        if self._temp is not None:
            try:
                self._temp.unlink()
            except FileNotFoundError:
                pass
            self._temp = None

    def __enter__(self) -> "DownloadSink":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def _restart(self) -> None:
        self._hash = hashlib.sha256()
        self.size = 0
        if self.dest is None:
            self._buffer = bytearray()
            return
        try:
            if self._file is None:
                self._temp = self.dest.with_name(f".{self.dest.name}.{uuid.uuid4().hex[:12]}.part")
                # os.open with 0o666: the file gets the umask's permissions, as `dest` written directly would.
                fd = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                self._file = os.fdopen(fd, "wb")
            else:
                self._file.seek(0)
                self._file.truncate()
        except OSError as e:
            raise CreditlabError(f"cannot write the checkpoint beside {self.dest}: {e}") from e

    def _write(self, chunk: bytes) -> None:
        self._hash.update(chunk)
        self.size += len(chunk)
        if self.dest is None:
            self._buffer += chunk
            return
        try:
            self._file.write(chunk)
        except OSError as e:
            # Not an OSError: the transport would take a full disk for a network failure and try again.
            raise CreditlabError(f"cannot write the checkpoint to {self._temp}: {e}") from e


def destination(dest: Union[str, "os.PathLike[str]"]) -> Path:
    """`dest` as a file path, refused before any request when it cannot be one."""
    path = Path(dest)
    if path.is_dir():
        raise InvalidInput(f"dest: {path} is a folder; give the path of the file to write")
    if not path.parent.is_dir():
        raise InvalidInput(f"dest: the folder {path.parent} does not exist")
    return path


def fetch_presigned(url: str, read_body: BodyReader, timeout: float, expires_at: Optional[str] = None) -> None:
    """
    GETs a presigned URL (the bucket's own, on its own host), its body to `read_body`, once: the caller goes
    through the server if it fails. No redirect is followed (the signature is for this URL only), and no error
    shows the URL's query (the signature is a credential).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CreditlabError(f"the server gave a download URL that is not http(s)://: {parts.scheme}://{parts.netloc}")
    where = f"{parts.scheme}://{parts.netloc}{parts.path}"
    try:
        status, body = _get_presigned(parts, read_body, timeout)
    except (OSError, http.client.HTTPException) as e:
        raise ServerUnavailable(f"cannot download from the checkpoint bucket at {where}: {e!r}") from e
    if status != 200:
        valid = f", valid until {expires_at}" if expires_at else ""
        advice = f"the bucket's answer to the presigned URL the server gave{valid}"
        raise ApiError(status, bucket_error(body), "GET", where, advice=advice)


def _get_presigned(parts: SplitResult, read_body: BodyReader, timeout: float) -> Tuple[int, bytes]:
    """One GET, on a connection of its own: (200, b"") with the body read, else the status and the start of its body."""
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    # A bucket this machine cannot reach (a private address) is given up within CONNECT_SECONDS, not the
    # system's two minutes, so that the download goes through the server soon; reading then has `timeout`.
    conn = cls(parts.hostname, _port(parts), timeout=CONNECT_SECONDS)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.connect()
        conn.sock.settimeout(timeout)
        # No Authorization header: the URL's query is its credential (S3 refuses a request that carries both),
        # and the API key is for the Creditlab server alone.
        conn.request("GET", target, headers={"User-Agent": f"creditlab-python/{__version__}"})
        res = conn.getresponse()
        if res.status != 200:
            return res.status, res.read(64 * 1024)
        read_body(res)
        return 200, b""
    finally:
        conn.close()


def _port(parts: SplitResult) -> Optional[int]:
    try:
        return parts.port
    except ValueError as e:  # not a number: the URL cannot be fetched, and the server's download can
        raise OSError(f"bad port in the download URL: {e}") from e


def bucket_error(body: bytes) -> dict:
    """An S3 error document (<Error><Code>…</Code><Message>…</Message>) as the error body the client reports."""
    text = body.decode("utf-8", "replace")
    code, message = (re.search(f"<{tag}>(.*?)</{tag}>", text, re.S) for tag in ("Code", "Message"))
    if code is None and message is None:
        return {"message": text[:500] or "(no body)"}
    return {"error": code and code.group(1), "message": message and message.group(1)}
