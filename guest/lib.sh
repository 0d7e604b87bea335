# SPDX-License-Identifier: GPL-2.0-only
# foliobatch lab: shell helpers for plans (sourced by /lab/plan.sh).
#
# Output is KTAP: the plan prints "KTAP version 1" and "1..N"; each
# lab_run prints the program's own output indented by four spaces (its
# subtests) and then one result line for the program.
set -o pipefail

LAB_N=0

# lab_plan N: print the KTAP header for N programs, and the memory before
# the first (lab_memstate).
lab_plan() {
	echo "KTAP version 1"
	echo "1..$1"
	lab_memstate "<start>"
}

# lab_indent: copy stdin to stdout line by line, indented by four spaces.
lab_indent() {
	while IFS= read -r line; do
		echo "    $line"
	done
}

# The knobs a test program may change and must put back: THP's (each size,
# khugepaged's), MGLRU's, NUMA balancing and the series' switches.
# LAB_SYSROOT prefixes the paths (and /tmp's) in host tests.
lab_knob_files() {
	thp=$LAB_SYSROOT/sys/kernel/mm/transparent_hugepage
	for f in "$thp/enabled" "$thp/defrag" "$thp/shmem_enabled" \
		 "$thp"/hugepages-*/enabled "$thp"/hugepages-*/shmem_enabled \
		 "$thp/khugepaged/defrag" "$thp"/khugepaged/max_ptes_* \
		 "$thp/khugepaged/pages_to_scan" "$thp"/khugepaged/*_millisecs \
		 "$LAB_SYSROOT/sys/kernel/mm/lru_gen/enabled" \
		 "$LAB_SYSROOT/proc/sys/kernel/numa_balancing" \
		 "$LAB_SYSROOT"/sys/kernel/mm/foliobatch/*; do
		[ -f "$f" ] && echo "$f"
	done
}

# lab_knob_value FILE: what FILE reads, as it would be written back: the
# chosen word of a choice list ("always [madvise] never" -> madvise).
lab_knob_value() {
	sed 's/.*\[\(.*\)\].*/\1/' "$1"
}

# lab_knobs_save: note every knob's value in /tmp/lab-knobs.
lab_knobs_save() {
	for f in $(lab_knob_files); do
		echo "$f $(lab_knob_value "$f")"
	done > "$LAB_SYSROOT/tmp/lab-knobs"
}

# lab_knobs_restore NAME: put back each knob that program NAME left changed,
# and say so.  The kselftest harness of 6.12 skips a fixture's teardown
# when an ASSERT fails in the test itself (the fork()'s result, changed
# after setjmp(), is read back as it was before), so a failed test leaves
# its settings to the programs after it; a passed one should not.
lab_knobs_restore() {
	while read -r f was; do
		now=$(lab_knob_value "$f")
		[ "$now" = "$was" ] && continue
		echo "# lab: $1 left $f at '$now', was '$was': put back"
		lab_sysfs "$f" "$was"
	done < "$LAB_SYSROOT/tmp/lab-knobs"
}

# lab_kprobes_clear NAME: disable and remove every kprobe event that program
# NAME left behind (lab_kprobe_add() of guest/lib/lab.c never removes its
# own).  A kprobe stays armed until it is removed: a probe on a function that
# runs per PTE (or on every instruction of one, as read_batch's contpte_reads
# sets) traps on each call in every program after it: on arm64, reclaim_batch
# took 845 s of guest time after read_batch where it takes 3 s alone, and its
# reclaim ran under other timing.  A failure to remove them is a set-up
# failure of the plan.
lab_kprobes_clear() {
	tr=$LAB_SYSROOT/sys/kernel/tracing
	[ -f "$tr/kprobe_events" ] || return 0
	[ -n "$(cat "$tr/kprobe_events")" ] || return 0
	for g in $(sed -n 's|^[^:]*:\([^/]*\)/.*|\1|p' "$tr/kprobe_events" | sort -u); do
		[ -f "$tr/events/$g/enable" ] && echo 0 > "$tr/events/$g/enable"
	done
	if ! : 2>/dev/null > "$tr/kprobe_events" || [ -n "$(cat "$tr/kprobe_events")" ]; then
		echo "# lab: could not remove the kprobe events $1 left"
	fi
}

