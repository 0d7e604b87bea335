// SPDX-License-Identifier: GPL-2.0
/*
 * read_batch.c - tests of the read side of large folios: the three switches
 * of the seventh series.
 *
 *   contpte_early_exit  arm64's contpte_ptep_get() stops reading a
 *                       contiguous block once it has seen a young and a
 *                       dirty entry;
 *   mincore_batch       mincore() answers a contiguous block of present
 *                       PTEs at once (arm64: pte_batch_hint());
 *   mbind_batch         mbind()/migrate_pages() step over the PTEs of a
 *                       large folio at once when they queue folios.
 *
 * The mechanism fixture (mech) runs as variants "on", "off" (the switch at
 * 1 and 0, patched kernel) and "stock", and counts kernel work with
 * kprobes.  The result fixture (same) runs on the patched kernel only and
 * compares what user space sees with the switch at 0 and at 1.  The node
 * fixture needs two NUMA nodes (the lab's numa boot) and moves folios
 * between them.  Switches and THP settings are restored in the teardowns.
 *
 * Needs root (kprobes in tracefs, /proc/kallsyms addresses, pagemap PFNs,
 * /proc/kpageflags, THP knobs, clear_refs) and 4 KiB pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "lab_test.h"

#define RB_DIR		"/sys/kernel/mm/foliobatch"
#define PSZ		4096UL
#define FOLIO		(64 * LAB_SZ_1K)
#define NR_FOLIOS	16
#define LEN		(NR_FOLIOS * FOLIO)
#define NR_PTES		(LEN / PSZ)
#define RW		(PROT_READ | PROT_WRITE)


static bool rb_arm64(void)
{
	struct utsname u;

	return !uname(&u) && !strcmp(u.machine, "aarch64");
}

/*
 * Maps LEN bytes of private anonymous memory, 64 kB-aligned and a quarter
 * of a PMD into a 2 MB region, writes every page and fails unless it is
 * NR_FOLIOS folios of 64 kB.
 */
static char *rb_map_written(struct __test_metadata *_metadata,
			    const struct lab_env *env)
{
	size_t f, size;
	char *p;
	int ret;

	p = lab_map_aligned(LEN, LAB_SZ_2M, LAB_SZ_2M / 4, RW, MAP_PRIVATE);
	if (!p)
		return NULL;
	if (madvise(p, LEN, MADV_HUGEPAGE)) {
		munmap(p, LEN);
		return NULL;
	}
	lab_fill_pat(p, 0, NR_PTES, 1);
	for (f = 0; f < NR_FOLIOS; f++) {
		ret = lab_folio_mapped_size(env->pm_fd, env->kpf_fd,
					    p + f * FOLIO, 2 * FOLIO, &size);
		EXPECT_EQ(0, ret) TH_LOG("folio %zu: %s", f, strerror(-ret));
		EXPECT_EQ(FOLIO, size)
			TH_LOG("%s: folio %zu is %zu bytes, not 64 kB", env->mode,
			       f, size);
		if (ret || size != FOLIO) {
			munmap(p, LEN);
			return NULL;
		}
	}
	return p;
}

/* Reads /proc/self/smaps whole, to make the kernel read every PTE. */
static void rb_read_smaps(struct __test_metadata *_metadata)
{
	char buf[8192];
	ssize_t n;
	int fd;

	fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	do {
		n = read(fd, buf, sizeof(buf));
	} while (n > 0);
	close(fd);
	ASSERT_EQ(0, n);
}

/*
 * struct rb_insn_probes - a kprobe on every instruction of some functions
 * @nr: how many offsets took a probe
 * @ev: the event name of each
 */
struct rb_insn_probes {
	int nr;
	char ev[768][32];
};

/* The size of kernel function @func from /proc/kallsyms, or 0. */
static unsigned long rb_func_size(const char *func)
{
	unsigned long long addr, a, start = 0, next = ~0ULL;
	char type, name[256];
	FILE *f;

	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, name) == 3)
		if (!strcmp(name, func))
			start = addr;
	rewind(f);
	while (start && fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, name) == 3)
		if (a > start && a < next)
			next = a;
	fclose(f);
	return start && next != ~0ULL ? next - start : 0;
}

/*
 * Puts a kprobe on every 4-byte offset of @func that the kernel accepts
 * (it refuses, for one, the sites of static branches), so that
 * rb_insn_trips() can tell how often the busiest instruction runs: the
 * trips of a loop.  arm64 only (fixed 4-byte instructions).  Returns the
 * event name of the entry's probe, NULL if @func is not in kallsyms.
 */
static const char *rb_insn_probes_add(struct __test_metadata *_metadata,
				      struct rb_insn_probes *pr,
				      const char *func, int tag)
{
	unsigned long size = rb_func_size(func), off;
	int err, first = pr->nr, taken = 0;
	char at[128];

	if (!size)
		return NULL;
	for (off = 0; off < size && pr->nr < 768; off += 4) {
		snprintf(pr->ev[pr->nr], sizeof(pr->ev[0]), "rb_i%d_%lx", tag, off);
		snprintf(at, sizeof(at), "%s+0x%lx", func, off);
		err = lab_kprobe_add(pr->ev[pr->nr], at);
		if (!off && err)
			return NULL;
		if (!err) {
			pr->nr++;
			taken++;
		}
	}
	ksft_print_msg("%s: %d of %lu instructions probed\n", func, taken,
		       size / 4);
	return pr->ev[first];
}

