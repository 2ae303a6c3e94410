#!/bin/sh
# The usual setting on rented GPU machines and in containers: root, with the checkout in a
# directory only root may enter (as /root is, mode 700), which PostgreSQL's own user cannot reach.
# Clones a commit of this repository (default HEAD) into a fresh such directory, installs it, runs
# `npm start` there (its own data directory, ports and credentials file) until it serves and
# answers /readyz, stops it through npm, then runs `npm test`. Exit status 0 when all of it works.
#
#   sudo scripts/check-root-checkout.sh [commit] [--no-test]
set -eu

if [ "$(id -u)" != 0 ]; then
  echo "check-root-checkout: run it as root (the point is a checkout user postgres cannot enter)" >&2
  exit 2
fi
REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
COMMIT=$(git -C "$REPO" rev-parse "${1:-HEAD}")
RUN_TESTS=yes
[ "${2:-}" = --no-test ] && RUN_TESTS=no

WORK=$(mktemp -d /root/creditlab-root-check.XXXXXX)
chmod 700 "$WORK"
# The data directory must be one PostgreSQL's user can reach: a 755 one in the temp dir.
PGROOT=$(mktemp -d "${TMPDIR:-/tmp}/creditlab-root-check-pg.XXXXXX")
chmod 755 "$PGROOT"
NPM_PID=
cleanup() {
  [ -n "$NPM_PID" ] && kill "$NPM_PID" 2>/dev/null || true
  rm -rf "$WORK" "$PGROOT"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "clone $COMMIT into $WORK (mode $(stat -c %a "$WORK"))"
git clone -q --no-hardlinks "$REPO" "$WORK/creditlab"
cd "$WORK/creditlab"
git checkout -q --detach "$COMMIT"

step "npm ci"
npm ci --no-audit --no-fund

step "npm start"
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
LOG="$WORK/npm-start.log"
PORT=0 NODE_ENV=production CREDITLAB_PG_DIR="$PGROOT/pg" CREDITLAB_PG_PORT=$(free_port) \
  CREDITLAB_CREDENTIALS="$WORK/credentials.json" npm start >"$LOG" 2>&1 &
NPM_PID=$!
URL=
i=0
while [ $i -lt 300 ] && kill -0 "$NPM_PID" 2>/dev/null; do
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$LOG")
  [ -n "$URL" ] && break
  sleep 1
  i=$((i + 1))
done
if [ -z "$URL" ]; then
  cat "$LOG"
  echo "check-root-checkout: npm start did not serve" >&2
  exit 1
fi
grep -E 'listening on|could not' "$LOG"
READY=$(node -e "fetch('$URL/readyz').then(r=>r.text()).then(t=>console.log(t))")
echo "readyz: $READY"
kill -TERM "$NPM_PID"
wait "$NPM_PID" || true
NPM_PID=
case "$READY" in *'"status":"ready"'*) ;; *)
  echo "check-root-checkout: the server was not ready" >&2
  exit 1
  ;;
esac

if [ "$RUN_TESTS" = yes ]; then
  step "npm test"
  npm test
fi
step "root checkout in a mode-700 directory: OK"
