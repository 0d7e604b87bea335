// SPDX-License-Identifier: GPL-2.0
/*
 * benchrun - run one benchmark workload and report it as one JSON line.
 *
 *   benchrun NAME MODE REP -- PROGRAM [ARGS...]
 *
 * Reads back the knobs a bench plan sets (the foliobatch switches, the THP
 * settings, MGLRU), snapshots /proc/vmstat, /proc/interrupts, the mTHP
 * stats and the hit counts of kprobe events
 * (/sys/kernel/tracing/kprobe_profile, when a plan has set some up), runs
 * PROGRAM with its stdout on a pipe, snapshots again and prints
 *
 *   BENCH {"workload":..., "mode":..., "rep":..., "exit":...,
 *          "total_ns":..., "metrics":{...}, "vmstat":{...}, "irq":{...},
 *          "mthp":{...}, "kprobe":{...}, "foliobatch_dir":0|1,
 *          "knobs":{...}}
 *
 * "metrics" holds what the workload printed as "METRIC <key> <integer>"
 * lines (its own timed phase is "time_ns"); vmstat, irq, mthp and kprobe
 * hold the non-zero deltas of the counters.  "knobs" holds each knob as it
 * read before the run, keyed by its path under /sys/kernel/mm
 * ("foliobatch/pt_reclaim": "1", "transparent_hugepage/enabled": "never",
 * "lru_gen/enabled": "0x0007"; of a "[chosen] other" list, the chosen
 * word); "foliobatch_dir" says whether /sys/kernel/mm/foliobatch exists.
 * Times are CLOCK_MONOTONIC, which under qemu -icount shift=0,sleep=off
 * counts guest instructions (1 ns each).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

#define MM_DIR		"/sys/kernel/mm"
#define MAX_KNOBS	64
#define MAX_KEYS	1024
#define KEY_LEN		96

struct counters {
	int n;
	char key[MAX_KEYS][KEY_LEN];
	long long val[MAX_KEYS];
};

static struct counters vm0, vm1, irq0, irq1, thp0, thp1, kp0, kp1, metrics;

struct knobs {
	int n;
	int foliobatch_dir;
	char key[MAX_KNOBS][KEY_LEN];
	char val[MAX_KNOBS][KEY_LEN];
};

static struct knobs knobs;

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

/**
 * knob_value() - the setting a sysfs knob's text shows
 * @text: the file's content, e.g. "always [madvise] never\n" or "1\n"
 * @val: destination of KEY_LEN bytes
 *
 * Of a list with one word in brackets, that word; otherwise the text up to
 * its first newline.  Characters that JSON would need escaped become '?'.
 */
static void knob_value(const char *text, char *val)
{
	const char *open = strchr(text, '['), *close = NULL;
	size_t len, i;

	if (open)
		close = strchr(open, ']');
	if (open && close) {
		text = open + 1;
		len = close - text;
	} else {
		len = strcspn(text, "\n");
	}
	if (len >= KEY_LEN)
		len = KEY_LEN - 1;
	for (i = 0; i < len; i++)
		val[i] = (text[i] == '"' || text[i] == '\\' ||
			  (unsigned char)text[i] < 0x20) ? '?' : text[i];
	val[len] = '\0';
}

/**
 * read_knob() - add one knob under /sys/kernel/mm to @k, if it exists
 * @k: the knobs read so far
 * @rel: its path under /sys/kernel/mm, the key it is recorded under
 */
static void read_knob(struct knobs *k, const char *rel)
{
	char path[512], buf[256];

	if (k->n >= MAX_KNOBS)
		return;
	snprintf(path, sizeof(path), MM_DIR "/%s", rel);
	if (lab_read_file(path, buf, sizeof(buf)) < 0)
		return;
	snprintf(k->key[k->n], KEY_LEN, "%s", rel);
	knob_value(buf, k->val[k->n]);
	k->n++;
}

/**
 * read_knobs() - read back every knob a bench plan sets
 * @k: filled with the foliobatch switches, the top-level and per-size THP
 *     settings and MGLRU's lru_gen/enabled, those that exist
 */
static void read_knobs(struct knobs *k)
{
	struct dirent *de;
	char rel[KEY_LEN];
	DIR *d;

	k->n = 0;
	d = opendir(MM_DIR "/foliobatch");
	k->foliobatch_dir = !!d;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "foliobatch/%.60s", de->d_name);
		read_knob(k, rel);
	}
	if (d)
		closedir(d);
	read_knob(k, "transparent_hugepage/enabled");
	d = opendir(LAB_THP_DIR);
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(rel, sizeof(rel), "transparent_hugepage/%.40s/enabled",
			 de->d_name);
		read_knob(k, rel);
	}
	if (d)
		closedir(d);
	read_knob(k, "lru_gen/enabled");
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
	read_knobs(&knobs);
	sync();
	read_vmstat(&vm0);
	read_interrupts(&irq0);
	read_mthp(&thp0);
	read_kprobes(&kp0);
	t0 = lab_now_ns();
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
	t1 = lab_now_ns();
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
	printf(",\"foliobatch_dir\":%d,\"knobs\":{", knobs.foliobatch_dir);
	for (int i = 0; i < knobs.n; i++)
		printf("%s\"%s\":\"%s\"", i ? "," : "", knobs.key[i],
		       knobs.val[i]);
	printf("}}\n");
	return code;
}