/* Reads every probe's hits into @hits (in @pr->ev order). */
static void rb_insn_hits(struct __test_metadata *_metadata,
			 const struct rb_insn_probes *pr, long long *hits)
{
	int i;

	for (i = 0; i < pr->nr; i++) {
		hits[i] = lab_kprobe_hits(pr->ev[i]);
		ASSERT_LE(0, hits[i]) TH_LOG("%s: no hits count", pr->ev[i]);
	}
}

/* The most hits any probed instruction took between two readings. */
static long long rb_insn_busiest(const struct rb_insn_probes *pr,
				 const long long *h0, const long long *h1)
{
	long long most = 0;
	int i;

	for (i = 0; i < pr->nr; i++)
		if (h1[i] - h0[i] > most)
			most = h1[i] - h0[i];
	return most;
}

/*
 * Fails unless @calls of @what for @n PTEs show the path of the mode: with
 * the switch on (@batched), at most one per 8 PTEs (one per 64 kB folio
 * and a margin) and at least one per 64 kB folio (the walk reached every
 * folio: a count that did not move is no batch); with it off and on stock,
 * at least one per PTE, as 6.12 makes.  @why_on and @why_off say what a
 * failure means.
 */
static void rb_assert_per_pte(struct __test_metadata *_metadata,
			      const struct lab_env *env, bool batched,
			      long long calls, size_t n, const char *what,
			      const char *why_on, const char *why_off)
{
	ksft_print_msg("%s: %lld %s calls for %zu PTEs\n", env->mode, calls,
		       what, n);
	if (batched) {
		ASSERT_LE(calls * 8, (long long)n)
			TH_LOG("%s: more than one call per 8 PTEs: %s", env->mode,
			       why_on);
		ASSERT_LE((long long)n, calls * 16)
			TH_LOG("%s: fewer calls than 64 kB folios: the walk did not reach them",
			       env->mode);
	} else {
		ASSERT_LE((long long)n, calls)
			TH_LOG("%s: fewer calls than PTEs: %s", env->mode, why_off);
	}
}

/*
 * The mechanism fixture: variants "on" and "off" (the switch at 1 and 0,
 * patched kernel) and "stock".
 */
FIXTURE(mech) {
	struct lab_env env;
};

LAB_KERNEL_VARIANTS(mech);

FIXTURE_SETUP(mech)
{
	lab_env_init(&self->env, NULL);
	LAB_REQUIRE_FLAVOUR(variant->flavour, "variant for the %s kernel",
			    variant->flavour);
}

FIXTURE_TEARDOWN(mech)
{
	lab_env_teardown(_metadata, &self->env);
}

/*
 * Proves contpte_early_exit by its mechanism: reading /proc/self/smaps
 * makes the kernel ptep_get() every PTE, and each ptep_get() of an entry of
 * a contiguous block calls contpte_ptep_get().  On stock and with the
 * switch off it reads the block's 16 entries; with it on, it reads a block
 * whose first entry is young and dirty (written memory) once.  A kprobe on
 * each instruction of contpte_ptep_get() (both loops are in it) counts how
 * often the busiest instruction runs per call: at least 16 off and on
 * stock, at most 2 on, and at least 14 on once clear_refs made the entries
 * old (the probes see the early exit's second loop read on).
 * 16 blocks of 64 kB, smaps read 4 times.  x86_64 has no contiguous PTEs.
 */
