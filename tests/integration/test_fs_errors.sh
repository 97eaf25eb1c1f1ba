#!/usr/bin/env bash
# --fs refused on the command line, before /dev/kvm is opened (so no KVM is needed): one line,
# "minivmm: error: ...", status 2, for bad options, no back end at the socket path, a back end
# that offers no VIRTIO_F_VERSION_1, and one with fewer queues than queues= asks for (fake back
# ends: vhost_user_backend.py, which only shakes hands).
source "$(dirname "$0")/lib.sh"

BACKEND=$ROOT/tests/integration/vhost_user_backend.py
command -v python3 >/dev/null || skip "no python3 for the fake back end"
K=(--kernel "$FW/probe.elf")

expect_usage_error fs-no-socket 'socket=PATH is required' "${K[@]}" --fs tag=x
expect_usage_error fs-no-tag 'tag=TAG is required' "${K[@]}" --fs socket=/nonexistent
expect_usage_error fs-long-tag 'longer than 36 bytes' "${K[@]}" \
	--fs "socket=/nonexistent,tag=$(printf 't%.0s' {1..37})"
expect_usage_error fs-queues-0 "invalid queues '0'" "${K[@]}" --fs socket=/nonexistent,tag=x,queues=0
expect_usage_error fs-queues-16 "invalid queues '16'" "${K[@]}" \
	--fs socket=/nonexistent,tag=x,queues=16
expect_usage_error fs-missing-socket 'cannot connect to vhost-user socket /nonexistent' "${K[@]}" \
	--fs socket=/nonexistent,tag=x

# backend NAME FEATURES QUEUES: a fake back end on $TEST_TMP/NAME.sock, listening once this
# returns (stopped at exit).
backend() {
	python3 "$BACKEND" "$TEST_TMP/$1.sock" "$2" "$3" >"$TEST_TMP/$1-backend.out" 2>&1 &
	on_exit "kill $! 2>/dev/null"
	wait_line "$1-backend" out '^up$' 100
}

backend no-version-1 $((1 << 30)) 1
expect_usage_error fs-no-version-1 "the back end at '.*' does not offer VIRTIO_F_VERSION_1" \
	"${K[@]}" --fs "socket=$TEST_TMP/no-version-1.sock,tag=x"

backend two-queues $(((1 << 32) | (1 << 30))) 2
expect_usage_error fs-too-few-queues 'has 2 queues, queues=2 needs 3' "${K[@]}" \
	--fs "socket=$TEST_TMP/two-queues.sock,tag=x,queues=2"
exit 0
