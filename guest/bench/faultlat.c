// SPDX-License-Identifier: GPL-2.0
/*
 * faultlat - page-fault latency under dirty-anon reclaim, the case in which
 * reclaim_tlb_batch (seed 002) could hurt: with it on, reclaim keeps up to
 * 31 unmapped dirty folios locked while it writes them out, and a fault on
 * one of them waits for the whole batch, not for one folio.
 *
 *   faultlat [DIRTY_MB] [TOUCH_MB] [HIGH_MB] [PASSES]
 *                                        (default 256, 16, 64, 2)
 *
 * Both threads run in a memory cgroup whose memory.high is HIGH_MB, with
 * swap on zram (lab_zramswap).  The dirtier writes every page of DIRTY_MB
 * of anonymous memory PASSES times, so reclaim keeps unmapping dirty
 * folios and swapping them out.  The toucher goes round TOUCH_MB of its
 * own anonymous memory, which the same reclaim swaps out, and writes to
 * each page that /proc/self/pagemap shows as swapped out (or in
 * migration), timing that one store: the fault, the swap-in or the wait
 * for the folio reclaim holds, and any memory.high throttling on the way
 * back to user space.  Pages found present are not timed; after each
 * round the toucher sleeps for 1 ms.
 *
 * Prints METRIC time_ns (the dirtier's passes), faults (timed stores),
 * fault_p50_ns, fault_p90_ns, fault_p99_ns, fault_max_ns (nearest-rank
 * percentiles), limit_kb and the number of OOM kills in the cgroup; exits
 * 3 (run not valid) if that is not 0 or if no store was timed.  Times are
 * CLOCK_MONOTONIC: instruction-time under qemu -icount.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

#define CG		"bench-faultlat"
#define MAX_SAMPLES	(256 * 1024)

static long page_size;
static char *dirty;
static size_t dirty_len;
static long passes;
static atomic_int done;
static long long dirty_ns;

/*
 * A few words per page, different in every page and pass: zram then
 * compresses each page (a page of one repeated word it would keep as a
 * "same-filled" page without compressing it).
 */
static void scribble(char *page, uint64_t seed)
{
	uint64_t *w = (uint64_t *)page;
	int i;

	for (i = 0; i < 8; i++)
		w[i * 64] = seed * 0x9e3779b97f4a7c15ULL + i;
}

static void *dirtier(void *arg)
{
	long long t0 = lab_now_ns();
	size_t off;
	long p;

	for (p = 0; p < passes; p++)
		for (off = 0; off < dirty_len; off += page_size)
			scribble(dirty + off, (p << 32) | (off / page_size));
	dirty_ns = lab_now_ns() - t0;
	atomic_store(&done, 1);
	return NULL;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of n sorted samples */
static long long pct(const long long *s, long n, int p)
{
	long rank = (n * p + 99) / 100;

	return s[rank < 1 ? 0 : rank - 1];
}

int main(int argc, char **argv)
{
	long dirty_mb = argc > 1 ? atol(argv[1]) : 256;
	long touch_mb = argc > 2 ? atol(argv[2]) : 16;
	long high_mb = argc > 3 ? atol(argv[3]) : 64;
	size_t touch_len, off, npages, i;
	long long *samples, t0, t1;
	long n = 0, kills, round = 0;
	char limit[32];
	pthread_t thr;
	char *touch;
	int fd;

	passes = argc > 4 ? atol(argv[4]) : 2;
	page_size = sysconf(_SC_PAGESIZE);
	dirty_len = dirty_mb * LAB_SZ_1M;
	touch_len = touch_mb * LAB_SZ_1M;
	npages = touch_len / page_size;

	snprintf(limit, sizeof(limit), "%ldM", high_mb);
	if (!lab_have_swap() || lab_cg_enable_memory() || lab_cg_create(CG) ||
	    lab_write_file(LAB_CGROUP_ROOT "/" CG "/memory.high", limit) ||
	    lab_cg_move(CG, 0)) {
		fprintf(stderr, "faultlat: no swap, or cannot set up cgroup %s\n", CG);
		return 1;
	}
	fd = open("/proc/self/pagemap", O_RDONLY);
	samples = mmap(NULL, MAX_SAMPLES * sizeof(*samples), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	touch = mmap(NULL, touch_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dirty = mmap(NULL, dirty_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || samples == MAP_FAILED || touch == MAP_FAILED ||
	    dirty == MAP_FAILED) {
		perror("faultlat: set-up");
		return 1;
	}
	/* the samples must not be swapped out under the toucher's clock */
	if (mlock(samples, MAX_SAMPLES * sizeof(*samples)))
		perror("faultlat: mlock (samples may fault)");
	for (off = 0; off < touch_len; off += page_size)
		scribble(touch + off, off / page_size);

	if (pthread_create(&thr, NULL, dirtier, NULL)) {
		fprintf(stderr, "faultlat: pthread_create failed\n");
		return 1;
	}
	while (!atomic_load(&done) && n < MAX_SAMPLES) {
		for (i = 0; i < npages && n < MAX_SAMPLES; i++) {
			uint64_t pm;
			char *page = touch + i * page_size;

			if (pread(fd, &pm, sizeof(pm), i * sizeof(pm) +
				  (uintptr_t)touch / page_size * sizeof(pm)) != sizeof(pm)) {
				perror("faultlat: pagemap");
				return 1;
			}
			if (!(pm & LAB_PM_SWAP))
				continue;
			t0 = lab_now_ns();
			scribble(page, ((uint64_t)++round << 32) | i);
			t1 = lab_now_ns();
			samples[n++] = t1 - t0;
		}
		/*
		 * Idle for 1 ms between rounds: a toucher that spun through
		 * pagemap all the time would keep its vCPU busy, and under
		 * -icount, sleep=off no idle time could then be skipped while
		 * the dirtier is throttled: the run took 5 to 12 minutes of
		 * host time at 64 MB.
		 */
		usleep(1000);
	}
	pthread_join(thr, NULL);

	printf("METRIC time_ns %lld\n", dirty_ns);
	printf("METRIC faults %ld\n", n);
	if (n) {
		qsort(samples, n, sizeof(*samples), cmp_ll);
		printf("METRIC fault_p50_ns %lld\n", pct(samples, n, 50));
		printf("METRIC fault_p90_ns %lld\n", pct(samples, n, 90));
		printf("METRIC fault_p99_ns %lld\n", pct(samples, n, 99));
		printf("METRIC fault_max_ns %lld\n", samples[n - 1]);
	}
	printf("METRIC limit_kb %ld\n", high_mb * 1024);
	kills = lab_cg_oom_kills(CG);
	printf("METRIC oom_kills %ld\n", kills);
	lab_write_file(LAB_CGROUP_ROOT "/cgroup.procs", "0");
	lab_cg_remove(CG);
	if (kills || !n) {
		fprintf(stderr, "faultlat: %ld OOM kills, %ld timed faults; run not valid\n",
			kills, n);
		return 3;
	}
	return 0;
}
