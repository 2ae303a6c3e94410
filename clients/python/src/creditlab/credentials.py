"""
Which server and key to use, resolved exactly as the TypeScript tools do (libs/client/src/credentials.ts):
explicit arguments, else CREDITLAB_URL / CREDITLAB_API_KEY, else the credentials file the server writes on
its first start (CREDITLAB_CREDENTIALS, else ~/.creditlab/credentials.json), whose key is used only for the
server URL saved with it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, NamedTuple, Optional
from urllib.parse import urlsplit

from .errors import InvalidInput

DEFAULT_URL = "http://127.0.0.1:4000"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Connection(NamedTuple):
    url: str
    api_key: Optional[str]


def credentials_path(env: Optional[Mapping[str, str]] = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CREDITLAB_CREDENTIALS") or Path.home() / ".creditlab" / "credentials.json")


def read_credentials(path: Path) -> Optional[dict]:
    """The saved `{url, apiKey, ...}`, or None when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        saved = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(f"{path}: not JSON ({e})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("url"), str) or not isinstance(saved.get("apiKey"), str):
        raise InvalidInput(f'{path}: expected {{"url": ..., "apiKey": ...}}')
    return saved


def resolve_connection(
    url: Optional[str] = None, api_key: Optional[str] = None, env: Optional[Mapping[str, str]] = None
) -> Connection:
    env = os.environ if env is None else env
    saved = read_credentials(credentials_path(env))
    resolved = _first(url, env.get("CREDITLAB_URL"), saved and saved["url"], DEFAULT_URL)
    key = _first(
        api_key,
        env.get("CREDITLAB_API_KEY"),
        saved["apiKey"] if saved and same_server(saved["url"], resolved) else None,
    )
    return Connection(resolved.rstrip("/"), key)


def same_server(a: str, b: str) -> bool:
    """Same scheme, host and port; the loopback names count as one host."""
    x, y = urlsplit(a), urlsplit(b)
    return x.scheme == y.scheme and _port(x) == _port(y) and _host(x.hostname) == _host(y.hostname)


def _first(*values):
    return next((v for v in values if v is not None), None)


def _port(parts) -> Optional[int]:
    port = parts.port
    return None if port == _DEFAULT_PORTS.get(parts.scheme) else port


def _host(hostname: Optional[str]) -> Optional[str]:
    return "loopback" if hostname in _LOOPBACK else hostname
