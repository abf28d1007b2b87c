#!/usr/bin/env bash
# End-to-end test of a granary binary through real clients: starts MinIO as
# the origin and `granary serve` in front of it (loopback, temporary
# directories), then runs the boto3 cases (e2e_boto3.py, e2e_compat.py)
# with every Python that has boto3 and the aws cli cases with every aws
# cli; then a second node serving
# HTTPS (a CA and a certificate made here with openssl) in front of the
# same origin, through which a few cases run with the CA given to the
# clients (boto3 verify=, aws --ca-bundle) and one without it, which must
# fail on the certificate. It ends with one line "e2e: N passed, N failed"
# (exit 1 if anything failed).
#
# Usage: scripts/e2e.sh BIN
#   MINIO_BIN       MinIO server binary (default $(go env GOPATH)/bin/minio)
#   E2E_DIRECT=1    point the clients at MinIO itself (checks the cases)
#   E2E_KEEP=1      keep the temporary directory (logs) after the run
set -euo pipefail

bin=${1:?usage: scripts/e2e.sh path/to/granary}
here=$(cd "$(dirname "$0")" && pwd)
minio_bin=${MINIO_BIN:-$(go env GOPATH)/bin/minio}
work=$(mktemp -d "${TMPDIR:-/tmp}/granary-e2e.XXXXXX")
pids=()

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		# Bounded: a process that ignores TERM for 10 s is killed.
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [ "${E2E_KEEP:-}" = 1 ]; then
		echo "e2e: kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

die() {
	echo "e2e: $*" >&2
	echo "e2e: 0 passed, 1 failed"
	exit 1
}

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL PID LOG [CA]: polls URL until it answers 200, for at most
# 30 s, failing early if process PID exits; CA verifies an https URL.
wait_http() {
	local url=$1 pid=$2 log=$3 ca=(${4:+--cacert "$4"})
	for _ in $(seq 1 300); do
		if curl -fsS -o /dev/null --max-time 2 "${ca[@]}" "$url" 2>/dev/null; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || { tail -n 30 "$log" >&2; die "process for $url exited"; }
		sleep 0.1
	done
	tail -n 30 "$log" >&2
	die "$url not ready after 30 s"
}

# make_certs DIR: a CA (DIR/ca.pem) and, signed by it, a certificate for
# 127.0.0.1 and localhost (DIR/node.pem, key DIR/node.key), with openssl.
make_certs() {
	local d=$1
	mkdir -p "$d"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=granary e2e CA" \
		-addext keyUsage=critical,keyCertSign,cRLSign -keyout "$d/ca.key" -out "$d/ca.pem" 2>"$d/openssl.log" &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=granary e2e node" \
			-keyout "$d/node.key" -out "$d/node.csr" 2>>"$d/openssl.log" &&
		printf '%s\n' subjectAltName=IP:127.0.0.1,DNS:localhost extendedKeyUsage=serverAuth \
			keyUsage=critical,digitalSignature basicConstraints=critical,CA:FALSE \
			subjectKeyIdentifier=hash authorityKeyIdentifier=keyid,issuer >"$d/node.ext" &&
		openssl x509 -req -in "$d/node.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
			-extfile "$d/node.ext" -out "$d/node.pem" 2>>"$d/openssl.log" ||
		{ cat "$d/openssl.log" >&2; die "openssl could not make the test certificates"; }
}

# make_buckets ENDPOINT CA BUCKET...: creates the buckets through ENDPOINT
# with boto3 (CA: the bundle an https ENDPOINT is verified with, or "").
make_buckets() {
	E2E_MB_ENDPOINT=$1 E2E_MB_CA=$2 /usr/bin/python3 - "${@:3}" <<'EOF' || die "could not create buckets ${*:3}"
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["E2E_MB_ENDPOINT"], region_name=os.environ["E2E_REGION"],
                  aws_access_key_id=os.environ["E2E_ACCESS_KEY"], aws_secret_access_key=os.environ["E2E_SECRET_KEY"],
                  verify=os.environ["E2E_MB_CA"] or None)
for b in sys.argv[1:]:
    s3.create_bucket(Bucket=b)
EOF
}

[ -x "$bin" ] || [ "${E2E_DIRECT:-}" = 1 ] || die "no executable granary binary at $bin"
[ -x "$minio_bin" ] || die "no MinIO binary at $minio_bin (run make deps)"