TEST_F_TIMEOUT(mech, contpte_reads, 300)
{
	struct lab_env *env = &self->env;
	static struct rb_insn_probes pr;
	static long long h0[768], h1[768];
	long long c0, c1, calls, most;
	const char *entry;
	double trips;
	char *p;
	int r;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: no contpte_ptep_get()");
	lab_env_setup(_metadata, env, RB_DIR "/contpte_early_exit",
		      FOLIO / LAB_SZ_1K, false);
	entry = rb_insn_probes_add(_metadata, &pr, "contpte_ptep_get", 0);
	ASSERT_NE(NULL, entry) TH_LOG("cannot probe contpte_ptep_get");
	lab_env_mode(_metadata, env, variant->value);
	p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, p);

	rb_insn_hits(_metadata, &pr, h0);
	c0 = lab_kprobe_hits(entry);
	for (r = 0; r < 4; r++)
		rb_read_smaps(_metadata);
	c1 = lab_kprobe_hits(entry);
	rb_insn_hits(_metadata, &pr, h1);
	ASSERT_LE(0, c0);
	ASSERT_LE(c0, c1);

	calls = c1 - c0;
	most = rb_insn_busiest(&pr, h0, h1);
	trips = calls ? (double)most / calls : 0;
	ksft_print_msg("%s: %lld contpte_ptep_get() calls, busiest instruction %lld times (%.2f per call)\n",
		       env->mode, calls, most, trips);
	ASSERT_LE((long long)(4 * NR_PTES), calls)
		TH_LOG("fewer calls than smaps reads of the PTEs: the blocks were not contiguous");
	if (variant->value > 0) {
		ASSERT_GE(2.0, trips)
			TH_LOG("%s: a young and dirty first entry still reads on through the block",
			       env->mode);
		/*
		 * The probes see the early exit's loops: with every entry old
		 * (and dirty), the second loop reads the 15 entries after the
		 * first, so its busiest instruction runs 15 times a call (less
		 * a margin for other tasks' reads).
		 */
		ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs", "1"));
		rb_insn_hits(_metadata, &pr, h0);
		c0 = lab_kprobe_hits(entry);
		for (r = 0; r < 4; r++)
			rb_read_smaps(_metadata);
		c1 = lab_kprobe_hits(entry);
		rb_insn_hits(_metadata, &pr, h1);
		ASSERT_LE(0, c0);
		ASSERT_LT(c0, c1);
		most = rb_insn_busiest(&pr, h0, h1);
		trips = (double)most / (c1 - c0);
		ksft_print_msg("%s, old entries: %lld contpte_ptep_get() calls, busiest instruction %lld times (%.2f per call)\n",
			       env->mode, c1 - c0, most, trips);
		ASSERT_LE(14.0, trips)
			TH_LOG("%s: the probes do not see the early exit's loop read old entries",
			       env->mode);
	} else {
		ASSERT_LE(16.0, trips)
			TH_LOG("%s: 6.12 reads all 16 entries of a block per call",
			       env->mode);
	}
	munmap(p, LEN);
}

/*
 * Proves mincore_batch by its mechanism: mincore() of written 64 kB folios
 * calls contpte_ptep_get() once per PTE on stock and with the switch off,
 * once per block with it on: at most one per 8 PTEs.
 * 16 blocks, mincore() 4 times.  Without contiguous PTEs (x86_64) the
 * switch is not built and mincore() is 6.12's.
 */
TEST_F_TIMEOUT(mech, mincore_visits, 120)
{
	struct lab_env *env = &self->env;
	unsigned char vec[NR_PTES];
	long long h0, h1, calls;
	size_t i;
	char *p;
	int r, err;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: mincore_batch is not built");
	lab_env_setup(_metadata, env, RB_DIR "/mincore_batch",
		      FOLIO / LAB_SZ_1K, false);
	err = lab_kprobe_add("rb_cpg", "contpte_ptep_get");
	ASSERT_EQ(0, err) TH_LOG("kprobe on contpte_ptep_get: %s", strerror(-err));
	lab_env_mode(_metadata, env, variant->value);
	p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, p);

	h0 = lab_kprobe_hits("rb_cpg");
	for (r = 0; r < 4; r++)
		ASSERT_EQ(0, mincore(p, LEN, vec));
	h1 = lab_kprobe_hits("rb_cpg");
	munmap(p, LEN);
	ASSERT_LE(0, h0);
	ASSERT_LE(h0, h1);
	for (i = 0; i < NR_PTES; i++)
		ASSERT_EQ(1, vec[i] & 1) TH_LOG("page %zu not resident", i);

	calls = h1 - h0;
	rb_assert_per_pte(_metadata, env, variant->value > 0, calls, 4 * NR_PTES,
			  "contiguous-block read (mincore())",
			  "the blocks were not batched", "6.12 reads every PTE");
}

/*
 * Proves mbind_batch by its mechanism, on both arches: mbind() of 64 kB
 * folios (MPOL_BIND to the node they are on, MPOL_MF_MOVE | MPOL_MF_STRICT:
 * nothing to move) walks every PTE, and 6.12 (stock, switch off) calls
 * vm_normal_folio() for each, the switch on once per folio: at most one
 * per 8 PTEs.  16 folios, mbind() 4 times.
 */
TEST_F_TIMEOUT(mech, mbind_lookups, 120)
{
	struct lab_env *env = &self->env;
	unsigned long mask;
	long long h0, h1, calls;
	char *p;
	int r, err, node;

	lab_env_setup(_metadata, env, RB_DIR "/mbind_batch",
		      FOLIO / LAB_SZ_1K, false);
	err = lab_kprobe_add("rb_vnf", "vm_normal_folio");
	ASSERT_EQ(0, err) TH_LOG("kprobe on vm_normal_folio: %s", strerror(-err));
	lab_env_mode(_metadata, env, variant->value);
	p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, syscall(SYS_get_mempolicy, &node, NULL, 0, p,
			     MPOL_F_NODE | MPOL_F_ADDR));
	mask = 1UL << node;

	h0 = lab_kprobe_hits("rb_vnf");
	for (r = 0; r < 4; r++)
		ASSERT_EQ(0, syscall(SYS_mbind, p, LEN, MPOL_BIND, &mask,
				     8 * sizeof(mask),
				     MPOL_MF_MOVE | MPOL_MF_STRICT))
			TH_LOG("mbind to node %d: %s", node, strerror(errno));
	h1 = lab_kprobe_hits("rb_vnf");
	munmap(p, LEN);
	ASSERT_LE(0, h0);
	ASSERT_LE(h0, h1);

	calls = h1 - h0;
	rb_assert_per_pte(_metadata, env, variant->value > 0, calls, 4 * NR_PTES,
			  "vm_normal_folio() (mbind())",
			  "the folios' PTEs were not batched",
			  "6.12 looks up the folio of every PTE");
}

