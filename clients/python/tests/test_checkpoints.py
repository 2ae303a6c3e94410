"""
Checkpoints' bytes against the real server: uploaded from a path, bytes or a file object, listed, downloaded back
to a file or to memory, each checked against its SHA-256.

CREDITLAB_PYTEST_CHECKPOINT_STORE says where the server keeps them: "database" (the default) or "bucket" (a server
with CREDITLAB_CHECKPOINT_BUCKET set), where downloads must come straight from the bucket's presigned URLs.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import threading
import tracemalloc
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator, List, Optional

import numpy as np
import pytest

import creditlab
from creditlab.checkpoints import check_sha256
from conftest import events_of
from support import Proxy

STORE = os.environ.get("CREDITLAB_PYTEST_CHECKPOINT_STORE", "database")
MiB = 1 << 20


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True, scope="module")
def known_store():
    assert STORE in ("database", "bucket"), f"CREDITLAB_PYTEST_CHECKPOINT_STORE: database or bucket, got {STORE!r}"


@pytest.fixture
def run(client):
    run = client.create_run(name="checkpoints", env="fixtures", method="grpo")
    yield run
    run.finish()


class Requests:
    """The client's checkpoint requests as it makes them, with their headers and the status each was answered."""

    def __init__(self, transport, monkeypatch):
        self.seen: List[dict] = []
        real = transport.request

        def request(method, path, body=None, **kwargs):
            entry = {"method": method, "path": path, "headers": dict(kwargs.get("headers") or {}), "status": None}
            if "/checkpoints" in path:
                self.seen.append(entry)
            try:
                res = real(method, path, body, **kwargs)
            except creditlab.ApiError as e:
                entry["status"] = e.status
                raise
            entry["status"] = res.status
            return res

        monkeypatch.setattr(transport, "request", request)

    def last(self, method: str) -> dict:
        return [r for r in self.seen if r["method"] == method][-1]


@pytest.fixture
def requests(client, monkeypatch) -> Requests:
    return Requests(client.transport, monkeypatch)