# The origin.
minio_port=$(free_port)
minio_user=e2e-minio-admin minio_pass=e2e-minio-secret-0123
MINIO_ROOT_USER=$minio_user MINIO_ROOT_PASSWORD=$minio_pass MINIO_BROWSER=off MINIO_UPDATE=off \
	"$minio_bin" server --quiet --address "127.0.0.1:$minio_port" --console-address 127.0.0.1:0 \
	"$work/minio" >"$work/minio.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$minio_port/minio/health/ready" "${pids[-1]}" "$work/minio.log"

# The node under test, with fixed credentials from the environment.
export E2E_REGION=us-east-1
if [ "${E2E_DIRECT:-}" = 1 ]; then
	export E2E_ENDPOINT=http://127.0.0.1:$minio_port E2E_ACCESS_KEY=$minio_user E2E_SECRET_KEY=$minio_pass
else
	granary_port=$(free_port)
	# Bucket e2e-wb is write-back: the same client runs go through the
	# write-back log, then a flush must bring it all to MinIO.
	printf 'buckets:\n  e2e-wb: {write-mode: write-back}\n' >"$work/granary.yaml"
	export E2E_ENDPOINT=http://127.0.0.1:$granary_port E2E_ACCESS_KEY=e2e-access-key E2E_SECRET_KEY=e2e-secret-key-0123456789
	# A scoped key for e2e_policy.py, added as an operator would.
	export E2E_SCOPED_ACCESS_KEY=e2e-scoped E2E_SCOPED_SECRET_KEY=e2e-scoped-secret-0123
	printf '%s\n' "$E2E_SCOPED_SECRET_KEY" >"$work/scoped-secret"
	"$bin" user add "$E2E_SCOPED_ACCESS_KEY" --data-dir "$work/granary" --secret-file "$work/scoped-secret" \
		--allow read,list:e2e-policy/pub/ --allow write,delete:e2e-policy/in/ >"$work/user-add.out" 2>&1 ||
		{ cat "$work/user-add.out" >&2; die "granary user add failed"; }
	GRANARY_ACCESS_KEY=$E2E_ACCESS_KEY GRANARY_SECRET_KEY=$E2E_SECRET_KEY \
		GRANARY_ORIGIN_ACCESS_KEY=$minio_user GRANARY_ORIGIN_SECRET_KEY=$minio_pass \
		"$bin" serve --listen "127.0.0.1:$granary_port" --data-dir "$work/granary" --config "$work/granary.yaml" \
		--origin "s3://127.0.0.1:$minio_port?secure=false&region=us-east-1" \
		--ram 256MiB --disk 1GiB --log-level info >"$work/granary.log" 2>&1 &
	pids+=($!)
	granary_pid=$!
	wait_http "$E2E_ENDPOINT/healthz" "$granary_pid" "$work/granary.log"
fi
echo "e2e: testing $E2E_ENDPOINT (work dir $work)"

# Keep every client away from the user's AWS configuration.
: >"$work/aws-config"
: >"$work/aws-credentials"
export AWS_CONFIG_FILE=$work/aws-config AWS_SHARED_CREDENTIALS_FILE=$work/aws-credentials
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3

passed=0 failed=0
# run LABEL CMD...: runs one case script, shows its output and adds up its
# PASS/FAIL lines; a script that fails without a FAIL line counts as one.
run() {
	local label=$1 out="$work/run-$1.out" rc=0
	shift
	"$@" >"$out" 2>"$work/run-$label.err" || rc=$?
	cat "$out"
	local p f
	p=$(grep -c '^PASS ' "$out" || true)
	f=$(grep -c '^FAIL ' "$out" || true)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $label: exited $rc"
		tail -n 20 "$work/run-$label.err" | sed 's/^/    /'
		f=1
	elif [ "$f" -gt 0 ]; then
		tail -n 40 "$work/run-$label.err" | sed 's/^/    /'
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# Every distinct interpreter/cli: Debian's and the first on PATH.
distinct() {
	local seen="" p r
	for p in "$@"; do
		r=$(readlink -f "$p" 2>/dev/null) || continue
		[ -x "$r" ] || continue
		case " $seen " in *" $r "*) continue ;; esac
		seen="$seen $r"
		echo "$p"
	done
}

pythons=$(distinct /usr/bin/python3 "$(/usr/bin/env python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)")
clis=$(distinct /usr/bin/aws "$(command -v aws 2>/dev/null || true)")

