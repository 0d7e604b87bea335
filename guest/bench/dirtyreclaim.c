// SPDX-License-Identifier: GPL-2.0
/*
 * dirtyreclaim - the seed 002 workload, scaled: stress-ng --vm workers
 * keep writing a working set four times larger than their memory cgroup's
 * limit, so reclaim keeps unmapping dirty anonymous folios and swapping
 * them out.  A fixed operation count makes throughput comparable.
 *
 * The limit is memory.high, not memory.max: over it, a task reclaims and is
 * throttled on its way back to user space, and is never OOM-killed.  With
 * memory.max, two workers thrashing one small cgroup saw 1 to 9 memcg OOM
 * kills per run, each killed worker respawned by stress-ng, so no two runs
 * did the same work.
 *
 *   dirtyreclaim [WORKERS] [TOTAL_MB] [OPS] [cpu]  (default 2, 256 MB, 200)
 *   dirtyreclaim WORKERS TOTAL_MB PASSES fixed
 *
 * stress-ng shares TOTAL_MB (--vm-bytes) and OPS (--vm-ops) among its
 * workers.
 *
 * Runs of the stress-ng form do not repeat, on stock kernels too: the same
 * run swapped out different amounts from one time to the next, some runs
 * swapped a whole working set out as zero-filled pages and faulted it back
 * (swpout_zero, swpin_zero), and some activated every page where others
 * activated none (pgactivate).  Which of stress-ng's traits causes which
 * was not isolated.  The fixed form has none of them:
 *
 *   dirtyreclaim WORKERS TOTAL_MB PASSES fixed
 *
 * Each worker has a memory cgroup of its own and stores one word in each
 * 4 kB page of its TOTAL_MB / WORKERS, PASSES times in address order.  The
 * first pass runs before its cgroup's memory.max (a quarter of the
 * worker's memory) is set, the others are timed: each page of them is
 * swapped in, dirtied and swapped out again.  Each store checks the word
 * the pass before left, so a lost store fails the run (exit 2).  It prints
 * METRIC time_ns and cpu_ns (the workers' CPU time in the timed passes),
 * elapsed_ns (the timed passes, first start to last end), passes,
 * limit_kb (per worker) and oom_kills (exit 3 if not 0).
 *
 * The stress-ng form prints METRIC elapsed_ns (stress-ng's whole run),
 * cpu_ns (user and system time of stress-ng and its workers, which under
 * icount is instructions executed, reclaim in their context included,
 * throttling sleeps not), time_ns (the measured phase: elapsed_ns, or
 * cpu_ns with "cpu"), bogo_ops, limit_kb and the number of OOM kills in
 * the cgroup; exits 3 (run not valid) if that is not 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

#define CG	"bench-dirtyreclaim"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long self_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* the word pass @pass stores in page @page: never zero */
static unsigned long stamp(long pass, size_t page)
{
	return (unsigned long)pass << 32 | page << 1 | 1;
}

/*
 * One worker of the fixed form, in cgroup @cg: fill @mb, tell the parent
 * (@ready: 'r', or 'f' when it could not start), wait for its limit to be
 * set (@go), then time @passes - 1 passes and send the CPU time on @res.
 * Exit status 2: a page did not hold the word stored in it by the pass
 * before.
 */
static int fixed_worker(const char *cg, long mb, long passes, int ready, int go,
			int res)
{
	size_t size = (size_t)mb << 20, page;
	unsigned long *buf, lost = 0;
	long long cpu = 0;
	long pass;
	char c;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lab_cg_move(cg, 0) || buf == MAP_FAILED) {
		fprintf(stderr, "dirtyreclaim: worker in %s cannot start\n", cg);
		if (write(ready, "f", 1) != 1)
			perror("dirtyreclaim: write");
		return 1;
	}
	for (pass = 1; pass <= passes; pass++) {
		if (pass == 2) {
			if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
				return 1;
			cpu = self_cpu_ns();
		}
		for (page = 0; page < size / 4096; page++) {
			volatile unsigned long *p = buf + page * 4096 / sizeof(*buf);

			if (pass > 1 && *p != stamp(pass - 1, page))
				lost++;
			*p = stamp(pass, page);
		}
	}
	cpu = self_cpu_ns() - cpu;
	if (write(res, &cpu, sizeof(cpu)) != sizeof(cpu))
		return 1;
	if (lost)
		fprintf(stderr, "dirtyreclaim: %lu pages lost a store\n", lost);
	return lost ? 2 : 0;
}

