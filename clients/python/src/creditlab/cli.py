"""
The `creditlab` command. `creditlab sync DIR` uploads spooled runs (a spool root, or one run's folder), in
order and exactly once; run it again after an interruption and it carries on where it stopped.

Exit status: 0 done; 1 the server could not be reached or refused; 2 bad usage or input (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List, Optional

from . import __version__
from .credentials import resolve_connection
from .errors import ApiError, CreditlabError, ServerUnavailable
from .spool import Spool, default_root, run_folders
from .sync import describe, upload
from .transport import Transport


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and status 2, not argparse's usage dump
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="creditlab", description="Creditlab's Python client: upload spooled runs.")
    parser.add_argument("--version", action="version", version=f"creditlab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sync = commands.add_parser(
        "sync",
        help="upload spooled runs (written offline, or while the server was unreachable)",
        description="Uploads every run in DIR (a spool root such as ~/.creditlab/spool, or one run's folder): "
        "creates the run if needed, then its events in order; events already stored are acknowledged, not stored twice.",
    )
    sync.add_argument("dir", nargs="?", default=None, help=f"spool folder (default: {default_root()})")
    sync.add_argument("--url", help="server URL (default: CREDITLAB_URL, else the URL the run was spooled for)")
    sync.add_argument("--api-key", help="API key (default: CREDITLAB_API_KEY, else the credentials file)")
    sync.add_argument("--max-request-bytes", type=int, default=32 << 20, help="largest request sent (bytes)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return _sync(args)
    except _Usage as e:
        print(f"creditlab: {e}", file=sys.stderr)
        return 2
    except (ServerUnavailable, ApiError) as e:
        print(f"creditlab: {e}", file=sys.stderr)
        return 1
    except (CreditlabError, OSError, ValueError) as e:
        print(f"creditlab: {e}", file=sys.stderr)
        return 2


def _sync(args) -> int:
    root = Path(args.dir) if args.dir else default_root()
    try:
        folders = run_folders(root)
    except FileNotFoundError:
        raise _Usage(f"{root}: no such folder") from None
    if not folders:
        raise _Usage(f"{root}: no spooled runs here (a run's folder holds run.json and events.ndjson)")
    for folder in folders:
        spool = Spool(folder)
        meta = spool.meta()
        saved_url = meta.get("url")
        conn = resolve_connection(args.url or os.environ.get("CREDITLAB_URL") or saved_url, args.api_key)
        result = upload(spool, Transport(conn.url, conn.api_key), args.max_request_bytes)
        print(describe(result, str(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