# A shared bucket for the boto3 runs (each run keeps to its own prefix),
# and one for e2e_compat.py's.
make_buckets "$E2E_ENDPOINT" "" e2e e2e-wb e2e-compat

i=0
for py in $pythons; do
	i=$((i + 1))
	if ! "$py" -c 'import boto3' 2>/dev/null; then
		echo "FAIL boto3 with $py: boto3 is not installed"
		failed=$((failed + 1))
		continue
	fi
	E2E_BUCKET=e2e E2E_PREFIX="py$i" run "boto3-$i" timeout 600 "$py" "$here/e2e_boto3.py"
	E2E_BUCKET=e2e-wb E2E_PREFIX="wb$i" E2E_WRITE_BACK=1 run "boto3-writeback-$i" timeout 600 "$py" "$here/e2e_boto3.py"
	# The owner-routing helper for boto3, against stand-in members.
	run "route-$i" timeout 120 "$py" "$here/../clients/python/test_granary_route.py"
	if [ "${E2E_DIRECT:-}" != 1 ]; then
		# Both assert Granary's own answers (grants; where MinIO differs from AWS).
		E2E_BUCKET=e2e-compat E2E_PREFIX="compat$i" run "compat-$i" timeout 600 "$py" "$here/e2e_compat.py"
		E2E_BUCKET=e2e-policy run "policy-$i" timeout 300 "$py" "$here/e2e_policy.py"
	fi
done
if [ "${E2E_DIRECT:-}" != 1 ]; then
	run "flush" "$here/e2e_flush.sh" "$bin" "$minio_port" "$minio_user" "$minio_pass"
fi
i=0
for cli in $clis; do
	i=$((i + 1))
	run "awscli-$i" timeout 900 "$here/e2e_awscli.sh" "$cli" "e2e-cli-$i"
done

# tls_cases: the same clients through a second node serving HTTPS, with
# its CA given (boto3 verify=, aws --ca-bundle), and without it.
tls_cases() {
	local ca=$work/tls/ca.pem port endpoint py cli i
	make_certs "$work/tls"
	port=$(free_port)
	endpoint=https://127.0.0.1:$port
	GRANARY_ACCESS_KEY=$E2E_ACCESS_KEY GRANARY_SECRET_KEY=$E2E_SECRET_KEY \
		GRANARY_ORIGIN_ACCESS_KEY=$minio_user GRANARY_ORIGIN_SECRET_KEY=$minio_pass \
		"$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/granary-tls" \
		--tls-cert "$work/tls/node.pem" --tls-key "$work/tls/node.key" \
		--origin "s3://127.0.0.1:$minio_port?secure=false&region=us-east-1" \
		--ram 256MiB --disk 1GiB --log-level info >"$work/granary-tls.log" 2>&1 &
	pids+=($!)
	tls_pid=$!
	wait_http "$endpoint/healthz" "$tls_pid" "$work/granary-tls.log" "$ca"
	echo "e2e: testing $endpoint over HTTPS"
	make_buckets "$endpoint" "$ca" e2e-tls
	i=0
	for py in $pythons; do
		i=$((i + 1))
		E2E_ENDPOINT=$endpoint E2E_CA_BUNDLE=$ca E2E_BUCKET=e2e-tls E2E_PREFIX="tls$i" \
			E2E_CASES="put_get_sizes list_delimiter transfer_multipart delete_object untrusted_ca" \
			run "boto3-tls-$i" timeout 600 "$py" "$here/e2e_boto3.py"
	done
	i=0
	for cli in $clis; do
		i=$((i + 1))
		E2E_ENDPOINT=$endpoint E2E_CA_BUNDLE=$ca E2E_LARGE_MIB=20 E2E_CASES="mb cp cp_large sync ls rm untrusted" \
			run "awscli-tls-$i" timeout 900 "$here/e2e_awscli.sh" "$cli" "e2e-cli-tls-$i"
	done
}
if [ "${E2E_DIRECT:-}" != 1 ]; then
	tls_cases
fi

# alive PID LOG NAME: counts a failure if process PID is gone.
alive() {
	if ! kill -0 "$1" 2>/dev/null; then
		echo "FAIL $3 exited during the run"
		tail -n 30 "$2"
		failed=$((failed + 1))
	fi
}
if [ "${E2E_DIRECT:-}" != 1 ]; then
	alive "$granary_pid" "$work/granary.log" granary
	alive "$tls_pid" "$work/granary-tls.log" "granary (HTTPS)"
fi
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