static int fixed_form(long workers, long total, long passes)
{
	long mb = total / workers, i, kills = 0;
	long long t0, t1, cpu = 0, c;
	int rp[2], gp[2], xp[2], err = 0;
	char cg[64], limit[32], path[256];

	if (lab_cg_enable_memory() || pipe(rp) || pipe(gp) || pipe(xp))
		return 1;
	for (i = 0; i < workers; i++) {
		snprintf(cg, sizeof(cg), CG "-%ld", i);
		if (lab_cg_create(cg)) {
			fprintf(stderr, "dirtyreclaim: cannot create cgroup %s\n", cg);
			return 1;
		}
	}
	for (i = 0; i < workers; i++) {
		snprintf(cg, sizeof(cg), CG "-%ld", i);
		if (!fork())
			_exit(fixed_worker(cg, mb, passes, rp[1], gp[0], xp[1]));
	}
	close(xp[1]);
	for (i = 0; i < workers; i++) {
		char ch;

		if (read(rp[0], &ch, 1) != 1 || ch != 'r')
			err = 1;
	}
	/* each limit reclaims its cgroup down to it here, before the timing */
	snprintf(limit, sizeof(limit), "%ldM", mb / 4);
	for (i = 0; i < workers; i++) {
		snprintf(path, sizeof(path), LAB_CGROUP_ROOT "/" CG "-%ld/memory.max", i);
		if (lab_write_file(path, limit))
			err = 1;
	}
	t0 = now_ns();
	for (i = 0; i < workers; i++)
		if (write(gp[1], "g", 1) != 1)
			err = 1;
	for (i = 0; i < workers; i++) {
		int st;

		wait(&st);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			err = WIFEXITED(st) && WEXITSTATUS(st) == 2 ? 2 : 1;
	}
	t1 = now_ns();
	while (read(xp[0], &c, sizeof(c)) == sizeof(c))
		cpu += c;
	for (i = 0; i < workers; i++) {
		snprintf(cg, sizeof(cg), CG "-%ld", i);
		kills += lab_cg_oom_kills(cg);
		lab_cg_remove(cg);
	}
	printf("METRIC time_ns %lld\n", cpu);
	printf("METRIC elapsed_ns %lld\n", t1 - t0);
	printf("METRIC cpu_ns %lld\n", cpu);
	printf("METRIC passes %ld\n", passes - 1);
	printf("METRIC limit_kb %ld\n", mb / 4 * 1024);
	printf("METRIC oom_kills %ld\n", kills);
	if (kills) {
		fprintf(stderr, "dirtyreclaim: %ld OOM kills; run not valid\n", kills);
		return 3;
	}
	return err;
}

int main(int argc, char **argv)
{
	long workers = argc > 1 ? atol(argv[1]) : 2;
	long total = argc > 2 ? atol(argv[2]) : 256;
	long ops = argc > 3 ? atol(argv[3]) : 200;
	int cpu_time = argc > 4 && !strcmp(argv[4], "cpu");
	char w[16], bytes[32], o[32], limit[32];
	long long t0, t1, cpu;
	struct rusage ru;
	long kills;
	int status;
	pid_t pid;

	if (argc > 4 && !strcmp(argv[4], "fixed"))
		return fixed_form(workers, total, ops);
	snprintf(w, sizeof(w), "%ld", workers);
	/* stress-ng shares --vm-bytes among its vm workers */
	snprintf(bytes, sizeof(bytes), "%ldM", total);
	snprintf(o, sizeof(o), "%ld", ops);
	snprintf(limit, sizeof(limit), "%ldM", total / 4);
	if (lab_cg_enable_memory() || lab_cg_create(CG) ||
	    lab_write_file(LAB_CGROUP_ROOT "/" CG "/memory.high", limit) ||
	    lab_cg_move(CG, 0)) {
		fprintf(stderr, "dirtyreclaim: cannot set up cgroup %s\n", CG);
		return 1;
	}
	t0 = now_ns();
	pid = fork();
	if (!pid) {
		execl("/usr/bin/stress-ng", "stress-ng", "--vm", w, "--vm-bytes",
		      bytes, "--vm-keep", "--vm-ops", o, "--timeout", "0",
		      "--quiet", (char *)NULL);
		perror("exec stress-ng");
		_exit(127);
	}
	waitpid(pid, &status, 0);
	t1 = now_ns();
	/* stress-ng and its workers, reclaim in their context included */
	getrusage(RUSAGE_CHILDREN, &ru);
	cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	printf("METRIC time_ns %lld\n", cpu_time ? cpu : t1 - t0);
	printf("METRIC elapsed_ns %lld\n", t1 - t0);
	printf("METRIC cpu_ns %lld\n", cpu);
	/* stress-ng's --vm-ops is the total of all its workers */
	printf("METRIC bogo_ops %ld\n", ops);
	printf("METRIC limit_kb %ld\n", total / 4 * 1024);
	kills = lab_cg_oom_kills(CG);
	printf("METRIC oom_kills %ld\n", kills);
	lab_write_file(LAB_CGROUP_ROOT "/cgroup.procs", "0");
	lab_cg_remove(CG);
	if (kills) {
		/* a respawned worker redoes work: not comparable, so not valid */
		fprintf(stderr, "dirtyreclaim: %ld OOM kills; run not valid\n", kills);
		return 3;
	}
	return !WIFEXITED(status) || WEXITSTATUS(status);
}
