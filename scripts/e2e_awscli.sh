#!/usr/bin/env bash
# End-to-end cases for an S3 endpoint through one aws cli binary.
#
# Usage: scripts/e2e_awscli.sh AWS_BIN BUCKET
# Reads E2E_ENDPOINT, E2E_ACCESS_KEY, E2E_SECRET_KEY, E2E_REGION; creates
# BUCKET (which must not exist) and removes it at the end. Prints one line
# per case, "PASS awscli/<name>" or "FAIL awscli/<name>", with the case's
# output after a failure, and exits 1 if any case failed. cp_large moves a
# file of E2E_LARGE_MIB MiB (default 200) both ways, which the cli does as
# multipart uploads and ranged downloads (8 MiB parts, several at once).
# E2E_CA_BUNDLE, for an https endpoint, is given to every call as
# --ca-bundle; case untrusted checks that a call without it fails on the
# certificate. E2E_CASES, if set, names the cases to run.
set -euo pipefail

aws_bin=${1:?usage: e2e_awscli.sh AWS_BIN BUCKET}
bucket=${2:?usage: e2e_awscli.sh AWS_BIN BUCKET}
: "${E2E_ENDPOINT:?}" "${E2E_ACCESS_KEY:?}" "${E2E_SECRET_KEY:?}"

