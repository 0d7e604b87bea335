// SPDX-License-Identifier: GPL-2.0
/*
 * dirtyreclaim - the seed 002 workload, scaled: workers keep writing a
 * working set four times larger than their memory cgroup's limit, so
 * reclaim keeps unmapping dirty anonymous folios and swapping them out.
 * It has two forms.
 *
 *   dirtyreclaim [WORKERS] [TOTAL_MB] [OPS] [cpu]  (default 2, 256 MB, 200)
 *
 * The stress-ng form, the seed's own: stress-ng --vm workers, which share
 * TOTAL_MB (--vm-bytes) and OPS (--vm-ops), in a cgroup whose memory.high
 * is a quarter of TOTAL_MB.  The limit is memory.high, not memory.max:
 * over it, a task reclaims and is throttled on its way back to user space,
 * and is never OOM-killed; with memory.max, two workers thrashing one
 * small cgroup saw 1 to 9 memcg OOM kills per run, each killed worker
 * respawned by stress-ng.  Its runs still do not repeat, on stock kernels
 * too: the same run swaps out different amounts from one time to the
 * next, some runs swap a whole working set out as zero-filled pages and
 * fault it back (swpout_zero, swpin_zero), and some activate every page
 * where others activate none (pgactivate).  It prints METRIC elapsed_ns
 * (stress-ng's whole run), cpu_ns (user and system time of stress-ng and
 * its workers, which under icount is instructions executed, reclaim in
 * their context included, throttling sleeps not), time_ns (elapsed_ns, or
 * cpu_ns with "cpu"), bogo_ops, limit_kb and oom_kills.
 *
 *   dirtyreclaim WORKERS TOTAL_MB PASSES fixed
 *
 * The fixed form, whose stores are the same each run: WORKERS processes
 * in one cgroup, as in the seed, worker i bound to CPU i modulo the CPUs
 * online, so that each runs on the same CPU every run.  Each stores one
 * word in every 4 kB page of its TOTAL_MB / WORKERS, PASSES times in
 * address order.  The first pass fills memory before the cgroup's
 * memory.max (a quarter of TOTAL_MB) is set; the others are timed, and in
 * each every page is swapped in, dirtied and swapped out again.  Each
 * store first checks the word the pass before left.  No worker is
 * respawned, and an OOM kill makes the run invalid as in the other form.
 * It prints METRIC time_ns (the workers' CPU time in the timed passes),
 * elapsed_ns (from the limit to the end of the last timed pass), passes
 * (timed), limit_kb, oom_kills and lost_stores (pages found without the
 * word the pass before stored, counted per page and pass: swapped-out
 * data that came back wrong).
 *
 * Both forms exit 3 (run not valid) when the cgroup saw an OOM kill; the
 * fixed form otherwise exits 2 when a store was found missing.
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
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

/* user and system time of @who (RUSAGE_SELF, RUSAGE_CHILDREN), in ns */
static long long cpu_ns_of(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* the word pass @pass stores in page @page: never zero */
static uint64_t stamp(long pass, size_t page)
{
	return (uint64_t)pass << 40 | (uint64_t)page << 1 | 1;
}

/* what a worker of the fixed form sends its parent when it ends */
struct fixed_result {
	long long cpu_ns;	/* CPU time of the timed passes */
	long long end_ns;	/* CLOCK_MONOTONIC at the end of the last one */
	long long lost;		/* stores found missing, one per page and pass */
};

/*
 * One worker of the fixed form, on CPU @cpu: fill @mb, close @ready to tell
 * the parent, wait for the limit (a byte on @go), then time @passes - 1
 * passes and send a struct fixed_result on @res.
 */
static int fixed_worker(int cpu, long mb, long passes, int ready, int go, int res)
{
	size_t pages = (size_t)mb << 20 >> 12, page;
	struct fixed_result r = { 0 };
	cpu_set_t set;
	char *buf, c;
	long pass;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 1;

	buf = mmap(NULL, pages << 12, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	for (pass = 1; pass <= passes; pass++) {
		if (pass == 2) {
			close(ready);
			if (read(go, &c, 1) != 1)
				return 1;
			r.cpu_ns = cpu_ns_of(RUSAGE_SELF);
		}
		for (page = 0; page < pages; page++) {
			volatile uint64_t *p = (uint64_t *)(buf + (page << 12));

			if (pass > 1 && *p != stamp(pass - 1, page))
				r.lost++;
			*p = stamp(pass, page);
		}
	}
	r.cpu_ns = cpu_ns_of(RUSAGE_SELF) - r.cpu_ns;
	r.end_ns = lab_now_ns();
	return write(res, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

/*
 * The workers of the fixed form, in cgroup CG: start them, set the limit
 * once they have filled their memory, time them.  Each worker has a ready
 * pipe of its own, which it closes once it has filled its memory: the
 * parent reads end of file there whether the worker got that far or died,
 * so a worker that fails never leaves the parent waiting.  Returns 0, or
 * 1 when something failed; *sum gets the workers' results summed and
 * *elapsed the time from the limit to the end of the last timed pass.
 */
static int fixed_run(long workers, long total, long passes, int ncpus,
		     struct fixed_result *sum, long long *elapsed)
{
	long mb = total / workers, i, got = 0;
	struct fixed_result r;
	int gp[2], xp[2], err = 0;
	long long t0, end = 0;
	char limit[32], c;
	int ready[64];

	if (pipe(gp))
		return 1;
	if (pipe(xp)) {
		close(gp[0]);
		close(gp[1]);
		return 1;
	}
	for (i = 0; i < workers; i++) {
		int rp[2];
		pid_t pid;

		if (pipe(rp)) {
			err = 1;
			break;
		}
		pid = fork();
		if (pid < 0) {
			perror("dirtyreclaim: fork");
			close(rp[0]);
			close(rp[1]);
			err = 1;
			break;
		}
		if (!pid) {
			close(rp[0]);
			close(gp[1]);
			close(xp[0]);
			_exit(fixed_worker(i % ncpus, mb, passes, rp[1], gp[0], xp[1]));
		}
		close(rp[1]);
		ready[i] = rp[0];
	}
	workers = i;
	close(gp[0]);
	close(xp[1]);
	for (i = 0; i < workers; i++) {
		if (read(ready[i], &c, 1) != 0)
			err = 1;
		close(ready[i]);
	}
	/*
	 * The limit reclaims the cgroup down to it here, before the timing;
	 * the parent then leaves the cgroup, so only the workers are in it.
	 */
	snprintf(limit, sizeof(limit), "%ldM", total / 4);
	if (lab_write_file(LAB_CGROUP_ROOT "/" CG "/memory.max", limit))
		err = 1;
	if (lab_write_file(LAB_CGROUP_ROOT "/cgroup.procs", "0"))
		err = 1;
	t0 = lab_now_ns();
	for (i = 0; i < workers; i++)
		if (write(gp[1], "g", 1) != 1)
			err = 1;
	close(gp[1]);
	while (read(xp[0], &r, sizeof(r)) == sizeof(r)) {
		got++;
		sum->cpu_ns += r.cpu_ns;
		sum->lost += r.lost;
		if (r.end_ns > end)
			end = r.end_ns;
	}
	close(xp[0]);
	for (i = 0; i < workers; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			err = 1;
	}
	if (got != workers || !got)
		return 1;
	*elapsed = end - t0;
	return err;
}

/* The fixed form (see the top of the file). */
static int fixed_form(long workers, long total, long passes)
{
	int ncpus = sysconf(_SC_NPROCESSORS_ONLN), err;
	struct fixed_result sum = { 0 };
	long long elapsed = 0;
	long kills;

	if (workers < 1 || workers > 64 || passes < 2 || total / workers < 4 ||
	    ncpus < 1) {
		fprintf(stderr, "dirtyreclaim: the fixed form needs 1 to 64 workers, "
			"2 or more passes and 4 MB or more per worker\n");
		return 1;
	}
	/* no worker left to read "go" must not kill the parent */
	signal(SIGPIPE, SIG_IGN);
	/* a cgroup left by an earlier run would bring its limits and events */
	if (lab_cg_enable_memory() || lab_cg_remove(CG) || lab_cg_create(CG)) {
		fprintf(stderr, "dirtyreclaim: cannot create cgroup %s\n", CG);
		return 1;
	}
	err = lab_cg_move(CG, 0) ||
	      fixed_run(workers, total, passes, ncpus, &sum, &elapsed);
	/* leave the cgroup on every path (done already when the run got far) */
	lab_write_file(LAB_CGROUP_ROOT "/cgroup.procs", "0");
	kills = lab_cg_oom_kills(CG);
	if (kills < 0)
		err = 1;
	if (lab_cg_remove(CG)) {
		fprintf(stderr, "dirtyreclaim: cannot remove cgroup %s\n", CG);
		err = 1;
	}
	if (err && !sum.lost && kills <= 0)
		return 1;
	printf("METRIC time_ns %lld\n", sum.cpu_ns);
	printf("METRIC elapsed_ns %lld\n", elapsed);
	printf("METRIC passes %ld\n", passes - 1);
	printf("METRIC limit_kb %ld\n", total / 4 * 1024);
	printf("METRIC oom_kills %ld\n", kills > 0 ? kills : 0);
	printf("METRIC lost_stores %lld\n", sum.lost);
	if (kills > 0) {
		fprintf(stderr, "dirtyreclaim: %ld OOM kills; run not valid\n", kills);
		return 3;
	}
	if (sum.lost) {
		fprintf(stderr, "dirtyreclaim: %lld stores found missing\n", sum.lost);
		return 2;
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
	t0 = lab_now_ns();
	pid = fork();
	if (!pid) {
		execl("/usr/bin/stress-ng", "stress-ng", "--vm", w, "--vm-bytes",
		      bytes, "--vm-keep", "--vm-ops", o, "--timeout", "0",
		      "--quiet", (char *)NULL);
		perror("exec stress-ng");
		_exit(127);
	}
	waitpid(pid, &status, 0);
	t1 = lab_now_ns();
	/* stress-ng and its workers, reclaim in their context included */
	cpu = cpu_ns_of(RUSAGE_CHILDREN);
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