FIXTURE(same) {
	struct lab_env env;
};

FIXTURE_SETUP(same)
{
	lab_env_init(&self->env, NULL);
	LAB_REQUIRE_FLAVOUR("patched", "variant for the patched kernel");
}

FIXTURE_TEARDOWN(same)
{
	lab_env_teardown(_metadata, &self->env);
}

/* smaps of one state of the region, as the result tests compare it. */
struct rb_smaps {
	long rss, referenced, dirty, mlocked;
};

/*
 * Reads Rss, Referenced and Private_Dirty (kB) of the smaps entry that
 * starts at @p, in one pass over /proc/self/smaps (-1 for a field not
 * found), and Mlocked of /proc/meminfo.
 */
static void rb_smaps_read(const char *p, struct rb_smaps *s)
{
	unsigned long start, end;
	char line[256];
	bool in = false;
	FILE *f;

	s->rss = s->referenced = s->dirty = -1;
	s->mlocked = lab_meminfo_kb("Mlocked");
	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			if (in)
				break;
			in = start == (unsigned long)p;
		} else if (in) {
			sscanf(line, "Rss: %ld", &s->rss);
			sscanf(line, "Referenced: %ld", &s->referenced);
			sscanf(line, "Private_Dirty: %ld", &s->dirty);
		}
	}
	fclose(f);
}

/*
 * The states rb_smaps_states() reads: written (young and dirty), after
 * clear_refs (old and dirty), after a read of one page of every other
 * block (young again: the hardware sets the access flag of one entry, or
 * a fault does), and mlocked.
 */
#define RB_STATES	4

static void rb_smaps_states(struct __test_metadata *_metadata,
			    struct lab_env *env, int value,
			    struct rb_smaps s[RB_STATES])
{
	volatile char sink;
	long base;
	size_t f;
	char *p;

	lab_env_mode(_metadata, env, value);
	p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, p);
	rb_smaps_read(p, &s[0]);
	ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs", "1"));
	/*
	 * "1" clears the access flags without a TLB flush, so a read could
	 * hit a TLB entry and leave the flags clear; "4" (soft-dirty, none on
	 * arm64 in 6.12) changes no entry but flushes the mm's TLB.
	 */
	ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs", "4"));
	rb_smaps_read(p, &s[1]);
	for (f = 0; f < NR_FOLIOS; f += 2)
		sink = p[f * FOLIO + 5 * PSZ];
	(void)sink;
	rb_smaps_read(p, &s[2]);
	base = lab_meminfo_kb("Mlocked");
	ASSERT_EQ(0, mlock(p, LEN)) TH_LOG("mlock: %s", strerror(errno));
	rb_smaps_read(p, &s[3]);
	s[3].mlocked -= base;
	ASSERT_EQ(0, munlock(p, LEN));
	ASSERT_EQ(NR_PTES, lab_check_pat(p, 0, NR_PTES, 1) / (PSZ / 8));
	munmap(p, LEN);
}

/*
 * Proves contpte_early_exit changes nothing user space reads: the smaps
 * Rss, Referenced and Private_Dirty of 16 blocks of 64 kB, written, after
 * clear_refs, after reading one page of every other block, and the
 * Mlocked size while they are mlocked, are the same with the switch at 0
 * and at 1, and Rss is the whole region.
 */
TEST_F_TIMEOUT(same, smaps_and_mlock, 120)
{
	static const char * const state[RB_STATES] = {
		"written", "clear_refs", "half read", "mlocked",
	};
	struct rb_smaps s[2][RB_STATES];
	int v, i;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: contpte_early_exit is not built");
	lab_env_setup(_metadata, &self->env, RB_DIR "/contpte_early_exit",
		      FOLIO / LAB_SZ_1K, false);
	for (v = 0; v < 2; v++)
		rb_smaps_states(_metadata, &self->env, v, s[v]);
	for (i = 0; i < RB_STATES; i++) {
		ksft_print_msg("%s: Rss %ld Referenced %ld/%ld Private_Dirty %ld/%ld Mlocked %ld/%ld kB (switch 0/1)\n",
			       state[i], s[0][i].rss, s[0][i].referenced,
			       s[1][i].referenced, s[0][i].dirty, s[1][i].dirty,
			       s[0][i].mlocked, s[1][i].mlocked);
		EXPECT_EQ((long)(LEN / LAB_SZ_1K), s[1][i].rss);
		EXPECT_EQ(s[0][i].rss, s[1][i].rss);
		EXPECT_EQ(s[0][i].referenced, s[1][i].referenced) TH_LOG("%s", state[i]);
		EXPECT_EQ(s[0][i].dirty, s[1][i].dirty) TH_LOG("%s", state[i]);
	}
	EXPECT_EQ((long)(LEN / LAB_SZ_1K), s[1][0].referenced);
	EXPECT_EQ(0, s[1][1].referenced) TH_LOG("clear_refs left entries young");
	EXPECT_EQ((long)(LEN / LAB_SZ_1K / 2), s[1][2].referenced)
		TH_LOG("a read of one page of every other block should make those blocks young");
	EXPECT_EQ((long)(LEN / LAB_SZ_1K), s[1][0].dirty);
	EXPECT_EQ(s[0][3].mlocked, s[1][3].mlocked);
	EXPECT_LE((long)(LEN / LAB_SZ_1K), s[1][3].mlocked);
}

