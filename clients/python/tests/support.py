"""Real processes and sockets for the tests: a second server process to kill, and a proxy to cut."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[3]


def send_json(handler, status: int, body: bytes) -> None:
    """Answers an http.server request with `status` and the JSON `body`."""
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """
    The server as `npm start` runs it, on the test database (CREDITLAB_PYTEST_DATABASE_URL) and a fixed port,
    so that it can be killed (SIGKILL, mid-request) and started again at the same URL.
    """

    def __init__(self, api_key: str, credentials: Path):
        database = os.environ.get("CREDITLAB_PYTEST_DATABASE_URL")
        if not database:
            raise RuntimeError("CREDITLAB_PYTEST_DATABASE_URL is not set (test/python-client.e2e.spec.ts sets it)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "NODE_ENV": "production",
            "NO_COLOR": "1",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "LOG_LEVEL": "warn",
            "DATABASE_URL": database,
            "CREDITLAB_ADMIN_KEY": api_key,
            "CREDITLAB_CREDENTIALS": str(credentials),
            "CREDITLAB_WORKER": "false",
        }
        self.proc: Optional[subprocess.Popen] = None
        self.output: List[str] = []

    def start(self, timeout: float = 240.0) -> None:
        node = os.environ.get("CREDITLAB_PYTEST_NODE", "node")
        self.proc = subprocess.Popen(
            [node, "-r", "@swc-node/register", "apps/server/src/main.ts"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        buffered = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buffered += chunk
                if re.search(rb"listening on http://\S+", buffered):
                    self.output.append(buffered.decode(errors="replace"))
                    threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
                    return
        self.kill()
        raise RuntimeError(f"server did not start:\n{buffered.decode(errors='replace')}")

    def _drain(self, proc: subprocess.Popen) -> None:
        for chunk in iter(lambda: os.read(proc.stdout.fileno(), 65536), b""):
            self.output.append(chunk.decode(errors="replace"))

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, an open request's transaction dies with the connection."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


class Proxy:
    """A TCP proxy to the server that can be cut: while down, connections are refused as by a dead server."""

    def __init__(self, target_url: str):
        host, port = target_url.split("//")[1].split(":")
        self.target = (host, int(port))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: Optional[socket.socket] = None
        self._open: List[socket.socket] = []
        # down() and the accepting thread take turns: a connection accepted just before down() but
        # not yet in _open would otherwise outlive the cut (a client can write megabytes into the
        # sockets' buffers meanwhile, on a loaded machine).
        self._lock = threading.Lock()
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            if listener:
                try:
                    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
                except OSError:
                    pass
                listener.close()
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut while this one was being connected
                    client.close()
                    upstream.close()
                    return
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
