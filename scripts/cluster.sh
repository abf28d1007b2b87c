#!/usr/bin/env bash
# cluster.sh: the docker-compose topology as plain processes on loopback:
# a MinIO origin and three Granary nodes that know each other (--peers),
# sharing S3 credentials and a cluster secret. Runs in the foreground;
# Ctrl-C stops everything. State lives under $CLUSTER_DIR.
#
#   scripts/cluster.sh [path/to/granary]      (make cluster builds it first)
set -euo pipefail
GRANARY=${1:-bin/granary}
MINIO=${MINIO_BIN:-$(go env GOPATH)/bin/minio}
DIR=${CLUSTER_DIR:-$PWD/cluster-data}
BASE=${CLUSTER_PORT:-9001}          # nodes on BASE, BASE+1, BASE+2
ORIGIN_PORT=${ORIGIN_PORT:-9100}
export GRANARY_ACCESS_KEY=${GRANARY_ACCESS_KEY:-granary}
export GRANARY_SECRET_KEY=${GRANARY_SECRET_KEY:-granary-secret-key}
export GRANARY_CLUSTER_SECRET=${GRANARY_CLUSTER_SECRET:-granary-local-cluster-secret}
export MINIO_ROOT_USER=${MINIO_ROOT_USER:-minioadmin} MINIO_ROOT_PASSWORD=${MINIO_ROOT_PASSWORD:-minioadmin}
export GRANARY_ORIGIN_ACCESS_KEY=$MINIO_ROOT_USER GRANARY_ORIGIN_SECRET_KEY=$MINIO_ROOT_PASSWORD

[ -x "$MINIO" ] || { echo "cluster: no MinIO server at $MINIO (make deps installs it)" >&2; exit 1; }
[ -x "$GRANARY" ] || { echo "cluster: no granary binary at $GRANARY (make build)" >&2; exit 1; }
mkdir -p "$DIR"
pids=()
# stop runs once, on any exit: Ctrl-C and SIGTERM only exit (130, 143) so
# that the EXIT trap does the work. Every child gets SIGTERM; one still
# running after 10 s gets SIGKILL, so no stray process outlives the script.
stop() {
	local pid
	trap - EXIT INT TERM
	kill -TERM "${pids[@]}" 2>/dev/null || true
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_ready URL LOG: polls URL until it answers 2xx, for at most 20 s.
wait_ready() {
	for _ in $(seq 200); do
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "cluster: $1 not ready after 20 s; last lines of $2:" >&2
	tail -n 20 "$2" >&2
	exit 1
}

"$MINIO" server "$DIR/origin" --address "127.0.0.1:$ORIGIN_PORT" --console-address "127.0.0.1:$((ORIGIN_PORT + 1))" \
	>"$DIR/minio.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$ORIGIN_PORT/minio/health/ready" "$DIR/minio.log"
peers=""
for i in 1 2 3; do
	peers+="${peers:+,}n$i=127.0.0.1:$((BASE + i - 1))"
done
for i in 1 2 3; do
	"$GRANARY" serve --node-id "n$i" --peers "$peers" --listen "127.0.0.1:$((BASE + i - 1))" \
		--data-dir "$DIR/n$i" --origin "s3://127.0.0.1:$ORIGIN_PORT?secure=false" \
		--ram 512MiB --disk 4GiB >"$DIR/n$i.log" 2>&1 &
	pids+=($!)
done
for i in 1 2 3; do
	wait_ready "http://127.0.0.1:$((BASE + i - 1))/healthz" "$DIR/n$i.log"
done
cat <<MSG
Granary cluster up: S3 at http://127.0.0.1:$BASE, :$((BASE + 1)), :$((BASE + 2)) (any node serves any request)
  AWS_ACCESS_KEY_ID=$GRANARY_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GRANARY_SECRET_KEY
  origin: MinIO at http://127.0.0.1:$ORIGIN_PORT ($MINIO_ROOT_USER / $MINIO_ROOT_PASSWORD)
  where data lives: $GRANARY status --endpoint http://127.0.0.1:$BASE [s3://bucket/prefix]
  logs: $DIR/*.log   (Ctrl-C stops the cluster)
MSG
wait -n "${pids[@]}" || true
echo "cluster: a process of the cluster exited; stopping (logs in $DIR)" >&2
exit 1