class NotSeekable(io.RawIOBase):
    """A stream that can only be read forward, as a pipe."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._data.readinto(buffer)


def url_route_answer(client, run_id: str, iteration: int) -> Optional[dict]:
    """`checkpoint_url`'s answer, or None from a server without that route (its router's 404)."""
    try:
        return client.checkpoint_url(run_id, iteration)
    except creditlab.ApiError as e:
        assert e.status == 404 and "Cannot GET" in str(e), e
        if STORE == "bucket":
            pytest.fail(f"a server with a bucket must have GET …/checkpoints/{{k}}/url: {e}")
        return None


# ---- upload and list ---------------------------------------------------------------------------


def test_uploads_from_a_path_bytes_and_file_objects_are_stored_as_sent_and_listed(client, run, requests, tmp_path):
    from_path = os.urandom(3 * MiB + 7)  # chunks of 1 MiB and a short one
    path = tmp_path / "model.pt"
    path.write_bytes(from_path)
    array = np.arange(1000, dtype=np.float32)
    file_bytes = os.urandom(MiB + 3)
    piped = os.urandom(2 * MiB + 11)
    uploads = [
        (0, str(path), from_path),
        (1, path, from_path),  # a PathLike
        (2, b"weights", b"weights"),
        (3, memoryview(array), array.tobytes()),  # a view of float32s goes up as its bytes
        (4, io.BytesIO(b"skip" + file_bytes), file_bytes),  # read from where it is
        (5, io.BufferedReader(NotSeekable(piped)), piped),
    ]
    uploads[4][1].seek(4)
    stored = []
    for k, source, data in uploads:
        info = run.upload_checkpoint(k, source, format="test/v1")
        assert (info.iteration, info.format, info.size, info.sha256) == (k, "test/v1", len(data), sha256(data))
        assert info.path == f"/v1/runs/{run.id}/checkpoints/{k}"
        assert (info.object_url or "").startswith("s3://") == (STORE == "bucket"), info.object_url
        put = requests.last("PUT")
        assert put["status"] == 201
        assert put["headers"]["X-Creditlab-Checkpoint-Format"] == "test/v1"
        # The length up front when it is known; a stream that cannot seek goes chunked.
        assert put["headers"].get("Content-Length") == (None if k == 5 else str(len(data)))
        assert client.download_checkpoint(run.id, k).data == data
        stored.append(info)
    assert run.checkpoints() == client.checkpoints(run.id) == stored
    assert path.read_bytes() == from_path  # untouched, and the client closed what it opened
    assert not uploads[4][1].closed  # a caller's file object stays the caller's to close


def test_the_same_bytes_again_are_acknowledged_and_other_bytes_refused(client, run, requests, tmp_path):
    data = os.urandom(100_000)
    first = client.upload_checkpoint(run.id, 7, data)
    assert requests.last("PUT")["status"] == 201
    path = tmp_path / "again.bin"
    path.write_bytes(data)
    again = run.upload_checkpoint(7, path)  # a retry, from the same bytes on disk
    assert requests.last("PUT")["status"] == 200
    assert again == first
    with pytest.raises(creditlab.ApiError) as refused:
        run.upload_checkpoint(7, data[:-1] + b"!")
    assert (refused.value.status, refused.value.error) == (409, "CONFLICT")
    assert first.sha256 in str(refused.value)
    assert run.checkpoints() == [first]
    assert run.download_checkpoint(7).data == data


class CutOnce(io.BytesIO):
    """A checkpoint file that cuts the proxy's connections once, 2 MiB into its first upload; counts the
    attempts that read it from its start."""

    def __init__(self, data: bytes, proxy: Proxy):
        super().__init__(data)
        self.proxy = proxy
        self.cut = False
        self.starts = 0

    def read(self, n=-1):
        if self.tell() == 0:
            self.starts += 1
        if not self.cut and self.tell() >= 2 * MiB:
            self.cut = True
            self.proxy.down()
            self.proxy.up()
        return super().read(n)


@pytest.fixture
def proxied(server, tmp_path):
    """A client reaching the server through a proxy that the test cuts, quick to retry."""
    proxy = Proxy(server[0])
    retry = creditlab.RetryPolicy(budget=60, first_delay=0.05, max_delay=0.5)
    c = creditlab.Client(proxy.url, server[1], spool_dir=str(tmp_path / "proxied"), retry=retry)
    yield c, proxy
    c.close()
    proxy.down()


def test_an_upload_cut_off_is_sent_again_from_its_start_when_its_source_can_be_read_again(client, run, proxied):
    c, proxy = proxied
    data = os.urandom(8 * MiB)
    source = CutOnce(data, proxy)
    info = c.upload_checkpoint(run.id, 0, source)
    assert source.cut and source.starts == 2
    assert (info.sha256, info.size) == (sha256(data), len(data))  # the digest of the second attempt alone
    assert client.download_checkpoint(run.id, 0).data == data


def test_an_upload_cut_off_is_not_sent_again_when_its_source_cannot_seek(client, run, proxied):
    c, proxy = proxied

    class CutsWhenPartRead(NotSeekable):
        read_so_far = 0
        cut = False

        def readinto(self, buffer) -> int:
            if self.read_so_far >= 2 * MiB and not self.cut:
                self.cut = True
                proxy.down()
                proxy.up()  # a retry would get through: none must be made
            n = super().readinto(buffer)
            self.read_so_far += n
            return n

    with pytest.raises(creditlab.ServerUnavailable):
        c.upload_checkpoint(run.id, 0, io.BufferedReader(CutsWhenPartRead(os.urandom(8 * MiB))))
    assert client.checkpoints(run.id) == []


# ---- download ----------------------------------------------------------------------------------


def test_downloads_to_a_file_and_to_memory_are_the_bytes_uploaded(client, run, tmp_path):
    data = os.urandom(2 * MiB + 5)
    info = run.upload_checkpoint(3, data, format="creditlab-text-policy/v1")
    located = url_route_answer(client, run.id, 3)
    if located is not None:
        assert {k: located[k] for k in ("iteration", "format", "sha256", "bytes", "path", "objectUrl")} == {
            "iteration": 3, "format": info.format, "sha256": info.sha256, "bytes": len(data), "path": info.path,
            "objectUrl": info.object_url,
        }
    if STORE == "bucket":
        assert located["url"].startswith(("http://", "https://")) and located["expiresAt"], located
        assert info.object_url.startswith("s3://")
    else:
        assert info.object_url is None
        assert located is None or (located["url"], located["expiresAt"]) == (None, None), located

    got = run.download_checkpoint(3)
    assert got == creditlab.CheckpointDownload(3, info.format, info.sha256, len(data), data, None, STORE == "bucket")

    dest = tmp_path / "out" / "policy.ckpt"
    dest.parent.mkdir()
    dest.write_bytes(b"an older checkpoint")  # replaced
    saved = client.download_checkpoint(run.id, 3, str(dest))
    assert saved == creditlab.CheckpointDownload(3, info.format, info.sha256, len(data), None, dest, STORE == "bucket")
    assert dest.read_bytes() == data
    assert os.listdir(dest.parent) == ["policy.ckpt"]  # no temporary file left beside it


def test_a_checkpoint_or_run_that_is_not_there_is_not_found_and_a_server_without_the_url_route_serves_it(
    client, run, monkeypatch
):
    run.upload_checkpoint(1, b"one")
    with pytest.raises(creditlab.ApiError) as missing:
        run.download_checkpoint(2)
    assert (missing.value.status, missing.value.error, missing.value.body["checkpoints"]) == (404, "NOT_FOUND", [1])
    with pytest.raises(creditlab.ApiError) as no_run:
        client.download_checkpoint("00000000-0000-4000-8000-000000000000", 1)
    assert (no_run.value.status, no_run.value.error) == (404, "RUN_NOT_FOUND")
    # The router's 404, for a route no server has: what an older server answers for …/url.
    with pytest.raises(creditlab.ApiError) as no_route:
        client.transport.request("GET", f"/v1/runs/{run.id}/checkpoints/1/no-such-route")
    assert no_route.value.status == 404 and "Cannot GET" in str(no_route.value)

    def older_server(run_id, iteration):
        raise no_route.value

    monkeypatch.setattr(client, "checkpoint_url", older_server)
    got = run.download_checkpoint(1)
    assert (got.data, got.from_bucket) == (b"one", False)


class FakeBucket:
    """Stands for the bucket behind a presigned URL: answers every GET with `status` and `body` (and `headers`),
    and keeps each request's path and headers."""

    def __init__(
        self, status: int = 200, body: bytes = b"", headers: Optional[Dict[str, str]] = None, cut_after: Optional[int] = None
    ):
        bucket = self
        self.requests: List[dict] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                bucket.requests.append({"path": self.path, "headers": dict(self.headers)})
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                # `cut_after`: the connection closes that far into the body its length announced.
                self.wfile.write(body if cut_after is None else body[:cut_after])
                self.close_connection = cut_after is not None

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def presigned_by(client, monkeypatch, run_id: str, bucket: FakeBucket) -> Iterator[str]:
    """The client told, by `checkpoint_url`, that the checkpoint's bytes are at a presigned URL of `bucket`."""
    url = f"{bucket.url}/creditlab/runs/{run_id}/ckpt?X-Amz-Expires=900&X-Amz-Signature=5ec2e7"
    listed = {c["iteration"]: c for c in client.transport.request("GET", f"/v1/runs/{run_id}/checkpoints").json()}
    monkeypatch.setattr(
        client, "checkpoint_url", lambda rid, k: {**listed[k], "url": url, "expiresAt": "2030-01-01T00:00:00.000Z"}
    )
    try:
        yield url
    finally:
        bucket.close()