work=$(mktemp -d "${TMPDIR:-/tmp}/granary-e2e-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Isolate the cli from the user's configuration, profiles and metadata
# service; no retries, so a failure shows on the first try.
: >"$work/config"
: >"$work/credentials"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN \
	AWS_CA_BUNDLE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE
export AWS_CONFIG_FILE=$work/config AWS_SHARED_CREDENTIALS_FILE=$work/credentials \
	AWS_ACCESS_KEY_ID=$E2E_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$E2E_SECRET_KEY \
	AWS_DEFAULT_REGION=${E2E_REGION:-us-east-1} AWS_PAGER="" AWS_MAX_ATTEMPTS=1 \
	AWS_RETRY_MODE=standard AWS_EC2_METADATA_DISABLED=true

# aws runs the cli against the endpoint, bounded in time; aws_untrusted
# without the CA bundle. A cli killed by SIGSEGV (exit 139) runs once more:
# the cli itself crashes in libcrypto now and then during concurrent TLS
# transfers (Debian's 2.9 did once in a CI run of cp_large; aws/aws-cli
# issues 8713 and 6625), which says nothing of the server. Any other
# failure shows on the first try.
ca_bundle=(${E2E_CA_BUNDLE:+--ca-bundle "$E2E_CA_BUNDLE"})
aws() {
	local rc=0
	timeout 120 "$aws_bin" --endpoint-url "$E2E_ENDPOINT" "${ca_bundle[@]}" "$@" || rc=$?
	if [ "$rc" -eq 139 ]; then
		echo "note: $aws_bin ${*:1:2} crashed (SIGSEGV in the cli); running it once more" >&2
		rc=0
		timeout 120 "$aws_bin" --endpoint-url "$E2E_ENDPOINT" "${ca_bundle[@]}" "$@" || rc=$?
	fi
	return "$rc"
}
aws_untrusted() { timeout 120 "$aws_bin" --endpoint-url "$E2E_ENDPOINT" "$@"; }

sha() { sha256sum "$1" | cut -d' ' -f1; }

fail() {
	echo "check failed: $*" >&2
	return 1
}

case_mb() {
	aws s3 mb "s3://$bucket"
	aws s3api head-bucket --bucket "$bucket"
}

case_cp() {
	head -c $((3 << 20)) /dev/urandom >"$work/up.bin"
	printf 'small file with an awkward name\n' >"$work/small name ü.txt"
	aws s3 cp "$work/up.bin" "s3://$bucket/cp/up.bin"
	aws s3 cp "$work/small name ü.txt" "s3://$bucket/cp/dir with space/small name ü.txt"
	aws s3 cp "s3://$bucket/cp/up.bin" "$work/down.bin"
	aws s3 cp "s3://$bucket/cp/dir with space/small name ü.txt" "$work/down.txt"
	[ "$(sha "$work/up.bin")" = "$(sha "$work/down.bin")" ] || fail "cp: downloaded bytes differ"
	cmp -s "$work/small name ü.txt" "$work/down.txt" || fail "cp: awkward key differs"
}

case_cp_large() {
	local etag mib=${E2E_LARGE_MIB:-200} parts
	parts=$(((mib + 7) / 8)) # the cli's 8 MiB parts
	head -c $((mib << 20)) /dev/urandom >"$work/large.bin"
	aws s3 cp --only-show-errors "$work/large.bin" "s3://$bucket/large/large.bin"
	etag=$(aws s3api head-object --bucket "$bucket" --key large/large.bin --query ETag --output text)
	[[ "$etag" == *-$parts\" ]] || fail "cp_large: ETag $etag is not that of a $parts-part upload"
	aws s3 cp --only-show-errors "s3://$bucket/large/large.bin" "$work/large-down.bin"
	[ "$(sha "$work/large.bin")" = "$(sha "$work/large-down.bin")" ] || fail "cp_large: downloaded bytes differ"
	rm -f "$work/large.bin" "$work/large-down.bin"
	aws s3 rm --only-show-errors "s3://$bucket/large/large.bin"
}

# make_tree DIR writes 50 files in nested directories, 0 B to 300 KiB.
make_tree() {
	local d i
	for d in a a/deep b c/d/e f; do
		mkdir -p "$1/$d"
		for i in $(seq 1 10); do
			head -c $(((RANDOM * 10) % (300 << 10))) /dev/urandom >"$1/$d/file-$i.dat"
		done
	done
}

case_sync() {
	make_tree "$work/tree"
	[ "$(find "$work/tree" -type f | wc -l)" -eq 50 ] || fail "tree has $(find "$work/tree" -type f | wc -l) files"
	aws s3 sync "$work/tree" "s3://$bucket/sync" >/dev/null
	local again
	again=$(aws s3 sync "$work/tree" "s3://$bucket/sync")
	[ -z "$again" ] || fail "second sync up transferred again: $again"
	aws s3 sync "s3://$bucket/sync" "$work/back" >/dev/null
	diff -r "$work/tree" "$work/back" || fail "synced tree differs"
}

case_ls() {
	local n top all
	n=$(aws s3 ls --recursive "s3://$bucket/sync/" | wc -l)
	[ "$n" -eq 50 ] || fail "ls --recursive listed $n objects, want 50"
	top=$(aws s3 ls "s3://$bucket/")
	grep -q 'PRE sync/' <<<"$top" || fail "ls: no sync/ prefix in: $top"
	grep -q 'PRE cp/' <<<"$top" || fail "ls: no cp/ prefix in: $top"
	# Whole output first: grep -q would close the pipe at its first match,
	# and aws failing on the broken pipe fails the case under pipefail.
	all=$(aws s3 ls)
	grep -q " $bucket\$" <<<"$all" || fail "ls: bucket $bucket not listed in: $all"
}

case_head_object() {
	local got want
	got=$(aws s3api head-object --bucket "$bucket" --key cp/up.bin --query ContentLength --output text)
	[ "$got" = $((3 << 20)) ] || fail "head-object ContentLength $got"
	got=$(aws s3api head-object --bucket "$bucket" --key cp/up.bin --query ETag --output text)
	want="\"$(md5sum "$work/up.bin" | cut -d' ' -f1)\""
	[ "$got" = "$want" ] || fail "head-object ETag $got, want $want"
	if aws s3api head-object --bucket "$bucket" --key cp/missing >/dev/null 2>"$work/err"; then
		fail "head-object of a missing key succeeded"
	fi
	grep -qE '404|Not Found' "$work/err" || fail "missing key: $(cat "$work/err")"
}

case_rm() {
	aws s3 rm "s3://$bucket/cp/up.bin"
	if aws s3api head-object --bucket "$bucket" --key cp/up.bin >/dev/null 2>&1; then
		fail "object still there after rm"
	fi
	aws s3 rm --recursive "s3://$bucket/" >/dev/null
	[ -z "$(aws s3 ls --recursive "s3://$bucket/")" ] || fail "bucket not empty after rm --recursive"
	aws s3 rb "s3://$bucket"
	if aws s3api head-bucket --bucket "$bucket" 2>/dev/null; then
		fail "bucket still there after rb"
	fi
}

case_untrusted() {
	[ -n "${E2E_CA_BUNDLE:-}" ] || fail "untrusted: needs an https endpoint and E2E_CA_BUNDLE"
	if aws_untrusted s3 ls >/dev/null 2>"$work/untrusted.err"; then
		fail "untrusted: a call without the CA bundle trusted the node"
	fi
	grep -qiE 'certificate verify failed' "$work/untrusted.err" ||
		fail "untrusted: not a certificate error: $(cat "$work/untrusted.err")"
}

version=$("$aws_bin" --version 2>&1)
echo "# aws cli $aws_bin: $version against $E2E_ENDPOINT"
failed=0
for name in ${E2E_CASES:-mb cp cp_large sync ls head_object rm}; do
	log="$work/case-$name.log"
	start=$SECONDS
	# A subshell as a plain statement, not under if/||: set -e applies
	# inside it, so the first failing command ends the case.
	set +e
	(set -e; "case_$name") >"$log" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq 0 ]; then
		echo "PASS awscli/$name ($((SECONDS - start))s)"
	else
		failed=1
		echo "FAIL awscli/$name (exit $rc)"
		sed 's/^/    /' "$log" | tail -n 20
	fi
done
exit "$failed"
