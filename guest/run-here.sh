#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# run-here.sh: the foliobatch bench workloads, run natively on this machine,
# every switch off and on in one boot.  The machine must run a kernel with
# the foliobatch series (/sys/kernel/mm/foliobatch).  'lab bench --bundle
# DIR' writes this script with lib.sh, the static workload programs
# (bench/) and the plan (bench-plan.sh); 'lab report OUT', on the lab's
# host, makes the bench report of the directory this script writes.
#
#   run-here.sh [-o OUT] [-x XFS_DIR]
#
#   -o OUT      where bench.log (the BENCH lines), host.txt and a copy of
#               bundle.json go
#               (default: here-<date> next to this script)
#   -x XFS_DIR  an XFS mount point for the file-reclaim workloads
#               (default /mnt/xfs); they are skipped without one
#
# The dirty-reclaim workloads swap: they are skipped when no swap is on.
# This script does not touch the machine's swap (the lab's guests swap to a
# RAM disk).  Every knob the plan writes (the foliobatch switches, the THP
# sizes, MGLRU) is read first and written back when the script ends, also
# on Ctrl-C.  It runs as root; workloads run one at a time.
#
# LAB_HERE_ROOT prefixes every /sys and /proc path that this script itself
# reads or writes (the lab's host unit tests run it against a fake tree).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
LAB_HOME=${LAB_HOME:-$HERE}
ROOT=${LAB_HERE_ROOT:-}
OUT=
XFS=/mnt/xfs

die() {
	echo "run-here: $*" >&2
	exit 1
}

usage="usage: run-here.sh [-o OUT] [-x XFS_DIR]"
while getopts o:x: opt; do
	case $opt in
	o) OUT=$OPTARG ;;
	x) XFS=$OPTARG ;;
	*) die "$usage" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "$usage (an argument without an option: $1)"
[ -n "$OUT" ] || OUT=$HERE/here-$(date +%Y%m%d-%H%M%S)
# /proc/mounts names the mount point by its real path, no trailing slash
XFS=$(cd "$XFS" 2> /dev/null && pwd -P || echo "$XFS")
case $XFS in
?*/) XFS=${XFS%/} ;;
esac

FB=$ROOT/sys/kernel/mm/foliobatch
THP=$ROOT/sys/kernel/mm/transparent_hugepage
[ -n "$ROOT" ] || [ "$(id -u)" = 0 ] || die "run it as root"
[ -d "$FB" ] || die "this kernel ($(uname -r)) has no $FB: boot a kernel" \
	"with the foliobatch series to compare its switches off and on"
[ -r "$HERE/bench-plan.sh" ] || die "no bench-plan.sh next to $0:" \
	"make the bundle with 'lab bench --bundle DIR'"
want=$(cat "$HERE/arch" 2>/dev/null)
case $(uname -m) in
x86_64) have=x86_64 ;;
aarch64 | arm64) have=arm64 ;;
*) have=$(uname -m) ;;
esac
[ -z "$want" ] || [ "$want" = "$have" ] ||
	die "the programs of this bundle are for $want, this machine is $have"

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/bench.log
SAVED=$OUT/.saved-knobs
FAILED=0

# save FILE...: remember each writable file's value ("[x]" of a choice file)
save() {
	for f in "$@"; do
		[ -w "$f" ] || continue
		v=$(cat "$f") || continue
		case $v in
		*\[*\]*) v=${v#*\[}; v=${v%%\]*} ;;
		esac
		printf '%s %s\n' "$f" "$v" >> "$SAVED"
	done
}

# write_back: write every saved value back; the file stays until all went
# back, so that a run that could not restore leaves them for the next one
write_back() {
	n=0
	bad=0
	while read -r f v; do
		if echo "$v" > "$f" 2> /dev/null; then
			n=$((n + 1))
		else
			echo "run-here: could not restore $f to '$v'" >&2
			bad=$((bad + 1))
		fi
	done < "$SAVED"
	[ "$bad" -gt 0 ] || rm -f "$SAVED"
	echo "run-here: restored $n settings"
	return "$bad"
}

restore() {
	rc=$?
	trap '' INT TERM HUP	# a second Ctrl-C must not cut the restore short
	trap - EXIT
	write_back || rc=1
	[ "$FAILED" -eq 0 ] || { echo "run-here: $FAILED run(s) exited non-zero" >&2; rc=1; }
	exit "$rc"
}

