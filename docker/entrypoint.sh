#!/bin/sh
# Container entrypoint: the compiled server. A container has no embedded database: it needs DATABASE_URL.
set -eu
DIST="${CREDITLAB_DIST:-/app/dist}"
if [ -z "${DATABASE_URL:-}" ]; then
  echo "creditlab: DATABASE_URL is not set; in a container the server needs an external PostgreSQL (see docker/compose.yml)" >&2
  exit 2
fi
exec node "$DIST/apps/server/src/main.js" "$@"
