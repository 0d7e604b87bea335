#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# foliobatch lab: the load of 'lab harden' (lab/commands/harden.py reads its output).
#
#   /lab/harden.sh SECONDS ROUND_SECONDS
#
# Runs whole rounds of ROUND_SECONDS until SECONDS of load are done.  In each
# round, inside a memory cgroup limited to CG_MAX with swap on, at the same
# time:
#   - stress-ng's memory stressors (vm, mmap, mremap, madvise, fork, swap,
#     userfaultfd) with --verify, their files on XFS;
#   - trinity, restricted to the vm system call group (mmap, mremap,
#     madvise, mprotect, munmap, ...), as root (--dangerous);
#   - /lab/harden/stamp, the data-integrity check;
#   - /lab/harden/shmlock, which dirties a SysV shared memory segment
#     while SHM_LOCK and SHM_UNLOCK flip under reclaim;
#   - a flipper that writes 0 or 1 to a random foliobatch switch every
#     0.1-0.9 s.
# Rounds alternate classic LRU and MGLRU.  Anonymous mTHP of 16 kB, 64 kB
# and 2 MB and 64 kB shmem mTHP are on, so the batched paths see large
# folios.  The last round ends with every switch back on.
#
# Output, one fact per line, for the host:
#   HARDEN-ROUND <n> lru_gen=<y|n> seconds=<s>
#   HARDEN-STRESS <stressor> <bogo ops>
#   HARDEN-TRINITY <system calls>
#   HARDEN-STAMP <passes> <page checks> <mismatches>
#   HARDEN-SHMLOCK <passes> <lock/unlock pairs> <mismatches>
#   HARDEN-FLIPS <writes> <changes>
#   HARDEN-FAIL <what>
#   HARDEN-DONE seconds=<load seconds> rounds=<n>
. /lab/lib.sh

total=${1:?seconds}
round=${2:?round seconds}
CG=/sys/fs/cgroup/harden
CG_MAX=${HARDEN_CG_MAX:-160M}
SW=/sys/kernel/mm/foliobatch
THP=/sys/kernel/mm/transparent_hugepage
OUT=/tmp/harden
mkdir -p $OUT /mnt/xfs/harden /mnt/xfs/harden/victims

fail() {
	echo "HARDEN-FAIL $*"
}

now() {
	cut -d' ' -f1 /proc/uptime
}

# the flipper: runs until $OUT/stop exists, then prints its counts
flipper() {
	writes=0
	changes=0
	set -- $SW/*
	n=$#
	while [ ! -e $OUT/stop ]; do
		i=$((RANDOM % n + 1))
		eval f=\${$i}
		v=$((RANDOM % 2))
		old=$(cat "$f")
		if echo $v > "$f" && [ "$(cat "$f")" = $v ]; then
			writes=$((writes + 1))
			[ "$old" = $v ] || changes=$((changes + 1))
		else
			fail "switch ${f##*/} did not take $v"
		fi
		sleep 0.$((RANDOM % 9 + 1))
	done
	echo "HARDEN-FLIPS $writes $changes"
}

# in_cg CMD...: run CMD inside the pressure cgroup
in_cg() {
	sh -c 'echo $$ > '$CG'/cgroup.procs && exec "$@"' in_cg "$@"
}

setup() {
	[ -d $SW ] || { fail "no $SW: not a patched kernel"; exit 1; }
	grep -q . /proc/swaps 2>/dev/null || fail "no swap device"
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control
	mkdir -p $CG
	echo $CG_MAX > $CG/memory.max || { fail "cannot limit $CG"; exit 1; }
	lab_sysfs $THP/enabled madvise
	for s in 16kB 64kB 2048kB; do
		lab_sysfs $THP/hugepages-$s/enabled always
	done
	lab_sysfs $THP/hugepages-64kB/shmem_enabled always
	lab_sysfs $THP/defrag defer
}

