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
 * The scan runs as task work (task_numa_work()) of the task whose tick
 * asked for it, on its way back to user space: here the task that spins.
 * A kprobe and a kretprobe on task_numa_work(), traced in a trace instance
 * of the program's own, time each call by the trace clock (sched_clock:
 * instruction-time under -icount); a pass's time is the sum of the calls
 * between turning kernel.numa_balancing on and seeing numa_pte_updates grow
 * by the region's PTEs (the counter is read every millisecond of spinning,
 * and the scan period is 100 ms: one pass).  After each pass, balancing
 * is turned off and every page is read: the hinting fault of a folio's
 * first page maps the folio again (6.12 rebuilds a large folio's PTEs at
 * once), so that the next pass changes all PTEs again.
 *
 * METRIC time_ns is the sum of the PASSES passes' times; the program fails
 * when a pass changed fewer PTEs than the region has or more than half as
 * many again (the process's other pages are a few dozen), or no pass came
 * within 60 s.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lab.h"

#define PSZ		4096UL
#define SZ_2M		(2UL << 20)
#define SYSCTL		"/proc/sys/kernel/numa_balancing"
#define DEBUGFS		"/sys/kernel/debug/sched/numa_balancing/"

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

#define INSTANCE	LAB_TRACING "/instances/numascan"
#define EVENT_IN	"numascan/scan_in"
#define EVENT_OUT	"numascan/scan_out"

/* The two probes on task_numa_work(), traced in INSTANCE only. */
static int trace_setup(void)
{
	if ((!lab_path_exists(LAB_TRACING "/events/" EVENT_IN) &&
	     (lab_kprobe_define("p:" EVENT_IN " task_numa_work") ||
	      lab_kprobe_define("r:" EVENT_OUT " task_numa_work"))) ||
	    (!lab_path_exists(INSTANCE) && mkdir(INSTANCE, 0755)))
		return -1;
	return lab_write_file(INSTANCE "/events/numascan/enable", "1");
}

static void trace_teardown(void)
{
	lab_write_file(INSTANCE "/events/numascan/enable", "0");
	rmdir(INSTANCE);
	lab_kprobe_define("-:" EVENT_IN);
	lab_kprobe_define("-:" EVENT_OUT);
}

static int trace_clear(void)
{
	int fd = open(INSTANCE "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * The time (ns) task_numa_work() took in the calls traced since
 * trace_clear(), in *@calls how many; -1 if an entry has no exit.
 */
static long long trace_scan_ns(int *calls)
{
	FILE *f = fopen(INSTANCE "/trace", "r");
	long long sec, usec, t, in = -1, sum = 0;
	char line[512], *p;

	*calls = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		bool out = strstr(line, ": scan_out:");

		if (line[0] == '#' || (!out && !strstr(line, ": scan_in:")))
			continue;
		/* "... [001] d..2.   105.123456: scan_in: ..." */
		p = strstr(line, out ? ": scan_out:" : ": scan_in:");
		*p = '\0';
		p = strrchr(line, ' ');
		if (!p || sscanf(p + 1, "%lld.%lld", &sec, &usec) != 2)
			continue;
		t = sec * 1000000000LL + usec * 1000;
		if (!out) {
			in = t;
		} else if (in >= 0) {
			sum += t - in;
			(*calls)++;
			in = -1;
		}
	}
	fclose(f);
	return in >= 0 ? -1 : sum;
}

/*
 * Spins until numa_pte_updates has grown by @want or more since the call,
 * reading it every millisecond, for at most 60 s; *@updates gets the
 * growth.  Returns 0, or -1 on timeout.
 */
static int wait_pass(long long want, long long *updates)
{
	long long t0 = lab_now_ns(), t, u0, u1;

	u0 = lab_vmstat("numa_pte_updates");
	if (u0 < 0 || lab_write_file(SYSCTL, "1"))
		return -1;
	for (t = lab_now_ns(); t - t0 < 60 * 1000000000LL;) {
		long long next = t + 1000000;

		while ((t = lab_now_ns()) < next)
			;
		u1 = lab_vmstat("numa_pte_updates");
		if (u1 < 0)
			break;
		if (u1 - u0 >= want) {
			*updates = u1 - u0;
			return lab_write_file(SYSCTL, "0") ? -1 : 0;
		}
	}
	lab_write_file(SYSCTL, "0");
	return -1;
}

int main(int argc, char **argv)
{
	long long pass_ns, total = 0, longest = 0, updates, all = 0;
	int calls;
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

	if (trace_setup()) {
		fprintf(stderr, "numascan: cannot trace task_numa_work() (kprobe events, %s)\n",
			INSTANCE);
		goto out;
	}
	for (p = 0; p < passes; p++) {
		if (trace_clear() || wait_pass(n, &updates)) {
			fprintf(stderr, "numascan: no scan pass changed the %zu PTEs within 60 s (pass %ld)\n",
				n, p);
			goto out;
		}
		pass_ns = trace_scan_ns(&calls);
		if (pass_ns <= 0 || !calls) {
			fprintf(stderr, "numascan: pass %ld: no complete task_numa_work() call traced\n",
				p);
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
	trace_teardown();
	if (knobs_restore())
		ret = 1;
	return ret;
}
