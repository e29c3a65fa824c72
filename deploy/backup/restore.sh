#!/usr/bin/env bash
# Restore a backup made by backup.sh onto empty folders, with the services stopped.
#
#   restore.sh [--center DIR] [--node NAME=DIR]... BACKUP
#
# --center DIR     where the center's data dir goes (made 0700, files 0600). A backup with
#                  postgres.dump is restored with pg_restore into the (empty) database
#                  named by SECONDBRAIN_CENTER_DATABASE_URL in the environment.
# --node NAME=DIR  where the vaults of node NAME go.
# BACKUP           a folder secondbrain-<time>/ made by backup.sh.
#
# Nothing is overwritten: each target folder must be missing or empty, and a backup whose
# SHA256SUMS do not match is refused before anything is written. Afterwards start the
# center (it verifies the audit chain at start) and the nodes (they rebuild their search
# index); tokens signed before the backup keep working as long as the center's signing
# secret is the same.
set -euo pipefail
umask 077

die() { echo "restore: $*" >&2; exit 1; }

center=""
nodes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --center) [ $# -ge 2 ] || die "--center needs a folder"; center="$2"; shift 2 ;;
    --node) [ $# -ge 2 ] || die "--node needs NAME=DIR"; nodes+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || die "name the backup folder (see --help)"
[ -n "$center" ] || [ ${#nodes[@]} -gt 0 ] || die "nothing to restore: pass --center and/or --node"
backup="$1"
[ -f "$backup/SHA256SUMS" ] || die "$backup has no SHA256SUMS: not a backup made by backup.sh"
(cd "$backup" && sha256sum --check --quiet --strict SHA256SUMS) \
  || die "$backup does not match its SHA256SUMS; it is damaged"

empty_target() {
  [ ! -e "$1" ] || [ -d "$1" ] || die "$1 exists and is not a folder"
  [ ! -d "$1" ] || [ -z "$(ls -A "$1")" ] || die "$1 is not empty; restore only onto an empty folder"
}

[ -z "$center" ] || { [ -d "$backup/center" ] || die "$backup holds no center"; empty_target "$center"; }
for node in "${nodes[@]}"; do
  name="${node%%=*}"
  [[ "$name" =~ ^[A-Za-z0-9_-]{1,64}$ ]] || die "--node $node: use NAME=DIR with a plain name"
  [ -f "$backup/nodes/$name.tar" ] || die "$backup holds no node $name"
  empty_target "${node#*=}"
done

if [ -n "$center" ]; then
  mkdir -p "$center"
  chmod 0700 "$center"
  if [ -f "$backup/center/postgres.dump" ]; then
    url="${SECONDBRAIN_CENTER_DATABASE_URL:-}"
    case "$url" in postgres*) ;; *) die "set SECONDBRAIN_CENTER_DATABASE_URL to the empty PostgreSQL database" ;; esac
    pg_restore --no-owner --no-privileges --exit-on-error --dbname="${url/+asyncpg/}" \
      "$backup/center/postgres.dump" || die "pg_restore failed (is the database empty?)"
  fi
  for file in "$backup/center"/* "$backup/center"/.[!.]*; do
    [ -f "$file" ] || continue
    [ "$(basename "$file")" = postgres.dump ] && continue
    cp -p "$file" "$center/"
    chmod 0600 "$center/$(basename "$file")"
  done
  if [ -f "$center/audit.jsonl" ] && command -v secondbrain-center >/dev/null; then
    secondbrain-center audit verify "$center/audit.jsonl" >/dev/null \
      || die "the restored audit log does not verify"
  fi
fi

for node in "${nodes[@]}"; do
  name="${node%%=*}" to="${node#*=}"
  mkdir -p "$to"
  tar --extract --file="$backup/nodes/$name.tar" --directory="$to" --same-permissions
done
echo "restored from $backup; start the center, then the nodes"