# checker NAME PID TAG WHAT: wait for a data checker of this round, show
# its mismatches and turn its summary line "NAME: P passes, C WHAT, M
# mismatches" into "HARDEN-TAG P C M"
checker() {
	wait $2
	rc=$?
	grep MISMATCH $OUT/$1.$n | lab_indent
	sed -n "s/^$1: \([0-9]*\) passes, \([0-9]*\) $4, \([0-9]*\) mismatches\$/HARDEN-$3 \1 \2 \3/p" \
		$OUT/$1.$n
	[ $rc -eq 0 ] || fail "$1 exit $rc (round $n)"
}

one_round() {
	n=$1
	secs=$2
	lru=n
	[ $((n % 2)) -eq 0 ] && lru=y
	lab_sysfs /sys/kernel/mm/lru_gen/enabled $lru
	echo "HARDEN-ROUND $n lru_gen=$lru seconds=$secs"
	rm -f $OUT/stop
	flipper > $OUT/flips.$n 2>&1 &
	flip_pid=$!

	in_cg stress-ng --vm 1 --vm-bytes 64M --mmap 1 --mmap-bytes 32M \
		--mmap-file --mremap 1 --mremap-bytes 16M --madvise 1 --fork 1 \
		--swap 1 --userfaultfd 1 --userfaultfd-bytes 16M --verify \
		--temp-path /mnt/xfs/harden --metrics-brief --timeout "${secs}s" \
		> $OUT/stress.$n 2>&1 &
	stress_pid=$!
	trin_arch=
	[ "$LAB_ARCH" = x86_64 ] && trin_arch="-a64"
	in_cg timeout -s INT -k 60 "$secs" trinity --dangerous -q -l off -g vm -C 2 \
		$trin_arch --disable-fds=sockets,perf,drm,pseudo \
		-V /mnt/xfs/harden/victims > $OUT/trinity.$n 2>&1 &
	trin_pid=$!
	in_cg sh -c 'echo -1000 > /proc/self/oom_score_adj; exec "$@"' stamp \
		/lab/harden/stamp "$secs" 32 /mnt/xfs/harden/stamp \
		> $OUT/stamp.$n 2>&1 &
	stamp_pid=$!
	in_cg sh -c 'echo -1000 > /proc/self/oom_score_adj; exec "$@"' shmlock \
		/lab/harden/shmlock "$secs" 64 > $OUT/shmlock.$n 2>&1 &
	shm_pid=$!

	wait $stress_pid
	rc=$?
	grep -E "fail:|error:|FAIL" $OUT/stress.$n | lab_indent
	awk '$2 == "metrc:" && $5 ~ /^[0-9]+$/ { print "HARDEN-STRESS", $4, $5 }' \
		$OUT/stress.$n
	[ $rc -eq 0 ] || fail "stress-ng exit $rc (round $n)"

	wait $trin_pid
	rc=$?
	ran=$(sed -n 's/.*Ran \([0-9]*\) syscalls.*/\1/p' $OUT/trinity.$n | tail -n 1)
	if [ -n "$ran" ]; then
		echo "HARDEN-TRINITY $ran"
	else
		tail -n 5 $OUT/trinity.$n | lab_indent
		fail "trinity did not report its count (exit $rc, round $n)"
	fi
	grep -i -E "tainted|Enabled [0-9]+ .*syscalls" $OUT/trinity.$n | lab_indent

	checker stamp $stamp_pid STAMP "page checks"
	checker shmlock $shm_pid SHMLOCK "lock\/unlock pairs"

	touch $OUT/stop
	wait $flip_pid
	cat $OUT/flips.$n
	echo "# oom_kill $(sed -n 's/^oom_kill //p' $CG/memory.events)," \
		"pswpout $(sed -n 's/^pswpout //p' /proc/vmstat)"
}

setup
t0=$(now)
done_s=0
n=0
# Every round is a whole one: a round cut to the few seconds left after a
# slow one (a KASAN kernel under TCG) would signal trinity while it is
# still starting its children, and a trinity that misses the signal then
# runs until the boot's timeout.
while [ "$done_s" -lt "$total" ]; do
	secs=$round
	n=$((n + 1))
	one_round $n $secs
	done_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%d", b - a }')
done
for f in $SW/*; do
	echo 1 > "$f" || fail "cannot turn ${f##*/} back on"
done
echo "HARDEN-DONE seconds=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') rounds=$n"