def test_a_presigned_url_is_fetched_without_the_api_key(client, run, monkeypatch, tmp_path):
    data = os.urandom(300_000)
    run.upload_checkpoint(0, data)
    bucket = FakeBucket(body=data)
    with presigned_by(client, monkeypatch, run.id, bucket) as url:
        got = run.download_checkpoint(0, tmp_path / "ckpt")
    assert (got.from_bucket, (tmp_path / "ckpt").read_bytes()) == (True, data)
    [request] = bucket.requests
    assert request["path"] == url[len(bucket.url):]
    assert "authorization" not in {k.lower() for k in request["headers"]}


def test_a_download_whose_digest_does_not_match_fails_and_leaves_dest_as_it_was(client, run, monkeypatch, tmp_path):
    data = os.urandom(300_000)
    info = run.upload_checkpoint(4, data)
    tampered = data[:-1] + bytes([data[-1] ^ 1])
    folder = tmp_path / "downloads"
    folder.mkdir()
    dest = folder / "ckpt"
    dest.write_bytes(b"the checkpoint before")
    with presigned_by(client, monkeypatch, run.id, FakeBucket(body=tampered)):
        with pytest.raises(creditlab.ChecksumMismatch) as wrong:
            run.download_checkpoint(4, dest)
        with pytest.raises(creditlab.ChecksumMismatch):
            run.download_checkpoint(4)
    e = wrong.value
    assert (e.run_id, e.iteration, e.expected, e.actual) == (run.id, 4, info.sha256, sha256(tampered))
    for part in (run.id, "checkpoint 4", info.sha256, sha256(tampered)):
        assert part in str(e)
    assert dest.read_bytes() == b"the checkpoint before"
    assert os.listdir(folder) == ["ckpt"]  # the temporary file is gone too
    fresh = folder / "fresh"
    with presigned_by(client, monkeypatch, run.id, FakeBucket(body=tampered)):
        with pytest.raises(creditlab.ChecksumMismatch):
            run.download_checkpoint(4, fresh)
    assert not fresh.exists()