/*
 * The mincore() vector of @len bytes at @p + @off, with the switch at
 * @value, into @vec.
 */
static void rb_mincore_at(struct __test_metadata *_metadata,
			  struct lab_env *env, int value, char *p, size_t off,
			  size_t len, unsigned char *vec)
{
	lab_env_switch(_metadata, env, value);
	ASSERT_EQ(0, mincore(p + off, len, vec))
		TH_LOG("mincore: %s", strerror(errno));
}

/*
 * Proves mincore_batch changes no answer: 16 blocks of 64 kB of which
 * blocks 3 and 9 were never written (no PTEs), block 5 lost its pages 4-7
 * (MADV_DONTNEED: an unfolded block with a hole) and block 12 is read-only
 * (mprotect), queried whole and over ranges that start and end inside a
 * block; every vector is the same with the switch at 0 and at 1, and is 1
 * exactly for the pages written and kept.
 */
TEST_F_TIMEOUT(same, mincore_vector, 120)
{
	static const size_t ranges[][2] = {	/* first page, pages */
		{ 0, NR_PTES }, { 3, 40 }, { 17, 100 }, { 80, 15 },
		{ 81, 1 }, { 95, 161 },
	};
	unsigned char v0[NR_PTES], v1[NR_PTES];
	struct lab_env *env = &self->env;
	bool want;
	size_t i, r, pg;
	char *p;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: mincore_batch is not built");
	lab_env_setup(_metadata, env, RB_DIR "/mincore_batch",
		      FOLIO / LAB_SZ_1K, false);
	lab_env_mode(_metadata, env, 1);
	p = lab_map_aligned(LEN, LAB_SZ_2M, LAB_SZ_2M / 4, RW, MAP_PRIVATE);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p, LEN, MADV_HUGEPAGE));
	for (i = 0; i < NR_FOLIOS; i++)
		if (i != 3 && i != 9)
			lab_fill_pat(p + i * FOLIO, i * 16, 16, 1);
	ASSERT_EQ(0, madvise(p + 5 * FOLIO + 4 * PSZ, 4 * PSZ, MADV_DONTNEED));
	ASSERT_EQ(0, mprotect(p + 12 * FOLIO, FOLIO, PROT_READ));

	for (r = 0; r < ARRAY_SIZE(ranges); r++) {
		size_t first = ranges[r][0], nr = ranges[r][1];

		rb_mincore_at(_metadata, env, 0, p, first * PSZ, nr * PSZ, v0);
		rb_mincore_at(_metadata, env, 1, p, first * PSZ, nr * PSZ, v1);
		for (i = 0; i < nr; i++) {
			pg = first + i;
			want = pg / 16 != 3 && pg / 16 != 9 &&
			       !(pg / 16 == 5 && pg % 16 >= 4 && pg % 16 < 8);
			ASSERT_EQ(v0[i], v1[i])
				TH_LOG("range %zu: page %zu is %d with the switch off, %d on",
				       r, pg, v0[i], v1[i]);
			ASSERT_EQ(want, v1[i] & 1)
				TH_LOG("range %zu: page %zu", r, pg);
		}
	}
	munmap(p, LEN);
}

/*
 * Proves mincore_batch leaves swap entries to 6.12's answer: 16 blocks of
 * 64 kB, of which blocks 2 to 5 are paged out (MADV_PAGEOUT: swap entries,
 * which the batch, made for present entries, must not read as present
 * blocks) and the rest stay.  Once two answers 100 ms apart agree (the
 * swap-out has settled), the vector over the whole region and over a
 * range that starts and ends inside a paged-out block is the same with
 * the switch at 1 as at 0 before and after it, 1 for every page kept, and
 * the data of every page reads back.
 */