# lab_memstate NAME: drop the page cache, turn every swap device off and on
# again, then print the memory that the programs of a boot share, as one
# line '# lab: mem NAME free=KB avail=KB anonhuge=KB pt=PAGES held=KB
# swap=KB buddy=N0,...,N10' (MemFree, MemAvailable, AnonHugePages,
# nr_page_table_pages, the swap in use before and after the swapoff, and
# the free blocks of each order summed over the zones of /proc/buddyinfo).
# lab_plan prints one before the plan's first program (NAME "<start>"),
# lab_run one after each program; what a program left behind is the
# difference from the line before it (lab/guest/memstate.py).  The cache is
# dropped so that a page cache that comes and goes is not taken for a
# leak, and every program starts with none of it.  swapoff frees the
# entries that only the swap cache still holds (they go lazily otherwise)
# and reads back those a process holds; an entry whose count leaked is
# never freed, and 6.12's try_to_unuse() then retries until a signal: a
# swapoff that fails or times out is a "could not" line, which fails the
# boot.
lab_memstate() {
	sync
	dc=$LAB_SYSROOT/proc/sys/vm/drop_caches
	[ -e "$dc" ] && lab_sysfs "$dc" 3
	swaps=$LAB_SYSROOT/proc/swaps
	held=$(awk 'NR > 1 { n += $4 } END { print n + 0 }' "$swaps" 2> /dev/null)
	# only in a lab guest (/init exports LAB_ARCH), never on a host that
	# sources this file
	[ -n "$LAB_ARCH" ] &&
	for dev in $(awk 'NR > 1 { print $1 }' "$swaps" 2> /dev/null); do
		timeout 120 swapoff "$dev" && swapon "$dev" ||
			echo "# lab: could not swapoff and swapon $dev after $1 ($held kB in use)"
	done
	m=$(awk '$1 == "MemFree:" { f = $2 } $1 == "MemAvailable:" { a = $2 }
		$1 == "AnonHugePages:" { h = $2 }
		END { printf "free=%d avail=%d anonhuge=%d", f, a, h }' \
		"$LAB_SYSROOT/proc/meminfo")
	pt=$(awk '$1 == "nr_page_table_pages" { print $2 }' "$LAB_SYSROOT/proc/vmstat")
	sw=$(awk 'NR > 1 { n += $4 } END { print n + 0 }' "$swaps" 2> /dev/null)
	bd=$(awk '{ for (i = 5; i <= NF; i++) n[i - 5] += $i; if (NF - 5 > k) k = NF - 5 }
		END { for (i = 0; i <= k; i++) printf "%s%d", (i ? "," : ""), n[i] }' \
		"$LAB_SYSROOT/proc/buddyinfo")
	echo "# lab: mem $1 $m pt=${pt:-0} held=${held:-0} swap=${sw:-0} buddy=$bd"
}

# lab_run NAME TIMEOUT CMD...: run CMD with a timeout in seconds, report it.
# Exit 0 is ok, 4 (KSFT_SKIP) is ok # SKIP, anything else is not ok.  The
# knobs of lab_knob_files are as they were before CMD afterwards.
lab_run() {
	name=$1
	limit=$2
	shift 2
	LAB_N=$((LAB_N + 1))
	echo "# lab: start $name: $*"
	lab_knobs_save
	t0=$(cut -d' ' -f1 /proc/uptime)
	timeout "$limit" "$@" 2>&1 | lab_indent
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	lab_knobs_restore "$name"
	lab_kprobes_clear "$name"
	lab_memstate "$name"
	echo "# lab: $name took $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
	case $rc in
	0) echo "ok $LAB_N $name" ;;
	4) echo "ok $LAB_N $name # SKIP exit 4" ;;
	124|143) echo "not ok $LAB_N $name # TIMEOUT after ${limit}s" ;;
	*) echo "not ok $LAB_N $name # exit $rc" ;;
	esac
}