def test_the_digest_check_names_run_iteration_and_both_digests():
    right, wrong = sha256(b"a"), sha256(b"b")
    check_sha256("run-1", 3, right, right, "downloaded")
    check_sha256("run-1", 3, right.upper(), right, "downloaded")
    with pytest.raises(creditlab.ChecksumMismatch, match=f"checkpoint 3 of run run-1: .*{wrong}.*{right}"):
        check_sha256("run-1", 3, right, wrong, "downloaded")


def test_a_redirect_from_the_bucket_is_not_followed_and_the_server_serves_the_bytes(client, run, monkeypatch, caplog):
    run.upload_checkpoint(0, b"weights")
    elsewhere = FakeBucket(body=b"weights")
    try:
        moved = FakeBucket(status=307, headers={"location": f"{elsewhere.url}/x"})
        with presigned_by(client, monkeypatch, run.id, moved):
            with caplog.at_level(logging.WARNING, logger="creditlab"):
                got = run.download_checkpoint(0)
        assert (got.data, got.from_bucket) == (b"weights", False)
        assert len(moved.requests) == 1 and elsewhere.requests == []
        assert "307" in caplog.text and "through the server" in caplog.text
        assert "X-Amz-Signature" not in caplog.text  # the signature is a credential: never logged
    finally:
        elsewhere.close()


def test_an_s3_error_from_the_bucket_is_logged_and_the_server_serves_the_bytes(client, run, monkeypatch, caplog):
    run.upload_checkpoint(0, b"weights")
    expired = b"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
    with presigned_by(client, monkeypatch, run.id, FakeBucket(status=403, body=expired)):
        with caplog.at_level(logging.WARNING, logger="creditlab"):
            got = run.download_checkpoint(0)
    assert (got.data, got.from_bucket) == (b"weights", False)
    for said in ("AccessDenied", "Request has expired", "2030-01-01", f"checkpoint 0 of run {run.id}"):
        assert said in caplog.text


def test_a_download_cut_short_is_not_taken_for_a_wrong_checkpoint_and_goes_through_the_server(client, run, monkeypatch):
    data = os.urandom(100_000)
    run.upload_checkpoint(0, data)
    bucket = FakeBucket(body=data, cut_after=40_000)
    with presigned_by(client, monkeypatch, run.id, bucket):
        got = run.download_checkpoint(0)
    assert (got.data == data, got.from_bucket, len(bucket.requests)) == (True, False, 1)