TEST_F_TIMEOUT(same, mincore_swapped, 120)
{
	unsigned char a[NR_PTES], b[NR_PTES], v1[NR_PTES];
	struct lab_env *env = &self->env;
	uint64_t pm[NR_PTES];
	size_t i, swapped = 0;
	int tries;
	char *p;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: mincore_batch is not built");
	if (!lab_have_swap())
		SKIP(return, "no swap: the test pages blocks out to swap");
	lab_env_setup(_metadata, env, RB_DIR "/mincore_batch",
		      FOLIO / LAB_SZ_1K, false);
	lab_env_mode(_metadata, env, 1);
	p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p + 2 * FOLIO, 4 * FOLIO, MADV_PAGEOUT))
		TH_LOG("MADV_PAGEOUT: %s", strerror(errno));
	for (tries = 0; tries < 50; tries++) {
		rb_mincore_at(_metadata, env, 0, p, 0, LEN, a);
		usleep(100000);
		rb_mincore_at(_metadata, env, 0, p, 0, LEN, b);
		if (!memcmp(a, b, NR_PTES))
			break;
	}
	ASSERT_EQ(0, memcmp(a, b, NR_PTES)) TH_LOG("mincore() never settled");
	ASSERT_EQ(0, lab_pagemap_read(env->pm_fd, p, NR_PTES, pm));
	for (i = 0; i < NR_PTES; i++)
		swapped += !!(pm[i] & LAB_PM_SWAP);
	ksft_print_msg("%zu of %lu pages are swap entries\n", swapped, NR_PTES);
	ASSERT_LT(0UL, swapped) TH_LOG("MADV_PAGEOUT left no swap entry to answer for");

	rb_mincore_at(_metadata, env, 1, p, 0, LEN, v1);
	rb_mincore_at(_metadata, env, 0, p, 0, LEN, b);
	for (i = 0; i < NR_PTES; i++) {
		ASSERT_EQ(a[i], v1[i])
			TH_LOG("page %zu (%s) is %d with the switch off, %d on", i,
			       pm[i] & LAB_PM_SWAP ? "swap entry" : "present",
			       a[i], v1[i]);
		ASSERT_EQ(a[i], b[i]) TH_LOG("page %zu changed under the test", i);
		if (i / 16 < 2 || i / 16 > 5)
			ASSERT_EQ(1, v1[i] & 1) TH_LOG("page %zu was kept", i);
	}
	/* a range from inside block 1 to inside block 4 */
	rb_mincore_at(_metadata, env, 1, p, 20 * PSZ, 40 * PSZ, v1);
	for (i = 0; i < 40; i++)
		ASSERT_EQ(a[20 + i], v1[i]) TH_LOG("range: page %zu", 20 + i);
	ASSERT_EQ(NR_PTES, lab_check_pat(p, 0, NR_PTES, 1) / (PSZ / 8));
	munmap(p, LEN);
}

/*
 * Where the pages of @len bytes at @p are, counted per node (0 and 1),
 * by move_pages() without nodes (it only asks).
 */
static void rb_nodes(struct __test_metadata *_metadata, char *p, size_t len,
		     long count[2])
{
	size_t i, nr = len / PSZ;
	void *pages[NR_PTES];
	int status[NR_PTES];

	ASSERT_GE(NR_PTES, nr);
	for (i = 0; i < nr; i++)
		pages[i] = p + i * PSZ;
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, nr, pages, NULL, status, 0))
		TH_LOG("move_pages: %s", strerror(errno));
	count[0] = count[1] = 0;
	for (i = 0; i < nr; i++) {
		ASSERT_TRUE(status[i] == 0 || status[i] == 1)
			TH_LOG("page %zu: status %d", i, status[i]);
		count[status[i]]++;
	}
}

/*
 * rb_map_written() with the folios faulted in on node 0 (MPOL_BIND for the
 * faults, the default policy again after them).
 */
static char *rb_map_on_node0(struct __test_metadata *_metadata,
			     const struct lab_env *env)
{
	unsigned long n0 = 1;
	char *p;

	if (syscall(SYS_set_mempolicy, MPOL_BIND, &n0, 64))
		return NULL;
	p = rb_map_written(_metadata, env);
	if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0) && p) {
		munmap(p, LEN);
		return NULL;
	}
	return p;
}

FIXTURE(node) {
	struct lab_env env;
};

FIXTURE_SETUP(node)
{
	lab_env_init(&self->env, NULL);
	LAB_REQUIRE_FLAVOUR("patched", "variant for the patched kernel");
	if (!lab_path_exists("/sys/devices/system/node/node1"))
		SKIP(return, "one NUMA node: the lab's numa boot runs this test");
}

FIXTURE_TEARDOWN(node)
{
	lab_env_teardown(_metadata, &self->env);
}

/*
 * Proves mbind_batch moves what 6.12 moves: 16 folios of 64 kB on node 0,
 * of which the middle 8 (a range that starts and ends inside a folio:
 * pages 8 to 135) are mbind(MPOL_MF_MOVE)d to node 1.  A folio is moved
 * whole when its first page in the range is, so 9 folios (144 pages) go.
 * The pages on each node afterwards, and what the data reads, are the
 * same with the switch at 0 and at 1; then migrate_pages() of the whole
 * process back to node 0 returns the same count both ways.
 */