if [ -s "$SAVED" ]; then
	echo "run-here: a run into $OUT did not finish; writing back what it saved"
	write_back || die "could not write back the knobs saved in $SAVED"
fi
: > "$LOG"
: > "$SAVED"
save "$FB"/* "$THP/enabled" "$THP"/hugepages-*/enabled \
	"$THP"/hugepages-*/shmem_enabled "$ROOT/sys/kernel/mm/lru_gen/enabled"
trap restore EXIT
trap 'echo "run-here: interrupted" >&2; exit 130' INT
trap 'echo "run-here: terminated" >&2; exit 143' TERM
trap 'echo "run-here: hung up" >&2; exit 129' HUP

{
	echo "kernel $(uname -r)"
	echo "arch $have"
	echo "machine $(uname -n)"
	echo "cpus $(grep -c '^processor' "$ROOT/proc/cpuinfo" 2> /dev/null)"
	grep -m1 -E '^(model name|CPU part)' "$ROOT/proc/cpuinfo" 2> /dev/null
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "xfs $XFS"
} > "$OUT/host.txt"
[ ! -r "$HERE/bundle.json" ] || cp "$HERE/bundle.json" "$OUT/"

# The helpers of the lab's guest/lib.sh that the plan uses, with this
# script's root, without the RAM disk, and writing bench.log.  (Not lib.sh
# itself: it is written for the guests' busybox sh.)
# lab_sysfs FILE VALUE: a knob the next run needs; when it cannot be set,
# that run is skipped (a missing file is fine when the value turns a
# feature off that the kernel does not have)
lab_sysfs() {
	[ -e "$ROOT$1" ] && echo "$2" 2> /dev/null > "$ROOT$1" && return 0
	case $2 in
	n | 0 | never) [ -e "$ROOT$1" ] || return 0 ;;
	esac
	LAB_SKIP="could not write '$2' to $ROOT$1"
}

lab_drop_caches() {
	sync
	echo 3 > "$ROOT/proc/sys/vm/drop_caches"
}

lab_thp_only() {
	lab_sysfs /sys/kernel/mm/transparent_hugepage/enabled never
	for f in "$THP"/hugepages-*/enabled; do
		[ -e "$f" ] && lab_sysfs "${f#"$ROOT"}" never
	done
	[ "$1" = none ] ||
		lab_sysfs "/sys/kernel/mm/transparent_hugepage/hugepages-$1/enabled" always
}

lab_switch() {
	lab_sysfs "/sys/kernel/mm/foliobatch/$1" "$2"
}

LAB_SKIP=
lab_ramswap() {
	[ "$(awk 'NR > 1' "$ROOT/proc/swaps" 2> /dev/null | wc -l)" -gt 0 ] ||
		LAB_SKIP="no swap is on"
}

lab_bench() {
	[ -n "$LAB_SKIP" ] || case $1 in
	file-reclaim*)
		awk -v d="$XFS" '$2 == d && $3 == "xfs" { found = 1 }
			END { exit !found }' "$ROOT/proc/mounts" ||
			LAB_SKIP="$XFS is not an XFS mount point (-x XFS_DIR)" ;;
	dirty-reclaim-fixed*)
		;;
	bigheap | dirty-reclaim*)
		[ -x /usr/bin/stress-ng ] || LAB_SKIP="no /usr/bin/stress-ng" ;;
	esac
	if [ -n "$LAB_SKIP" ]; then
		echo "# here: $1 $2 rep $3 skipped: $LAB_SKIP" | tee -a "$LOG"
		LAB_SKIP=
		return 0
	fi
	echo "BENCH-START $1 $2 $3" >> "$LOG"
	out=$(LAB_XFS=$XFS "$LAB_HOME/bench/benchrun" "$@")
	printf '%s\n' "$out" | tee -a "$LOG"
	case $out in
	*'BENCH {'*'"exit":0,'*) ;;
	*) FAILED=$((FAILED + 1)) ;;
	esac
}

echo "run-here: $(uname -r) on $have; results in $OUT"
. "$HERE/bench-plan.sh"
echo "run-here: done; copy $OUT back and run 'lab report DIR' on the lab's host"