def test_a_bucket_that_cannot_be_reached_falls_back_to_the_server_and_via_server_skips_it(client, run, monkeypatch):
    run.upload_checkpoint(0, b"weights")
    gone = FakeBucket()
    gone.close()  # nothing listens at its address now
    with presigned_by(client, monkeypatch, run.id, gone):
        assert run.download_checkpoint(0).from_bucket is False
    bucket = FakeBucket(body=b"weights")
    with presigned_by(client, monkeypatch, run.id, bucket):
        got = run.download_checkpoint(0, via_server=True)
        assert (got.data, got.from_bucket, bucket.requests) == (b"weights", False, [])


def test_a_large_checkpoint_is_streamed_not_held_in_memory(client, run, tmp_path):
    size = 40 * MiB
    path = tmp_path / "large.bin"
    with open(path, "wb") as f:
        for _ in range(size // MiB):
            f.write(os.urandom(MiB))
    tracemalloc.start()
    try:
        info = run.upload_checkpoint(0, path)
        _, upload_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        got = run.download_checkpoint(0, tmp_path / "back.bin")
        _, download_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert upload_peak < 8 * MiB and download_peak < 8 * MiB, (upload_peak, download_peak)
    digest = hashlib.sha256()
    with open(tmp_path / "back.bin", "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            digest.update(chunk)
    assert info.size == got.size == size
    assert info.sha256 == got.sha256 == digest.hexdigest()


# ---- the run's stream, and input refused -------------------------------------------------------


def test_an_upload_comes_after_what_the_run_logged_before_it(client, run):
    for k in range(200):
        run.log({"loss": float(k)}, iteration=0)
    run.upload_checkpoint(0, b"weights")
    events = events_of(client, run.id, ["metrics.logged", "checkpoint.saved"])
    assert [e["type"] for e in events] == ["metrics.logged"] * 200 + ["checkpoint.saved"]


def test_a_finished_run_takes_no_checkpoint_but_gives_its_checkpoints(client, run):
    run.upload_checkpoint(0, b"weights")
    run.finish()
    with pytest.raises(creditlab.ApiError) as refused:
        run.upload_checkpoint(1, b"more")
    assert (refused.value.status, refused.value.error) == (409, "RUN_FINISHED")
    assert run.download_checkpoint(0).data == b"weights"


def test_an_offline_run_is_told_to_sync_before_uploading(server, tmp_path):
    offline = creditlab.Client(*server, mode="offline", spool_dir=str(tmp_path))
    run = offline.create_run(name="offline", env="fixtures", method="grpo")
    with pytest.raises(creditlab.CreditlabError, match="offline"):
        run.upload_checkpoint(0, b"weights")
    run.finish()
    offline.close()


def test_bad_input_is_refused_before_any_request(client, run, requests, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("text")
    text_file = open(text)
    refused = [
        lambda: run.upload_checkpoint(-1, b"weights"),
        lambda: client.upload_checkpoint(run.id, -1, b"weights"),
        lambda: run.upload_checkpoint(True, b"weights"),
        lambda: run.upload_checkpoint(0, b"weights", format="has space"),
        lambda: run.upload_checkpoint(0, b""),
        lambda: run.upload_checkpoint(0, 42),
        lambda: run.upload_checkpoint(0, np.arange(6, dtype=np.int64).reshape(2, 3)[:, 1:].data),  # not contiguous
        lambda: run.upload_checkpoint(0, text_file),  # text mode
        lambda: run.download_checkpoint(-1),
        lambda: client.download_checkpoint(run.id, 2**31),
        lambda: client.checkpoint_url(run.id, -1),
        lambda: run.download_checkpoint(0, tmp_path),  # a folder
        lambda: run.download_checkpoint(0, tmp_path / "no" / "such" / "folder.bin"),
    ]
    for call in refused:
        with pytest.raises(creditlab.InvalidInput):
            call()
    text_file.close()
    with pytest.raises(FileNotFoundError):
        run.upload_checkpoint(0, tmp_path / "missing.pt")
    assert requests.seen == []
