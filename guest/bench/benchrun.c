// SPDX-License-Identifier: GPL-2.0
/*
 * benchrun - run one benchmark workload and report it as one JSON line.
 *
 *   benchrun NAME MODE REP -- PROGRAM [ARGS...]
 *
 * Snapshots /proc/vmstat, /proc/interrupts, the mTHP stats and the hit
 * counts of kprobe events (/sys/kernel/tracing/kprobe_profile, when a plan
 * has set some up), runs PROGRAM with its stdout on a pipe, snapshots again
 * and prints
 *
 *   BENCH {"workload":..., "mode":..., "rep":..., "exit":...,
 *          "total_ns":..., "metrics":{...}, "vmstat":{...}, "irq":{...},
 *          "mthp":{...}, "kprobe":{...}}
 *
 * "metrics" holds what the workload printed as "METRIC <key> <integer>"
 * lines (its own timed phase is "time_ns"); the other maps hold the non-zero
 * deltas of the counters.  Times are CLOCK_MONOTONIC, which under
 * qemu -icount shift=0,sleep=off counts guest instructions (1 ns each).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEYS	1024
#define KEY_LEN		96

struct counters {
	int n;
	char key[MAX_KEYS][KEY_LEN];
	long long val[MAX_KEYS];
};

static struct counters vm0, vm1, irq0, irq1, thp0, thp1, kp0, kp1, metrics;

static void add(struct counters *c, const char *key, long long val)
{
	if (c->n >= MAX_KEYS)
		return;
	snprintf(c->key[c->n], KEY_LEN, "%s", key);
	c->val[c->n++] = val;
}

static long long lookup(const struct counters *c, const char *key, int *found)
{
	for (int i = 0; i < c->n; i++) {
		if (!strcmp(c->key[i], key)) {
			*found = 1;
			return c->val[i];
		}
	}
	*found = 0;
	return 0;
}

static void read_vmstat(struct counters *c)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[KEY_LEN];
	long long v;

	c->n = 0;
	if (!f)
		return;
	while (fscanf(f, "%95s %lld", key, &v) == 2)
		add(c, key, v);
	fclose(f);
}

/* Sum each /proc/interrupts row over CPUs; the key is the row label. */
static void read_interrupts(struct counters *c)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];

	c->n = 0;
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) {	/* CPU header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end, label[KEY_LEN];
		long long sum = 0;

		while (*p == ' ')
			p++;
		end = strchr(p, ':');
		if (!end || end - p >= KEY_LEN)
			continue;
		snprintf(label, sizeof(label), "%.*s", (int)(end - p), p);
		p = end + 1;
		for (;;) {
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
		add(c, label, sum);
	}
	fclose(f);
}

/* kprobe_profile rows are "<event> <hits> <misses>"; the key is the event. */
static void read_kprobes(struct counters *c)
{
	FILE *f = fopen("/sys/kernel/tracing/kprobe_profile", "r");
	char key[KEY_LEN];
	long long hits, misses;

	c->n = 0;
	if (!f)
		return;
	while (fscanf(f, "%95s %lld %lld", key, &hits, &misses) == 3)
		add(c, key, hits);
	fclose(f);
}

static void read_mthp(struct counters *c)
{
	const char *base = "/sys/kernel/mm/transparent_hugepage";
	DIR *d = opendir(base), *s;
	struct dirent *de, *se;
	char path[1024], key[KEY_LEN], buf[64];

	c->n = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), "%s/%.255s/stats", base,
			 de->d_name);
		s = opendir(path);
		if (!s)
			continue;
		while ((se = readdir(s))) {
			FILE *f;

			if (se->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%.255s/stats/%.255s",
				 base, de->d_name, se->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(buf, sizeof(buf), f)) {
				snprintf(key, sizeof(key), "%.20s/%.60s",
					 de->d_name + 10, se->d_name);
				add(c, key, strtoll(buf, NULL, 10));
			}
			fclose(f);
		}
		closedir(s);
	}
	closedir(d);
}

static void print_delta(const char *name, const struct counters *a,
			const struct counters *b)
{
	int first = 1, found;

	printf(",\"%s\":{", name);
	for (int i = 0; i < b->n; i++) {
		long long d = b->val[i] - lookup(a, b->key[i], &found);

		if (!d)
			continue;
		printf("%s\"%s\":%lld", first ? "" : ",", b->key[i], d);
		first = 0;
	}
	printf("}");
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int pfd[2], status, code;
	long long t0, t1;
	char line[512];
	FILE *out;
	pid_t pid;

	if (argc < 6 || strcmp(argv[4], "--")) {
		fprintf(stderr, "usage: %s NAME MODE REP -- PROGRAM [ARGS...]\n",
			argv[0]);
		return 2;
	}
	if (pipe(pfd))
		return 2;
	sync();
	read_vmstat(&vm0);
	read_interrupts(&irq0);
	read_mthp(&thp0);
	read_kprobes(&kp0);
	t0 = now_ns();
	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(argv[5], argv + 5);
		fprintf(stderr, "benchrun: exec %s: %s\n", argv[5], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	out = fdopen(pfd[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		char key[KEY_LEN];
		long long v;

		if (sscanf(line, "METRIC %95s %lld", key, &v) == 2)
			add(&metrics, key, v);
		else
			fputs(line, stdout);	/* the workload's own messages */
	}
	waitpid(pid, &status, 0);
	t1 = now_ns();
	read_kprobes(&kp1);
	read_vmstat(&vm1);
	read_interrupts(&irq1);
	read_mthp(&thp1);
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

	printf("BENCH {\"workload\":\"%s\",\"mode\":\"%s\",\"rep\":%d,"
	       "\"exit\":%d,\"total_ns\":%lld,\"metrics\":{",
	       argv[1], argv[2], atoi(argv[3]), code, t1 - t0);
	for (int i = 0; i < metrics.n; i++)
		printf("%s\"%s\":%lld", i ? "," : "", metrics.key[i],
		       metrics.val[i]);
	printf("}");
	print_delta("vmstat", &vm0, &vm1);
	print_delta("irq", &irq0, &irq1);
	print_delta("mthp", &thp0, &thp1);
	print_delta("kprobe", &kp0, &kp1);
	printf("}\n");
	return code;
}
