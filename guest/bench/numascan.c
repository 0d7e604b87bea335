// SPDX-License-Identifier: GPL-2.0
/*
 * numascan - the cost of one NUMA-balancing scan pass over SIZE of
 * anonymous memory: the MM_CP_PROT_NUMA pass of change_protection() that
 * makes every PTE PROT_NONE so that the next access takes a NUMA hinting
 * fault (mprotect_batch batches it for large folios).
 *
 *   numascan SIZE_KB PASSES
 *
 * The memory is MAP_PRIVATE, 2 MB aligned, every page written; its folio
 * size is the one the caller's mTHP knobs give (64 KB mTHP, or 4 KB pages
 * for the control).  A second thread, blocked for good, keeps the scan from
 * skipping the pages of a single-threaded task that sit on its node (the
 * guest's only node).  The scan is tuned to run often: scan_delay_ms 0,
 * scan_period_min_ms and scan_period_max_ms 100 (debugfs; put back on exit).
 *
 * The scan runs as task work of the task whose tick asked for it, on its
 * way back to user space: the task that spins here.  So each pass is a
 * stall of the spinning loop, which reads CLOCK_MONOTONIC (instruction-time
 * under -icount) over and over and keeps the longest gap between two reads
 * in each window between two reads of numa_pte_updates.  The window in which
 * numa_pte_updates grows by the region's PTEs or more holds the pass, and
 * its longest gap is the pass's time (with the tick that started it; the
 * other ticks of the window are microseconds).  After each pass, balancing
 * is turned off and every page is read: the hinting fault of a folio's
 * first page maps the folio again (6.12 rebuilds a large folio's PTEs at
 * once), so that the next pass changes all PTEs again.
 *
 * METRIC time_ns is the sum of the PASSES passes' times; the program fails
 * when a pass changed fewer PTEs than the region has or more than half as
 * many again (the process's other pages are a few dozen), or no pass came
 * within 60 s.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lab.h"

#define PSZ		4096UL
#define SZ_2M		(2UL << 20)
#define SYSCTL		"/proc/sys/kernel/numa_balancing"
#define DEBUGFS		"/sys/kernel/debug/sched/numa_balancing/"
#define SPIN_READS	(1UL << 14)

static const char *const knobs[] = {
	DEBUGFS "scan_delay_ms", DEBUGFS "scan_period_min_ms",
	DEBUGFS "scan_period_max_ms", SYSCTL,
};
#define NR_KNOBS	(sizeof(knobs) / sizeof(knobs[0]))
static struct lab_knob saved[NR_KNOBS];

static void *blocked(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

static int knobs_restore(void)
{
	int ret = 0;
	size_t i;

	for (i = NR_KNOBS; i-- > 0;)
		if (saved[i].valid && lab_knob_restore(&saved[i])) {
			fprintf(stderr, "numascan: cannot restore %s\n", knobs[i]);
			ret = -1;
		}
	return ret;
}

static int knobs_set(void)
{
	static const char *const value[] = { "0", "100", "100", "0" };
	size_t i;

	for (i = 0; i < NR_KNOBS; i++) {
		saved[i].valid = false;
		if (lab_knob_save(&saved[i], knobs[i]) ||
		    lab_write_file(knobs[i], value[i])) {
			fprintf(stderr, "numascan: %s: cannot save or write it (a kernel without CONFIG_NUMA_BALANCING or debugfs?)\n",
				knobs[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * Spins until numa_pte_updates grows by @want or more between two of its
 * reads, for at most 60 s.  Returns the longest gap between two clock reads
 * in that window (ns), with the growth in *@updates; -1 on timeout.
 */
static long long wait_pass(long long want, long long *updates)
{
	long long t0 = lab_now_ns(), prev, now, gap, longest, u0, u1;
	unsigned long i;

	u0 = lab_vmstat("numa_pte_updates");
	if (u0 < 0)
		return -1;
	while (lab_now_ns() - t0 < 60 * 1000000000LL) {
		longest = 0;
		prev = lab_now_ns();
		for (i = 0; i < SPIN_READS; i++) {
			now = lab_now_ns();
			gap = now - prev;
			if (gap > longest)
				longest = gap;
			prev = now;
		}
		u1 = lab_vmstat("numa_pte_updates");
		if (u1 < 0)
			return -1;
		if (u1 - u0 >= want) {
			*updates = u1 - u0;
			return longest;
		}
		u0 = u1;
	}
	return -1;
}

int main(int argc, char **argv)
{
	long long pass_ns, total = 0, longest = 0, updates, all = 0;
	size_t size, i, n;
	long passes, p;
	pthread_t helper;
	char *map, *mem;
	int ret = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: numascan SIZE_KB PASSES\n");
		return 1;
	}
	size = (size_t)atol(argv[1]) << 10;
	passes = atol(argv[2]);
	if (!size || size % SZ_2M || passes < 1) {
		fprintf(stderr, "numascan: SIZE_KB must be a multiple of 2048, PASSES at least 1\n");
		return 1;
	}
	n = size / PSZ;

	map = mmap(NULL, size + SZ_2M, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	mem = (char *)(((unsigned long)map + SZ_2M - 1) & ~(SZ_2M - 1));
	if (madvise(mem, size, MADV_HUGEPAGE)) {
		perror("madvise");
		return 1;
	}
	for (i = 0; i < size; i += PSZ)
		memset(mem + i, (int)(i / PSZ), PSZ);
	if (pthread_create(&helper, NULL, blocked, NULL)) {
		fprintf(stderr, "numascan: pthread_create failed\n");
		return 1;
	}
	if (knobs_set())
		goto out;

	for (p = 0; p < passes; p++) {
		if (lab_write_file(SYSCTL, "1"))
			goto out;
		pass_ns = wait_pass(n, &updates);
		if (lab_write_file(SYSCTL, "0"))
			goto out;
		if (pass_ns < 0) {
			fprintf(stderr, "numascan: no scan pass changed the %zu PTEs within 60 s (pass %ld)\n",
				n, p);
			goto out;
		}
		if (updates > (long long)(n + n / 2)) {
			fprintf(stderr, "numascan: pass %ld counted %lld PTE changes for %zu PTEs\n",
				p, updates, n);
			goto out;
		}
		total += pass_ns;
		all += updates;
		if (pass_ns > longest)
			longest = pass_ns;
		/* the hinting faults map each folio (or page) again */
		for (i = 0; i < size; i += PSZ)
			(void)*(volatile char *)(mem + i);
	}
	for (i = 0; i < size; i += PSZ) {
		if (mem[i] != (char)(i / PSZ) || mem[i + PSZ - 1] != (char)(i / PSZ)) {
			fprintf(stderr, "numascan: page %zu lost its data\n", i / PSZ);
			goto out;
		}
	}
	printf("METRIC time_ns %lld\n", total);
	printf("METRIC longest_pass_ns %lld\n", longest);
	printf("METRIC pte_updates %lld\n", all);
	printf("METRIC passes %ld\n", passes);
	ret = 0;
out:
	if (knobs_restore())
		ret = 1;
	return ret;
}