TEST_F_TIMEOUT(node, mbind_move, 300)
{
	struct lab_env *env = &self->env;
	long count[2][2], back[2];
	unsigned long n0 = 1, n1 = 2;
	long moved;
	char *p;
	int v;

	lab_env_setup(_metadata, env, RB_DIR "/mbind_batch",
		      FOLIO / LAB_SZ_1K, false);
	for (v = 0; v < 2; v++) {
		lab_env_mode(_metadata, env, v);
		p = rb_map_on_node0(_metadata, env);
		ASSERT_NE(NULL, p);
		rb_nodes(_metadata, p, LEN, count[v]);
		ASSERT_EQ((long)NR_PTES, count[v][0]);

		ASSERT_EQ(0, syscall(SYS_mbind, p + 8 * PSZ, 128 * PSZ, MPOL_BIND,
				     &n1, 64, MPOL_MF_MOVE))
			TH_LOG("mbind: %s", strerror(errno));
		rb_nodes(_metadata, p, LEN, count[v]);
		ASSERT_EQ(NR_PTES, lab_check_pat(p, 0, NR_PTES, 1) / (PSZ / 8));
		ASSERT_EQ(0, syscall(SYS_mbind, p, LEN, MPOL_DEFAULT, NULL, 0, 0));
		moved = syscall(SYS_migrate_pages, 0, 64, &n1, &n0);
		ASSERT_LE(0, moved) TH_LOG("migrate_pages: %s", strerror(errno));
		back[v] = moved;
		munmap(p, LEN);
		ksft_print_msg("%s: node 0 %ld, node 1 %ld pages after mbind; migrate_pages() back returned %ld\n",
			       env->mode, count[v][0], count[v][1], back[v]);
	}
	EXPECT_EQ(count[0][0], count[1][0]);
	EXPECT_EQ(count[0][1], count[1][1]);
	EXPECT_EQ(back[0], back[1]);
	EXPECT_LT(0, count[1][1]) TH_LOG("nothing moved to node 1");
}

/*
 * Proves mbind_batch keeps MPOL_MF_STRICT's answer: 16 folios of 64 kB on
 * node 0, bound to node 1 with MPOL_MF_STRICT and no move flag over a
 * range that starts and ends inside a folio (pages 8 to 135): mbind()
 * fails with EIO with the switch at 0 and at 1, and no page moves; bound
 * to node 0, where they are, the same call succeeds both ways.
 */
TEST_F_TIMEOUT(node, mbind_strict, 120)
{
	struct lab_env *env = &self->env;
	unsigned long n0 = 1, n1 = 2;
	long count[2];
	int v, ret, err;
	char *p;

	lab_env_setup(_metadata, env, RB_DIR "/mbind_batch",
		      FOLIO / LAB_SZ_1K, false);
	for (v = 0; v < 2; v++) {
		lab_env_mode(_metadata, env, v);
		p = rb_map_on_node0(_metadata, env);
		ASSERT_NE(NULL, p);
		errno = 0;
		ret = syscall(SYS_mbind, p + 8 * PSZ, 128 * PSZ, MPOL_BIND, &n1,
			      64, MPOL_MF_STRICT);
		err = errno;
		ksft_print_msg("%s: mbind(node 1, MPOL_MF_STRICT) returned %d (%s)\n",
			       env->mode, ret, ret ? strerror(err) : "no error");
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(EIO, err);
		rb_nodes(_metadata, p, LEN, count);
		EXPECT_EQ((long)NR_PTES, count[0])
			TH_LOG("%ld pages moved without MPOL_MF_MOVE", count[1]);
		EXPECT_EQ(0, syscall(SYS_mbind, p, LEN, MPOL_BIND, &n0, 64,
				     MPOL_MF_STRICT))
			TH_LOG("mbind(node 0, MPOL_MF_STRICT): %s", strerror(errno));
		ASSERT_EQ(NR_PTES, lab_check_pat(p, 0, NR_PTES, 1) / (PSZ / 8));
		munmap(p, LEN);
	}
}

/*
 * A second thread of a race test: runs @round on @p until @stop, counting
 * the rounds; a round that fails leaves its errno in @err and ends it.
 */
struct rb_race {
	char *p;
	int (*round)(char *p);
	volatile int stop;
	long rounds;
	int err;
};

static void *rb_race_loop(void *arg)
{
	struct rb_race *r = arg;

	while (!r->stop) {
		if (r->round(r->p)) {
			r->err = errno;
			return NULL;
		}
		r->rounds++;
	}
	return NULL;
}

#define RB_MOVES	20

/* One round of the mover: the whole process to node 1 and back. */
static int rb_move_round(char *p)
{
	unsigned long n0 = 1, n1 = 2;

	if (syscall(SYS_migrate_pages, 0, 64, &n0, &n1) < 0 ||
	    syscall(SYS_migrate_pages, 0, 64, &n1, &n0) < 0)
		return -1;
	return 0;
}

/*
 * Proves mincore_batch leaves migration entries to 6.12's answer (resident:
 * mincore() counts a migration entry as present): 16 folios of 64 kB
 * written on node 0, which a second thread migrate_pages()s to node 1 and
 * back in a loop while this one asks mincore() of the whole region and,
 * between two calls, reads pagemap to count the migration entries it
 * catches, until the mover has completed RB_MOVES rounds (or 60 s have
 * passed).  With the switch at 0 and at 1: every answer is all resident,
 * pagemap caught at least one migration entry (so mincore() ran over
 * some), the mover completed its rounds, and the data reads back.
 */
