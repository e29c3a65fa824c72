#!/usr/bin/env bash
# Back up a secondbrain host: the center's state and the vaults of its nodes.
#
#   backup.sh [--center DIR] [--node NAME=DIR]... [--no-verify] DEST
#
# --center DIR     the center's data dir (SECONDBRAIN_CENTER_DATA_DIR): center.db is copied
#                  with SQLite's online backup (safe while the center runs), then
#                  audit.jsonl (append-only, so the copy holds every record the database
#                  knows), then every other file but the lock. With
#                  SECONDBRAIN_CENTER_DATABASE_URL=postgresql://… in the environment the
#                  database is dumped with pg_dump instead (never pass the URL as a flag).
# --node NAME=DIR  a node's data dir: every vault with its notes, attachments, trash and
#                  .git. Left out, because the node rebuilds them: the search index
#                  (.secondbrain/index.db*) and the node's state (.node: cached keys and
#                  the last revocation snapshot, fetched again from the center). Stop the
#                  node (or snapshot the filesystem) for a copy that no write can tear.
# --no-verify      keep a backup whose copied audit log is not verified. Without it the
#                  copy is checked with `secondbrain-center audit verify` (found as
#                  $SECONDBRAIN_CENTER_CLI, on PATH, or in this checkout's .venv), and a
#                  backup of a center is refused before anything is copied when it cannot be.
# DEST             a folder; the backup goes to DEST/secondbrain-<UTC time>/ (0700) with a
#                  SHA256SUMS file, and its path is printed last.
#
# Secrets in the center's data dir (files `secondbrain up` keeps there) are copied with
# their 0600 mode; secrets kept elsewhere (SECONDBRAIN_CENTER_SECRET, the admin token,
# node credentials) are not: back those up in your secret store (docs/operator-guide.md).
set -euo pipefail
umask 077

die() { echo "backup: $*" >&2; exit 1; }

# The CLI that verifies the audit chain: named, on PATH, or this checkout's .venv.
center_cli() {
  local venv
  venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.venv/bin/secondbrain-center"
  if [ -n "${SECONDBRAIN_CENTER_CLI:-}" ]; then echo "$SECONDBRAIN_CENTER_CLI"
  elif command -v secondbrain-center; then :
  elif [ -x "$venv" ]; then echo "$venv"
  else return 1
  fi
}

center=""
nodes=()
verify=1
while [ $# -gt 0 ]; do
  case "$1" in
    --center) [ $# -ge 2 ] || die "--center needs a folder"; center="$2"; shift 2 ;;
    --node) [ $# -ge 2 ] || die "--node needs NAME=DIR"; nodes+=("$2"); shift 2 ;;
    --no-verify) verify=0; shift ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || die "name one destination folder (see --help)"
[ -n "$center" ] || [ ${#nodes[@]} -gt 0 ] || die "nothing to back up: pass --center and/or --node"
dest="$1"
cli=""
if [ -n "$center" ] && [ "$verify" = 1 ]; then
  cli="$(center_cli)" || die "cannot verify the audit log: secondbrain-center is not on PATH
  nor in this checkout's .venv; activate the environment it is installed in, set
  SECONDBRAIN_CENTER_CLI=/path/to/secondbrain-center, or pass --no-verify to keep an
  unverified backup. Nothing was copied."
fi
mkdir -p "$dest"
target="$dest/secondbrain-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir "$target" || die "$target exists already; wait a second and run again"

backup_center() {
  local from="$1" to="$target/center" url="${SECONDBRAIN_CENTER_DATABASE_URL:-}"
  [ -d "$from" ] || die "center data dir $from does not exist"
  mkdir "$to"
  case "$url" in
    postgres*)
      command -v pg_dump >/dev/null || die "pg_dump is not installed"
      pg_dump --format=custom --no-owner --no-privileges --dbname="${url/+asyncpg/}" \
        --file="$to/postgres.dump" || die "pg_dump failed"
      ;;
    *)
      [ -f "$from/center.db" ] || die "$from/center.db does not exist (wrong --center?)"
      python3 - "$from/center.db" "$to/center.db" <<'PY' || die "copying center.db failed"
import sqlite3, sys
source, copy = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
with copy:
    source.backup(copy)
copy.close(); source.close()
PY
      ;;
  esac
  # After the database: the log then holds at least every record the database counts.
  local file name
  for file in "$from"/* "$from"/.[!.]*; do
    [ -f "$file" ] || continue
    name="$(basename "$file")"
    case "$name" in center.lock|center.db|center.db-wal|center.db-shm|center.db-journal) continue ;; esac
    cp -p "$file" "$to/$name"
  done
}

backup_node() {
  local name="${1%%=*}" from="${1#*=}"
  [[ "$name" =~ ^[A-Za-z0-9_-]{1,64}$ ]] || die "--node $1: use NAME=DIR with a plain name"
  [ -d "$from" ] || die "node data dir $from does not exist"
  mkdir -p "$target/nodes"
  tar --create --file="$target/nodes/$name.tar" --directory="$from" \
    --exclude='./*/.secondbrain/index.db' --exclude='./*/.secondbrain/index.db-*' \
    --exclude='./.node' . \
    || die "archiving $from failed"
}

[ -z "$center" ] || backup_center "$center"
for node in "${nodes[@]}"; do backup_node "$node"; done

if [ -f "$target/center/audit.jsonl" ]; then
  if [ -n "$cli" ]; then
    "$cli" audit verify "$target/center/audit.jsonl" >/dev/null \
      || die "the copied audit log does not verify: $target is not a good backup"
  else
    echo "backup: the copied audit log was not verified (--no-verify)" >&2
  fi
fi
(cd "$target" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)
echo "$target"