# lab_run_cases NAME TIMEOUT PROG [WORD]: run each case that "PROG -l" lists
# (only those whose names contain WORD, if given) on its own, as
# "PROG -f CASE" (uffd-unit-tests), so that a case in which the
# program exits (its err() does) does not take the cases after it along.
# Each "Testing CASE on MEM... done|failed [...]|skipped [...]" line of the
# run's own case becomes a subtest; so does a case line with no outcome (the
# program died in it, its ERROR line is kept above the result), and a run
# that failed without a failed case line.  -f matches substrings, so a run
# also does the cases whose names contain CASE: their lines are dropped,
# each is reported by its own run.
lab_run_cases() {
	name=$1
	limit=$2
	prog=$3
	word=$4
	LAB_N=$((LAB_N + 1))
	echo "# lab: start $name: $prog, one run per case${word:+ with '$word' in its name}"
	lab_knobs_save
	t0=$(cut -d' ' -f1 /proc/uptime)
	cases=$("$prog" -l)
	rc=$?
	[ -z "$word" ] || cases=$(echo "$cases" | grep -F -e "$word")
	sub=0
	bad=0
	[ $rc -eq 0 ] && [ -n "$cases" ] || bad=1
	for c in $cases; do
		timeout "$limit" "$prog" -f "$c" > /tmp/lab-case.out 2>&1
		crc=$?
		out=$(awk -v c="$c" -v n="$sub" -v rc="$crc" '
		function result(ok, what, note) {
			n++
			if (note != "")
				print "# " note
			print (ok ? "ok " : "not ok ") n " " what
			if (!ok)
				failed = 1
		}
		index($0, "Testing " c " on ") == 1 {
			rest = substr($0, length("Testing " c " on ") + 1)
			at = index(rest, "... ")
			if (!at) {
				result(0, c " on " rest, "no outcome: " $0)
				next
			}
			mem = substr(rest, 1, at - 1)
			out = substr(rest, at + 4)
			if (out == "done")
				result(1, c " on " mem, "")
			else if (out ~ /^skipped/)
				print "ok " ++n " " c " on " mem " # SKIP " out
			else
				result(0, c " on " mem, $0)
			next
		}
		/^Testing / { next }
		{ print "# " $0 }
		END {
			if (rc != 0 && !failed)
				result(0, c " (exit " rc ")", "")
			print "LAB-CASES " n
		}' /tmp/lab-case.out)
		echo "$out" | grep -v '^LAB-CASES ' | lab_indent
		sub=$(echo "$out" | sed -n 's/^LAB-CASES //p')
		echo "$out" | grep -q '^not ok ' && bad=1
	done
	t1=$(cut -d' ' -f1 /proc/uptime)
	lab_knobs_restore "$name"
	lab_kprobes_clear "$name"
	lab_memstate "$name"
	echo "# lab: $name took $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
	if [ $bad -eq 0 ]; then
		echo "ok $LAB_N $name"
	elif [ $rc -ne 0 ] || [ -z "$cases" ]; then
		echo "not ok $LAB_N $name # '$prog -l' exit $rc, no cases"
	else
		echo "not ok $LAB_N $name # a case failed"
	fi
}

# lab_no_aslr CMD [ARG...]: CMD (a lab_run or lab_run_cases line) with
# address space randomisation off, and back as it was afterwards.  For the
# upstream programs that map at a fixed hint, 0x40000000 (khugepaged's
# areas, uffd-unit-tests' shmem areas), and fail when the hint is taken:
# arm64's brk randomisation (up to 1 GB above a static binary) takes it
# now and then.  LAB_ASLR_KNOB stands in for the knob in host tests.
lab_no_aslr() {
	aslr_knob=${LAB_ASLR_KNOB:-/proc/sys/kernel/randomize_va_space}
	aslr_was=$(cat "$aslr_knob")
	lab_sysfs "$aslr_knob" 0
	"$@"
	lab_sysfs "$aslr_knob" "$aslr_was"
}

# lab_sysfs FILE VALUE: write a sysfs/proc knob, or say why not.
lab_sysfs() {
	echo "$2" > "$1" || echo "# lab: could not write '$2' to $1"
}

# lab_hugepages SIZE_KB COUNT: reserve COUNT hugetlb pages of SIZE_KB where
# the kernel has that size; a reservation that falls short prints a
# "could not" line, which fails a test boot.
lab_hugepages() {
	f=/sys/kernel/mm/hugepages/hugepages-$1kB/nr_hugepages
	[ -e "$f" ] || return 0
	lab_sysfs "$f" "$2"
	[ "$(cat "$f")" = "$2" ] ||
		echo "# lab: could not reserve $2 huge pages of $1 kB: $(cat "$f") reserved"
}

# lab_thp_only SIZE: anonymous THP of one size only (e.g. 64kB, 2048kB), or
# "none" for 4 kB pages only.  Per-size "always" works whatever the
# top-level setting is.
lab_thp_only() {
	thp=/sys/kernel/mm/transparent_hugepage
	lab_sysfs $thp/enabled never
	for f in $thp/hugepages-*/enabled; do
		lab_sysfs "$f" never
	done
	[ "$1" = none ] || lab_sysfs "$thp/hugepages-$1/enabled" always
}

# lab_switch NAME VALUE: set a foliobatch switch (patched kernels only).
lab_switch() {
	lab_sysfs "/sys/kernel/mm/foliobatch/$1" "$2"
}

# lab_kprobe_clone FUNCTION: the one clone gcc made in FUNCTION's place
# (FUNCTION.isra.N, FUNCTION.constprop.N, in any order), as lab.c's
# lab_kprobe_add() finds it; prints nothing when there is none, or several
# (a probe on one would miss the calls of the others).
lab_kprobe_clone() {
	awk -v f="$1" '($2 == "t" || $2 == "T") && index($3, f ".") == 1 &&
		substr($3, length(f) + 1) ~ /^([.](isra|constprop)[.][0-9]+)+$/ {
			n++; s = $3
		}
		END { if (n == 1) print s }' "$LAB_SYSROOT/proc/kallsyms"
}

# lab_kprobe NAME FUNCTION: count calls of a kernel function as the kprobe
# event lab/NAME; benchrun reports the hits from kprobe_profile.  Tracing
# stays off, so a hit costs the probe and not a ring-buffer write.  Where
# the kernel has no FUNCTION but one clone of it, the event probes the
# clone (lab_kprobe_clone).
lab_kprobe() {
	local t=/sys/kernel/tracing c
	[ -e $t/kprobe_events ] || mount -t tracefs tracefs $t ||
		{ echo "# lab: could not set a kprobe on $2"; return 1; }
	[ -d $t/events/lab/$1 ] && return 0
	echo 0 > $t/tracing_on
	if ! echo "p:lab/$1 $2" >> $t/kprobe_events 2> /dev/null; then
		c=$(lab_kprobe_clone "$2")
		[ -n "$c" ] && echo "p:lab/$1 $c" >> $t/kprobe_events
	fi
	[ -d $t/events/lab/$1 ] && echo 1 > $t/events/lab/$1/enable ||
		echo "# lab: could not set a kprobe on $2"
}

# lab_kprobes_arm 0|1: disarm or arm every lab kprobe event; a disarmed
# kprobe costs nothing, so time is measured with them disarmed.  Without a
# lab event (each lab_kprobe said why) there is nothing to arm.
lab_kprobes_arm() {
	local e=/sys/kernel/tracing/events/lab/enable
	[ -e $e ] || return 0
	echo "$1" > $e || echo "# lab: could not arm the lab kprobes ($1)"
}

# lab_hist EVENT [KPROBE]: trace EVENT (group/name) in the trace instance
# "lab" during the probe runs that lab_hist_start and lab_hist_dump bracket;
# with KPROBE ("function arg=fetch..."), define EVENT as that kprobe first.
# The event stays disabled outside those runs, so it costs nothing there.
lab_hist() {
	t=/sys/kernel/tracing
	[ -e $t/kprobe_events ] || mount -t tracefs tracefs $t ||
		{ echo "# lab: could not set a kprobe on $1"; return 1; }
	i=$t/instances/lab
	[ -d $i ] || mkdir $i || { echo "# lab: could not set a kprobe on $1"; return 1; }
	echo 0 > $i/tracing_on
	echo 8192 > $i/buffer_size_kb
	if [ -n "$2" ] && [ ! -d $t/events/$1 ]; then
		echo "p:$1 $2" >> $t/kprobe_events ||
			{ echo "# lab: could not set a kprobe on ${2%% *}"; return 1; }
	fi
	[ -d $i/events/$1 ] || echo "# lab: could not set a kprobe on $1"
	echo "$1" >> /tmp/lab-hist-events
}

# lab_hist_start: empty the "lab" trace instance and enable its events.
lab_hist_start() {
	i=/sys/kernel/tracing/instances/lab
	echo > $i/trace
	for e in $(cat /tmp/lab-hist-events); do
		echo 1 > $i/events/$e/enable
	done
	echo 1 > $i/tracing_on
}

# lab_hist_dump WORKLOAD MODE REP: stop the "lab" trace instance and print
# the histogram of every numeric field of its events, as
# 'BENCH-HIST {"workload":...,"hist":{"event.field":{"value":count}},"lost":N}';
# lost counts the events the ring buffer overwrote.
lab_hist_dump() {
	i=/sys/kernel/tracing/instances/lab
	echo 0 > $i/tracing_on
	for e in $(cat /tmp/lab-hist-events); do
		echo 0 > $i/events/$e/enable
	done
	lost=$(cat $i/per_cpu/cpu*/stats | awk '/^overrun:/ { n += $2 } END { print n + 0 }')
	awk -v w="$1" -v m="$2" -v r="$3" -v lost="$lost" '
	/^#/ { next }
	{
		ev = ""
		for (i = 1; i < NF; i++)
			if ($i ~ /^[0-9]+\.[0-9]+:$/) {
				ev = $(i + 1)
				sub(/:$/, "", ev)
				break
			}
		if (ev == "")
			next
		for (j = i + 2; j <= NF; j++) {
			if (split($j, kv, "=") != 2 || kv[2] !~ /^[0-9]+$/)
				continue
			k = ev "." kv[1]
			if (!(k in seen)) {
				seen[k] = 1
				keys[++nk] = k
			}
			if (!((k, kv[2]) in h))
				vals[k] = vals[k] " " kv[2]
			h[k, kv[2]]++
		}
	}
	END {
		printf "BENCH-HIST {\"workload\":\"%s\",\"mode\":\"%s\",\"rep\":%d,\"lost\":%d,\"hist\":{", w, m, r, lost
		for (n = 1; n <= nk; n++) {
			k = keys[n]
			printf "%s\"%s\":{", (n > 1 ? "," : ""), k
			c = split(vals[k], vs, " ")
			for (v = 1; v <= c; v++)
				printf "%s\"%s\":%d", (v > 1 ? "," : ""), vs[v], h[k, vs[v]]
			printf "}"
		}
		print "}}"
	}' $i/trace
}

# lab_ramswap: swap on the RAM disk /dev/ram0 (brd; its size comes from the
# brd.rd_size= boot parameter) instead of the virtio disk, so that swap-out
# is guest CPU work only and instruction-time repeats; idempotent.
lab_ramswap() {
	grep -q '^/dev/ram0 ' /proc/swaps && return 0
	for dev in $(awk 'NR > 1 { print $1 }' /proc/swaps); do
		swapoff "$dev" || echo "# lab: could not swapoff $dev"
	done
	# write the whole disk once, so that brd allocates its pages now and
	# not during the first measured run
	dd if=/dev/zero of=/dev/ram0 bs=1M 2> /dev/null
	mkswap /dev/ram0 > /dev/null && swapon /dev/ram0 ||
		echo "# lab: could not swap on /dev/ram0"
}

# lab_zramswap [MB]: swap on zram (/dev/zram0, lzo-rle, MB of uncompressed
# capacity, default 1024) instead of any other swap device: compressed swap
# in RAM, which swap-in and -out cost guest CPU only; idempotent.
lab_zramswap() {
	grep -q '^/dev/zram0 ' /proc/swaps && return 0
	for dev in $(awk 'NR > 1 { print $1 }' /proc/swaps); do
		swapoff "$dev" || echo "# lab: could not swapoff $dev"
	done
	if [ "$(cat /sys/block/zram0/disksize 2> /dev/null)" = 0 ]; then
		echo "${1:-1024}M" > /sys/block/zram0/disksize ||
			echo "# lab: could not size /dev/zram0"
	fi
	mkswap /dev/zram0 > /dev/null && swapon /dev/zram0 ||
		echo "# lab: could not swap on /dev/zram0"
}

# lab_bench WORKLOAD MODE REP CMD...: one measured run, reported by benchrun.
lab_bench() {
	echo "BENCH-START $1 $2 $3"
	/lab/bench/benchrun "$@"
}