TEST_F_TIMEOUT(node, mincore_migrating, 300)
{
	struct lab_env *env = &self->env;
	unsigned char vec[NR_PTES];
	uint64_t pm[NR_PTES];
	long bad[2], caught[2], rounds[2], i;
	struct rb_race m;
	int pm_err = 0;
	time_t end;
	pthread_t t;
	size_t k;
	char *p;
	int v;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: mincore_batch is not built");
	lab_env_setup(_metadata, env, RB_DIR "/mincore_batch",
		      FOLIO / LAB_SZ_1K, false);
	for (v = 0; v < 2; v++) {
		lab_env_mode(_metadata, env, v);
		p = rb_map_on_node0(_metadata, env);
		ASSERT_NE(NULL, p);
		memset(&m, 0, sizeof(m));
		m.round = rb_move_round;
		bad[v] = caught[v] = 0;
		ASSERT_EQ(0, pthread_create(&t, NULL, rb_race_loop, &m));
		end = time(NULL) + 60;
		for (i = 0; m.rounds < RB_MOVES && !m.err && time(NULL) < end; i++) {
			if (mincore(p, LEN, vec)) {
				bad[v] = -errno;
				break;
			}
			for (k = 0; k < NR_PTES; k++)
				bad[v] += !(vec[k] & 1);
			if (lab_pagemap_read(env->pm_fd, p, NR_PTES, pm)) {
				pm_err = errno ? errno : EIO;
				break;
			}
			for (k = 0; k < NR_PTES; k++)
				caught[v] += !!(pm[k] & LAB_PM_SWAP);
		}
		m.stop = 1;
		pthread_join(t, NULL);
		rounds[v] = m.rounds;
		ksft_print_msg("%s: %ld mincore() calls against %ld rounds of migration, %ld migration entries caught by pagemap, %ld non-resident answers\n",
			       env->mode, i, rounds[v], caught[v], bad[v]);
		ASSERT_LE(0, bad[v]) TH_LOG("mincore(): %s", strerror(-bad[v]));
		ASSERT_EQ(0, pm_err) TH_LOG("pagemap: %s", strerror(pm_err));
		ASSERT_EQ(0, m.err) TH_LOG("migrate_pages: %s", strerror(m.err));
		ASSERT_EQ(NR_PTES, lab_check_pat(p, 0, NR_PTES, 1) / (PSZ / 8));
		munmap(p, LEN);
		EXPECT_EQ(0, bad[v]) TH_LOG("%s: mincore() answered a migrating page as not resident",
					    env->mode);
		EXPECT_LT(0, caught[v]) TH_LOG("%s: no migration entry met: the test proved nothing",
					       env->mode);
		EXPECT_LE(RB_MOVES, rounds[v]) TH_LOG("%s: the mover completed %ld rounds in 60 s",
						      env->mode, rounds[v]);
	}
}

/* One round of the folder: half of each block read-only and back. */
static int rb_fold_round(char *p)
{
	size_t f;

	for (f = 0; f < NR_FOLIOS; f++) {
		if (mprotect(p + f * FOLIO, FOLIO / 2, PROT_READ) ||
		    mprotect(p + f * FOLIO, FOLIO / 2, RW))
			return -1;
	}
	return 0;
}

/*
 * Proves the early exit and the mincore batch under folds and unfolds on
 * another CPU: one thread makes half of a 64 kB block read-only and back
 * (an unfold, then a fold, both under the page table lock) in a loop while
 * this one reads smaps and mincore() of it; every mincore() answer is all
 * resident, the data stays, and nothing on the console (the lab's scan)
 * complains, with both switches on.
 * Meant for the lab's mttcg boot (vCPUs running at once).
 */
TEST_F_TIMEOUT(same, fold_race, 300)
{
	struct lab_env *env = &self->env;
	struct rb_race r = { .round = rb_fold_round };
	unsigned char vec[NR_PTES];
	struct lab_knob mc;
	pthread_t t;
	long i, bad = 0;
	size_t k;

	if (!rb_arm64())
		SKIP(return, "no contiguous PTEs on this arch: nothing folds");
	lab_env_setup(_metadata, env, RB_DIR "/contpte_early_exit",
		      FOLIO / LAB_SZ_1K, false);
	ASSERT_EQ(0, lab_knob_save(&mc, RB_DIR "/mincore_batch"));
	ASSERT_EQ(0, lab_write_file(mc.path, "1"));
	lab_env_mode(_metadata, env, 1);
	r.p = rb_map_written(_metadata, env);
	ASSERT_NE(NULL, r.p);
	ASSERT_EQ(0, pthread_create(&t, NULL, rb_race_loop, &r));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, mincore(r.p, LEN, vec));
		for (k = 0; k < NR_PTES; k++)
			bad += !(vec[k] & 1);
		rb_read_smaps(_metadata);
	}
	r.stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, lab_knob_restore(&mc));
	ASSERT_EQ(0, r.err) TH_LOG("mprotect: %s", strerror(r.err));
	ASSERT_EQ(NR_PTES, lab_check_pat(r.p, 0, NR_PTES, 1) / (PSZ / 8));
	munmap(r.p, LEN);
	ksft_print_msg("200 reads against %ld rounds of folds and unfolds\n",
		       r.rounds);
	ASSERT_EQ(0, bad) TH_LOG("%ld wrong answers", bad);
	ASSERT_LT(0, r.rounds) TH_LOG("the folder never completed a round");
}

TEST_HARNESS_MAIN
