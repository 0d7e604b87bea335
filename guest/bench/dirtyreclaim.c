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
 *
 * stress-ng shares TOTAL_MB (--vm-bytes) and OPS (--vm-ops) among its
 * workers.
 *
 * Prints METRIC elapsed_ns (stress-ng's whole run), cpu_ns (user and system
 * time of stress-ng and its workers, which under icount is instructions
 * executed, reclaim in their context included, throttling sleeps not),
 * time_ns (the measured phase: elapsed_ns, or cpu_ns with "cpu"),
 * bogo_ops, limit_kb and the
 * number of OOM kills in the cgroup; exits 3 (run not valid) if that is
 * not 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
