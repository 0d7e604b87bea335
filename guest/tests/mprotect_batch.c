// SPDX-License-Identifier: GPL-2.0
/*
 * mprotect_batch.c - tests of mprotect() over PTE-mapped large folios, the
 * case the mprotect_batch switch makes change_pte_range() handle in batches
 * (modify_prot_start_ptes() and modify_prot_commit_ptes() over the PTEs of
 * one folio that agree in every bit but the PFN and the accessed bit).
 *
 * The data tests run their checks with /sys/kernel/mm/foliobatch/
 * mprotect_batch at 0 and at 1 when the switch exists (LAB_FLAVOUR=patched
 * requires it), and once on a kernel without it (stock).  The mechanism
 * tests (fixtures mech and bbm) run as variants "on", "off" (patched) and
 * "stock", and count kernel calls with kprobes.  The switch and the THP
 * settings are restored in the teardown.
 *
 * Folio sizes are forced with the mTHP knobs (anonymous "enabled", and
 * "shmem_enabled" for MAP_SHARED anonymous memory), and every test checks in
 * /proc/kpageflags that it got folios of that size before it changes them.
 *
 * Needs root (pagemap PFNs, /proc/kpageflags, clear_refs, THP knobs,
 * kprobes in tracefs, /dev/kmsg) and 4 KiB pages.
 */
#ifdef __x86_64__
#include <cpuid.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "lab_test.h"

#define MP_SWITCH	"/sys/kernel/mm/foliobatch/mprotect_batch"
#define PSZ		4096UL
#define WORDS		(PSZ / sizeof(uint64_t))
#define RW		(PROT_READ | PROT_WRITE)

/*
 * Maps @len bytes of anonymous memory (@flags MAP_PRIVATE or MAP_SHARED)
 * at an address @off bytes past a multiple of @align, as a VMA of exactly
 * @len bytes, and asks for huge pages.  Returns NULL on failure.
 */
static char *mp_map(size_t len, size_t align, size_t off, int flags)
{
	char *p = lab_map_aligned(len, align, off, RW, flags);

	if (!p)
		return NULL;
	if (madvise(p, len, MADV_HUGEPAGE)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/* Fills page @page of @p with the pattern of region @tag. */
static void fill_page(char *p, size_t page, unsigned int tag)
{
	lab_fill_pat(p + page * PSZ, page, 1, tag);
}

static void fill(char *p, size_t nr, unsigned int tag)
{
	lab_fill_pat(p, 0, nr, tag);
}

/* The first page of @nr at @p whose data is not region @tag's, or @nr. */
static size_t first_bad(const char *p, size_t nr, unsigned int tag)
{
	return lab_check_pat(p, 0, nr, tag) / WORDS;
}

/* Fails unless @nr folios of exactly the wanted size are mapped at @p. */
static void assert_folios(struct __test_metadata *_metadata,
			  const struct lab_env *env, const char *p, size_t nr)
{
	size_t f, size;
	int ret;

	for (f = 0; f < nr; f++) {
		ret = lab_folio_mapped_size(env->pm_fd, env->kpf_fd,
					    p + f * env->folio,
					    env->folio + PSZ, &size);
		ASSERT_EQ(0, ret)
			TH_LOG("%s: folio %zu at %p: %s", env->mode, f,
			       p + f * env->folio, strerror(-ret));
		ASSERT_EQ(env->folio, size)
			TH_LOG("%s: %p maps %zu kB of one folio, wanted %zu kB",
			       env->mode, p + f * env->folio, size / LAB_SZ_1K,
			       env->folio / LAB_SZ_1K);
	}
}

/*
 * Opens round @m of a test that maps @nr folios of the test's size: enters
 * mode @m (lab_env_mode()), maps them (@flags MAP_PRIVATE or MAP_SHARED) folio
 * aligned, fills them with the pattern of region @tag and fails unless
 * each is mapped as one whole folio.  Returns the mapping.
 */
static char *mp_round(struct __test_metadata *_metadata, struct lab_env *env,
		      int m, size_t nr, int flags, unsigned int tag)
{
	char *p;

	lab_env_mode(_metadata, env, m);
	p = mp_map(nr * env->folio, env->folio, 0, flags);
	ASSERT_NE(NULL, p);
	fill(p, nr * env->folio / PSZ, tag);
	assert_folios(_metadata, env, p, nr);
	return p;
}

/* The pagemap entries of @nr pages at @p, malloc'ed. */
static uint64_t *pagemap(struct __test_metadata *_metadata,
			 const struct lab_env *env, const char *p, size_t nr)
{
	uint64_t *pm = malloc(nr * sizeof(*pm));
	int ret;

	ASSERT_NE(NULL, pm);
	ret = lab_pagemap_read(env->pm_fd, p, nr, pm);
	ASSERT_EQ(0, ret) TH_LOG("pagemap: %s", strerror(-ret));
	return pm;
}

static sigjmp_buf probe_env;
/* What the last SIGSEGV that probe() or first_bad_caught() caught said. */
static siginfo_t probe_info;

static void probe_fault(int sig, siginfo_t *info, void *ucontext)
{
	probe_info = *info;
	siglongjmp(probe_env, sig);
}

/*
 * Makes SIGSEGV jump back to probe_env with probe_info filled in; @old
 * keeps the action to put back with sigaction(SIGSEGV, @old, NULL).
 */
static void probe_catch(struct sigaction *old)
{
	struct sigaction sa = { .sa_sigaction = probe_fault,
				.sa_flags = SA_SIGINFO };

	sigaction(SIGSEGV, &sa, old);
}

/*
 * Writes (@write) or reads the first word of page @page of @p and returns
 * the signal that stopped it (SIGSEGV, described in probe_info), or 0.  A
 * write stores the word that is already there, so the data does not
 * change.
 */
static int probe(char *p, size_t page, bool write)
{
	volatile uint64_t *w = (volatile uint64_t *)(p + page * PSZ);
	struct sigaction old;
	int sig;

	probe_catch(&old);
	sig = sigsetjmp(probe_env, 1);
	if (!sig) {
		uint64_t v = *w;

		if (write)
			*w = v;
	}
	sigaction(SIGSEGV, &old, NULL);
	return sig;
}

/*
 * The setup of a fixture of LAB_KERNEL_VARIANTS(): skips the variants for
 * the other kernel (@flavour is the variant's), then lab_env_setup() for 64 kB
 * folios.
 */
static void mp_kernel_setup(struct __test_metadata *_metadata,
			    struct lab_env *env, const char *flavour)
{
	lab_env_init(env, MP_SWITCH);
	LAB_REQUIRE_FLAVOUR(flavour, "variant for the %s kernel", flavour);
	lab_env_setup(_metadata, env, MP_SWITCH, 64, true);
}

FIXTURE(mech) {
	struct lab_env env;
};

LAB_KERNEL_VARIANTS(mech);

FIXTURE_SETUP(mech)
{
	mp_kernel_setup(_metadata, &self->env, variant->flavour);
}

FIXTURE_TEARDOWN(mech)
{
	lab_env_teardown(_metadata, &self->env);
}

#define MECH_FOLIOS	16
#define MP_LOOKUPS	"mp_normal_page"

/* Adds the kprobe that mp_counted() reads, on vm_normal_page(). */
static void mp_lookups_probe(struct __test_metadata *_metadata)
{
	int err = lab_kprobe_add(MP_LOOKUPS, "vm_normal_page");

	ASSERT_EQ(0, err) TH_LOG("kprobe on vm_normal_page: %s",
				 strerror(-err));
}

/*
 * mprotect(@p, @len, @prot), or pkey_mprotect() with key @pkey when it is
 * not -1, counting the vm_normal_page() calls it makes (the kprobe of
 * mp_lookups_probe()).  Returns the count.
 */
static long long mp_counted(struct __test_metadata *_metadata, char *p,
			    size_t len, int prot, int pkey)
{
	long long h0, h1;
	int ret, err;

	h0 = lab_kprobe_hits(MP_LOOKUPS);
	ret = pkey < 0 ? mprotect(p, len, prot) :
			 pkey_mprotect(p, len, prot, pkey);
	err = errno;
	h1 = lab_kprobe_hits(MP_LOOKUPS);
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", pkey < 0 ? "mprotect" :
				 "pkey_mprotect", strerror(err));
	ASSERT_LE(0, h0);
	ASSERT_LE(h0, h1);
	return h1 - h0;
}

/*
 * Fails unless @hits vm_normal_page() calls to make @n private exclusive
 * PTEs writable (@what) show the path of the mode: with the switch on
 * (@batched), at most one per 4 PTEs (the lookup that finds each batch;
 * exclusivity is then read from the pages); with it off and on stock,
 * at least one per PTE (can_change_pte_writable() asks for each).
 */
static void assert_lookups(struct __test_metadata *_metadata,
			   const struct lab_env *env, bool batched,
			   long long hits, size_t n, const char *what)
{
	ksft_print_msg("%s: %lld vm_normal_page() calls for %zu PTEs %s\n",
		       env->mode, hits, n, what);
	if (batched) {
		ASSERT_LE(hits * 4, (long long)n)
			TH_LOG("%s: more than one lookup per 4 PTEs %s: the PTEs were not batched",
			       env->mode, what);
	} else {
		ASSERT_LE((long long)n, hits)
			TH_LOG("%s: fewer lookups than PTEs %s: 6.12 looks up every PTE it makes writable",
			       env->mode, what);
	}
}

/*
 * Proves the batch by its mechanism, on both arches: making private
 * exclusive anonymous PTEs writable again (mprotect(PROT_READ), then
 * PROT_READ|PROT_WRITE) asks vm_normal_page() once per PTE on stock 6.12
 * and with the switch off, and once per folio with the switch on (see
 * assert_lookups()).  16 folios of 64 kB, 256 PTEs, half a PMD into a 2 MB
 * region, counted across the second mprotect().  Every page must be
 * writable in place afterwards (same PFN: no copy-on-write), with its
 * data.
 */
TEST_F_TIMEOUT(mech, private_lookups, 120)
{
	struct lab_env *env = &self->env;
	const size_t len = MECH_FOLIOS * env->folio, n = len / PSZ;
	long long hits;
	uint64_t *pm;
	size_t i;
	char *p;

	mp_lookups_probe(_metadata);
	lab_env_mode(_metadata, env, variant->value > 0);

	p = mp_map(len, LAB_SZ_2M, LAB_SZ_2M / 4, MAP_PRIVATE);
	ASSERT_NE(NULL, p);
	fill(p, n, 1);
	assert_folios(_metadata, env, p, MECH_FOLIOS);
	pm = pagemap(_metadata, env, p, n);

	ASSERT_EQ(0, mprotect(p, len, PROT_READ));
	hits = mp_counted(_metadata, p, len, RW, -1);

	for (i = 0; i < n; i++) {
		uint64_t pfn;

		fill_page(p, i, 2);
		ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd, p + i * PSZ, &pfn));
		ASSERT_EQ(pm[i] & LAB_PM_PFN_MASK, pfn)
			TH_LOG("%s: page %zu was copied on write: mprotect() left an exclusive page read-only",
			       env->mode, i);
	}
	ASSERT_EQ(n, first_bad(p, n, 2));
	free(pm);
	munmap(p, len);

	assert_lookups(_metadata, env, variant->value > 0, hits, n,
		       "made writable");
}

/* The layouts of walk_choice, in its order. */
enum walk_layout {
	WALK_NO_THP, WALK_SMALL, WALK_LARGE, WALK_MIXED, WALK_SHIFTED,
	NR_WALK_LAYOUTS
};
static const char *const walk_layout_name[NR_WALK_LAYOUTS] = {
	"4 kB pages, VMA without THP", "4 kB pages, VMA with 64 kB mTHP",
	"64 kB folios", "a 64 kB folio, then 4 kB pages",
	"64 kB shmem folios moved 32 kB off a 64 kB boundary",
};

/*
 * The kprobes of walk_choice, event and function: the patched kernel's
 * four, and stock's one (which has none of them).
 */
enum { WALK_UNBATCHED, WALK_LOOK, WALK_BATCHED, WALK_REST, NR_WALK_PROBES };
static const char *const walk_probe[NR_WALK_PROBES][2] = {
	[WALK_UNBATCHED] = { "mp_walk_unbatched", "__change_protection" },
	[WALK_LOOK] = { "mp_walk_look", "mprotect_starts_large" },
	[WALK_BATCHED] = { "mp_walk_batched", "change_pte_range_batched" },
	[WALK_REST] = { "mp_walk_rest", "change_ptes_unbatched" },
};

static const char *const walk_stock_probe[1][2] = {
	{ "mp_walk_stock", "change_protection" },
};

/*
 * Whether pte_batch_hint() can report a contiguous block (arm64).  There
 * the batched copy looks for a batch again at every block and never hands
 * a page table to the one-PTE loop, change_ptes_unbatched(), which
 * elsewhere takes the rest of a page table after two lookups in a row
 * found no batch.  And there a shared mapping is batched only in blocks:
 * a page table of its large folios takes the batched copy only if a block
 * is among its first entries, so shmem folios mapped off a 64 kB boundary
 * (no block) are left to the unbatched walk.
 */
#ifdef __aarch64__
#define WALK_BLOCKS	true
#else
#define WALK_BLOCKS	false
#endif

/*
 * The calls of walk_probe[@probe] that two changes of one page table in
 * @layout make with the switch @on: the unbatched walk takes both unless
 * the switch is on over a page table that starts with a large folio, where
 * the batched copy takes them; the look runs once per change before the
 * walk wherever the VMA may hold large folios and the switch is on, and
 * once more in the batched walk.  In the mixed layout the batched copy
 * hands the 4 kB pages after its two failed lookups to the one-PTE loop,
 * once per change, except where lookups resume (WALK_BLOCKS).  The
 * shifted layout (shared) is batched as the large one, except with
 * WALK_BLOCKS, where it has no block and takes the unbatched walk.
 */
static long long walk_want(int probe, bool on, enum walk_layout layout)
{
	const bool batched = on && (layout == WALK_LARGE ||
				    layout == WALK_MIXED ||
				    (layout == WALK_SHIFTED &&
				     !WALK_BLOCKS));

	switch (probe) {
	case WALK_UNBATCHED:
		return batched ? 0 : 2;
	case WALK_LOOK:
		return !on || layout == WALK_NO_THP ? 0 : batched ? 4 : 2;
	case WALK_BATCHED:
		return batched ? 2 : 0;
	default:
		return on && layout == WALK_MIXED && !WALK_BLOCKS ? 2 : 0;
	}
}

#define WALK_LEN	(512 * LAB_SZ_1K)

/*
 * Maps WALK_LEN bytes for @layout and writes them with pattern @tag: the
 * first two faulted while every mTHP size is off, so in 4 kB pages (which
 * it checks), the first VMA with MADV_NOHUGEPAGE; lab_env_mode() then sets
 * the switch and 64 kB mTHP on, before the third is faulted.  The mixed
 * layout faults its first 64 kB folio with mTHP on and the rest in 4 kB
 * pages with it off (both checked), then turns it on again.  The shifted
 * layout is the large one in a MAP_SHARED anonymous (shmem) mapping,
 * checked, then moved with mremap() to 32 kB past a 2 MB boundary, in the
 * same page table: each 64 kB aligned range of PTEs then maps the halves
 * of two folios, which arm64 cannot make a contiguous block.
 */
static char *walk_map(struct __test_metadata *_metadata, struct lab_env *env,
		      int value, enum walk_layout layout, unsigned int tag)
{
	size_t size;
	char *p;

	if (layout == WALK_LARGE || layout == WALK_MIXED ||
	    layout == WALK_SHIFTED)
		lab_env_mode(_metadata, env, value > 0);
	else
		ASSERT_EQ(0, lab_thp_only(&env->thp, 0));
	if (layout == WALK_NO_THP) {
		p = lab_map_aligned(WALK_LEN, LAB_SZ_2M, 0, RW,
				    MAP_PRIVATE | MAP_ANONYMOUS);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, madvise(p, WALK_LEN, MADV_NOHUGEPAGE));
	} else {
		p = mp_map(WALK_LEN, LAB_SZ_2M, 0, layout == WALK_SHIFTED ?
			   MAP_SHARED : MAP_PRIVATE);
		ASSERT_NE(NULL, p);
	}
	if (layout == WALK_MIXED) {
		/* the first 64 kB as one folio, the rest with mTHP off */
		p[0] = 1;
		ASSERT_EQ(0, lab_folio_mapped_size(env->pm_fd, env->kpf_fd, p,
						   env->folio, &size));
		ASSERT_EQ(env->folio, size)
			TH_LOG("%s: the first %zu bytes are no folio",
			       walk_layout_name[layout], env->folio);
		ASSERT_EQ(0, lab_thp_only(&env->thp, 0));
	}
	fill(p, WALK_LEN / PSZ, tag);
	if (layout == WALK_LARGE)
		return p;
	if (layout == WALK_SHIFTED) {
		char *q = lab_map_aligned(WALK_LEN, LAB_SZ_2M, 32 * LAB_SZ_1K,
					  RW, MAP_PRIVATE);

		ASSERT_NE(NULL, q);
		assert_folios(_metadata, env, p, WALK_LEN / env->folio);
		p = mremap(p, WALK_LEN, WALK_LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
			   q);
		ASSERT_EQ(q, p) TH_LOG("mremap: %s", strerror(errno));
		return p;
	}
	lab_assert_small_pages(_metadata, env, p,
			       layout == WALK_MIXED ? env->folio / PSZ : 0,
			       WALK_LEN / PSZ, walk_layout_name[layout]);
	lab_env_mode(_metadata, env, value > 0);
	return p;
}

/*
 * Proves which walk change_protection() takes: with mprotect_batch on, it
 * looks before the walk for a page table that starts with a large folio
 * and leaves a range with none to __change_protection(), the unbatched
 * walk, built as 6.12's.  Kprobes count the calls of
 * __change_protection(), mprotect_starts_large() (the look at a page
 * table), change_pte_range_batched() and change_ptes_unbatched() (the
 * one-PTE loop the batched copy hands the rest of a page table to)
 * across mprotect(PROT_READ) and back of 512 kB, one VMA, in five
 * layouts: 4 kB pages in a VMA that cannot take large folios
 * (MADV_NOHUGEPAGE), 4 kB pages in a VMA that can (faulted with mTHP off,
 * then 64 kB mTHP on), 64 kB folios, one 64 kB folio followed by 4 kB
 * pages, and 64 kB shmem folios moved 32 kB off a 64 kB boundary.  With
 * the switch off each of the two calls takes __change_protection() and
 * nothing looks.  With it on, the first layout takes
 * __change_protection() without a look, the second looks once per call
 * and takes __change_protection(), and the third and fourth take the
 * batched copy (one page table per call, looked at twice: before the walk and in
 * it) and never __change_protection(); the mixed one also hands its 4 kB
 * pages to change_ptes_unbatched() on x86_64, not on arm64, where lookups
 * resume at a contiguous block; the shifted shmem folios are batched as
 * the aligned ones on x86_64, and left to __change_protection() on arm64,
 * where a shared mapping's batch starts only at a contiguous block
 * (walk_want()).  Stock 6.12 has none of the
 * four functions; there the test counts change_protection(), two calls in
 * every layout.  The data
 * must survive every layout.
 */
TEST_F_TIMEOUT(mech, walk_choice, 120)
{
	const bool stock = variant->value < 0, on = variant->value > 0;
	const char *const (*probe)[2] = stock ? walk_stock_probe : walk_probe;
	const int nr_probes = stock ? 1 : NR_WALK_PROBES;
	struct lab_env *env = &self->env;
	long long h0[NR_WALK_PROBES], hits[NR_WALK_PROBES], want;
	int layout, i, err;
	char *p;

	for (i = 0; i < nr_probes; i++) {
		err = lab_kprobe_add(probe[i][0], probe[i][1]);
		ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", probe[i][1],
					 strerror(-err));
	}
	for (layout = 0; layout < NR_WALK_LAYOUTS; layout++) {
		p = walk_map(_metadata, env, variant->value, layout, 3 + layout);
		if (layout == WALK_LARGE)
			assert_folios(_metadata, env, p, WALK_LEN / env->folio);
		for (i = 0; i < nr_probes; i++)
			h0[i] = lab_kprobe_hits(probe[i][0]);
		ASSERT_EQ(0, mprotect(p, WALK_LEN, PROT_READ));
		ASSERT_EQ(0, mprotect(p, WALK_LEN, RW));
		for (i = 0; i < nr_probes; i++) {
			hits[i] = lab_kprobe_hits(probe[i][0]);
			ASSERT_LE(0, h0[i]);
			ASSERT_LE(h0[i], hits[i]);
			hits[i] -= h0[i];
		}
		ASSERT_EQ(WALK_LEN / PSZ, first_bad(p, WALK_LEN / PSZ,
						    3 + layout));
		munmap(p, WALK_LEN);

		for (i = 0; i < nr_probes; i++) {
			/* stock: one change_protection() call per change */
			want = stock ? 2 : walk_want(i, on, layout);
			ksft_print_msg("%s, %s: %lld %s() calls\n",
				       stock ? "stock" : env->mode,
				       walk_layout_name[layout], hits[i],
				       probe[i][1]);
			ASSERT_EQ(want, hits[i])
				TH_LOG("%s, %s: %lld %s() calls for two mprotect() calls of one page table, not %lld",
				       stock ? "stock" : env->mode,
				       walk_layout_name[layout], hits[i],
				       probe[i][1], want);
		}
	}
}

/*
 * Proves the arm64 batch by its mechanism: stock 6.12 (and the switch off)
 * takes each PTE out with ptep_modify_prot_start(), which unfolds the
 * contiguous block of a 64 kB folio (set_pte_at() folds it again when the
 * last entry is written); the batch clears and sets whole blocks without
 * unfolding them.  16 folios of 64 kB, mprotect(PROT_READ) and back, twice:
 * the __contpte_try_unfold() calls counted across the mprotect() calls must
 * be at most one per 8 folio changes with the switch on, and at least one
 * per folio change with it off and on stock.  x86_64 has no contiguous
 * PTEs; there the test skips.
 */
TEST_F_TIMEOUT(mech, contpte_unfolds, 120)
{
	struct lab_env *env = &self->env;
	const size_t len = MECH_FOLIOS * env->folio, n = len / PSZ;
	long long h0, h1, hits = 0;
	size_t changes = 0;
	struct utsname u;
	int err, r;
	char *p;

	ASSERT_EQ(0, uname(&u));
	if (strcmp(u.machine, "aarch64"))
		SKIP(return, "%s has no contiguous PTEs: nothing to unfold",
		     u.machine);
	err = lab_kprobe_add("mp_unfold", "__contpte_try_unfold");
	ASSERT_EQ(0, err) TH_LOG("kprobe on __contpte_try_unfold: %s",
				 strerror(-err));
	lab_env_mode(_metadata, env, variant->value > 0);

	p = mp_map(len, LAB_SZ_2M, LAB_SZ_2M / 4, MAP_PRIVATE);
	ASSERT_NE(NULL, p);
	fill(p, n, 1);
	assert_folios(_metadata, env, p, MECH_FOLIOS);
	for (r = 0; r < 2; r++) {
		h0 = lab_kprobe_hits("mp_unfold");
		ASSERT_EQ(0, mprotect(p, len, PROT_READ));
		ASSERT_EQ(0, mprotect(p, len, RW));
		h1 = lab_kprobe_hits("mp_unfold");
		ASSERT_LE(0, h0);
		ASSERT_LE(h0, h1);
		hits += h1 - h0;
		changes += 2 * MECH_FOLIOS;
	}
	ASSERT_EQ(n, first_bad(p, n, 1));
	munmap(p, len);

	ksft_print_msg("%s: %lld __contpte_try_unfold() calls for %zu changes of a 64 kB folio\n",
		       env->mode, hits, changes);
	if (variant->value > 0) {
		ASSERT_LE(hits * 8, (long long)changes)
			TH_LOG("%s: more than one unfold per 8 folio changes: the blocks were not changed whole",
			       env->mode);
	} else {
		ASSERT_LE((long long)changes, hits)
			TH_LOG("%s: fewer unfolds than folio changes: 6.12 unfolds every block it changes",
			       env->mode);
	}
}

FIXTURE(bbm) {
	struct lab_env env;
	/* /dev/kmsg, open from before the protection changes, or -1. */
	int kmsg;
};

LAB_KERNEL_VARIANTS(bbm);

FIXTURE_SETUP(bbm)
{
	self->kmsg = -1;
	mp_kernel_setup(_metadata, &self->env, variant->flavour);
}

FIXTURE_TEARDOWN(bbm)
{
	if (self->kmsg >= 0)
		close(self->kmsg);
	lab_env_teardown(_metadata, &self->env);
}

#define BBM_FOLD	"mp_fold"
#define BBM_MAX_STEPS	4
#define BBM_WAIT_NS	(60 * 1000000000LL)

/*
 * One protection change of a bbm test: @prot over half @half (0 or 1) of
 * every folio, or over the whole region if @half is -1.
 */
struct bbm_change {
	const char *what;
	int half;
	int prot;
};

/*
 * A thread that reads @nr pages at @p on CPU 1 while the test changes
 * their protection on CPU 0; see bbm_reader_main().  The test sets @stop;
 * the thread counts its whole @passes and keeps the first word it read
 * off the pattern of region @tag: page @bad (@nr if none), word
 * @bad_word, read as @bad_val.
 */
struct bbm_reader {
	const char *p;
	size_t nr;
	unsigned int tag;
	int stop;
	unsigned long passes;
	size_t bad;
	size_t bad_word;
	uint64_t bad_val;
};

/*
 * Reads one word of every page, pass after pass, until told to stop: word
 * w of each page in pass w (modulo the words of a page), so that the
 * passes go over the whole of each page.  Must not use ASSERT.
 */
static void *bbm_reader_main(void *arg)
{
	struct bbm_reader *r = arg;
	unsigned long passes = 0;
	size_t i, w;
	uint64_t v;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		w = passes % WORDS;
		for (i = 0; i < r->nr; i++) {
			v = ((volatile const uint64_t *)(r->p + i * PSZ))[w];
			if (v != lab_pat(r->tag, i, w) && r->bad == r->nr) {
				r->bad = i;
				r->bad_word = w;
				r->bad_val = v;
			}
		}
		__atomic_store_n(&r->passes, ++passes, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * Waits until the reader has read every page once more: two passes, since
 * the one under way may have read some pages before the call.  Returns 0,
 * or -ETIMEDOUT after BBM_WAIT_NS.
 */
static int bbm_wait_pass(struct bbm_reader *r)
{
	unsigned long want = __atomic_load_n(&r->passes, __ATOMIC_ACQUIRE) + 2;
	long long t0 = lab_now_ns();

	while (__atomic_load_n(&r->passes, __ATOMIC_ACQUIRE) < want) {
		if (lab_now_ns() - t0 > BBM_WAIT_NS)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

/* Makes change @c over @nr folios of @folio bytes at @p.  0 or -errno. */
static int bbm_step(char *p, size_t nr, size_t folio,
		    const struct bbm_change *c)
{
	size_t f;

	if (c->half < 0)
		return mprotect(p, nr * folio, c->prot) ? -errno : 0;
	for (f = 0; f < nr; f++)
		if (mprotect(p + f * folio + c->half * folio / 2, folio / 2,
			     c->prot))
			return -errno;
	return 0;
}

/*
 * The body of the bbm tests: 16 private folios of 64 kB, half a PMD into
 * a 2 MB region, go through the @n changes of @steps while a thread on
 * CPU 1 reads one word of every page, pass after pass, and checks it; the
 * reader goes over every page after each change and must read every word
 * right.  Every page must then be writable, with the data written.  No
 * /dev/kmsg record logged from before the first change to after the last
 * may say "break-before-make" (the check of the arm64 debug kernels,
 * CONFIG_DEBUG_VM).  Change @fold must call __contpte_try_fold() at least
 * once per block (kprobe), as 6.12's per-PTE path does when it writes the
 * last entry of a block whose entries agree again: the block was unfolded
 * before, and must be folded through contpte_convert(), which breaks
 * before make.  x86_64 has no contiguous PTEs; there the tests skip.  Needs
 * two CPUs, as the lab boots.
 */
static void bbm_run(struct __test_metadata *_metadata,
		    FIXTURE_DATA(bbm) *self, int value,
		    const struct bbm_change *steps, int n, int fold)
{
	struct lab_env *env = &self->env;
	const size_t len = MECH_FOLIOS * env->folio, nr = len / PSZ;
	long long before[BBM_MAX_STEPS] = { 0 }, after[BBM_MAX_STEPS] = { 0 };
	struct bbm_reader rd = { 0 };
	pthread_attr_t attr;
	char line[512];
	struct utsname u;
	cpu_set_t cpus;
	int err, s;
	long online;
	pthread_t thr;
	char *p;

	ASSERT_GE(BBM_MAX_STEPS, n);
	ASSERT_EQ(0, uname(&u));
	if (strcmp(u.machine, "aarch64"))
		SKIP(return, "%s has no contiguous PTEs: nothing to fold",
		     u.machine);
	online = sysconf(_SC_NPROCESSORS_ONLN);
	ASSERT_LE(2, online)
		TH_LOG("%ld CPU online: the reader needs a second one (the lab boots 2 vCPUs)",
		       online);
	err = lab_kprobe_add(BBM_FOLD, "__contpte_try_fold");
	ASSERT_EQ(0, err) TH_LOG("kprobe on __contpte_try_fold: %s",
				 strerror(-err));
	lab_env_mode(_metadata, env, value > 0);

	p = mp_map(len, LAB_SZ_2M, LAB_SZ_2M / 4, MAP_PRIVATE);
	ASSERT_NE(NULL, p);
	fill(p, nr, 1);
	assert_folios(_metadata, env, p, MECH_FOLIOS);

	self->kmsg = lab_kmsg_open_end();
	ASSERT_LE(0, self->kmsg) TH_LOG("/dev/kmsg: %s",
					strerror(-self->kmsg));
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus))
		TH_LOG("pinning the test to CPU 0: %s", strerror(errno));
	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	ASSERT_EQ(0, pthread_attr_init(&attr));
	err = pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	ASSERT_EQ(0, err) TH_LOG("the reader's CPU: %s", strerror(err));
	rd.p = p;
	rd.nr = nr;
	rd.tag = 1;
	rd.bad = nr;
	err = pthread_create(&thr, &attr, bbm_reader_main, &rd);
	pthread_attr_destroy(&attr);
	ASSERT_EQ(0, err) TH_LOG("the reader on CPU 1: %s", strerror(err));

	/*
	 * No ASSERT until the reader is joined.  It goes over the pages once
	 * first, so that CPU 1 holds the blocks whole in its TLB.
	 */
	err = bbm_wait_pass(&rd);
	for (s = 0; s < n && !err; s++) {
		before[s] = lab_kprobe_hits(BBM_FOLD);
		err = bbm_step(p, MECH_FOLIOS, env->folio, &steps[s]);
		after[s] = lab_kprobe_hits(BBM_FOLD);
		if (!err)
			err = bbm_wait_pass(&rd);
	}
	__atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(thr, NULL));

	ASSERT_EQ(0, err)
		TH_LOG("%s: %s: %s", env->mode,
		       s ? steps[s - 1].what : "before the first change",
		       err == -ETIMEDOUT ?
		       "the reader did not go over the pages in 60 s" :
		       strerror(-err));
	ASSERT_EQ(nr, rd.bad)
		TH_LOG("%s: the reader on CPU 1 read %#llx in word %zu of page %zu: not the data",
		       env->mode, (unsigned long long)rd.bad_val, rd.bad_word,
		       rd.bad);
	ASSERT_LE(4UL, rd.passes);
	fill(p, nr, 2);
	ASSERT_EQ(nr, first_bad(p, nr, 2));
	munmap(p, len);

	err = lab_kmsg_find(self->kmsg, "break-before-make", line,
			    sizeof(line));
	ASSERT_LE(0, err) TH_LOG("/dev/kmsg: %s", strerror(-err));
	ASSERT_EQ(0, err) TH_LOG("%s: the kernel logged: %s", env->mode, line);

	for (s = 0; s < n; s++) {
		ASSERT_LE(0, before[s]);
		ASSERT_LE(before[s], after[s]);
		ksft_print_msg("%s: %lld __contpte_try_fold() calls for %d blocks: %s\n",
			       env->mode, after[s] - before[s], MECH_FOLIOS,
			       steps[s].what);
	}
	ASSERT_LE((long long)MECH_FOLIOS, after[fold] - before[fold])
		TH_LOG("%s: %lld __contpte_try_fold() calls for %d blocks: %s: a block unfolded before must be folded through __contpte_try_fold(), as 6.12 does",
		       env->mode, after[fold] - before[fold], MECH_FOLIOS,
		       steps[fold].what);
}

/*
 * Proves, on arm64, that a 64 kB block which an earlier partial mprotect()
 * unfolded is folded again only through __contpte_try_fold() when a later
 * partial change makes its entries agree again, never by writing contiguous
 * entries straight over entries that other CPUs may still cache: the first
 * half of each folio made read-only (which unfolds its block), then the
 * second half (at least one fold per block in this change), then the whole
 * region read-write again.  See bbm_run() for the reader, the data and the
 * kernel log check.
 */
TEST_F_TIMEOUT(bbm, halves_then_whole, 300)
{
	static const struct bbm_change steps[] = {
		{ "the first half of each folio made read-only", 0, PROT_READ },
		{ "the second half of each folio made read-only", 1, PROT_READ },
		{ "the whole region made read-write", -1, RW },
	};

	bbm_run(_metadata, self, variant->value, steps, 3, 1);
}

/*
 * Proves the same for a change of whole blocks: a block whose first half
 * was made read-only and then read-write again stays unfolded (6.12 folds
 * only when it writes the last entry of a block), and when the whole
 * region is then made read-only, each such block, written whole, must be
 * folded through __contpte_try_fold() (at least one fold per block in that
 * change), not written contiguous over the single entries.  Then the whole
 * region is made read-write again.  See bbm_run().
 */
TEST_F_TIMEOUT(bbm, half_back_then_whole, 300)
{
	static const struct bbm_change steps[] = {
		{ "the first half of each folio made read-only", 0, PROT_READ },
		{ "the first half of each folio made read-write again", 0, RW },
		{ "the whole region made read-only", -1, PROT_READ },
		{ "the whole region made read-write", -1, RW },
	};

	bbm_run(_metadata, self, variant->value, steps, 4, 2);
}

FIXTURE(wprot) {
	struct lab_env env;
	pid_t child;
};

FIXTURE_VARIANT(wprot) {
	/* Change the protection of the second half of the folio only. */
	bool half;
};

FIXTURE_VARIANT_ADD(wprot, whole_folio) {
	.half = false,
};

FIXTURE_VARIANT_ADD(wprot, second_half) {
	.half = true,
};

FIXTURE_SETUP(wprot)
{
	self->child = -1;
	lab_env_setup(_metadata, &self->env, MP_SWITCH, 64, true);
}

FIXTURE_TEARDOWN(wprot)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	lab_env_teardown(_metadata, &self->env);
}

/*
 * Child: waits for the parent's go, then checks that its copy of the
 * shared half (@nr pages at @p, from page @first of region @tag) is
 * unchanged, and writes the first page that changed, or -1.  Must not use
 * ASSERT.
 */
static void __attribute__((noreturn)) wprot_child(const char *p, size_t first,
						   size_t nr, unsigned int tag,
						   int rfd, int wfd)
{
	long bad = -1;
	size_t i;
	char go;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(rfd, &go, 1) != 1)
		_exit(1);
	i = lab_check_pat(p, first, nr, tag);
	if (i < nr * WORDS)
		bad = first + i / WORDS;
	_exit(write(wfd, &bad, sizeof(bad)) == sizeof(bad) ? 0 : 1);
}

/*
 * Proves mprotect() makes writable only the pages of a private folio that
 * are exclusive to the process, page by page inside a batch.  One 64 kB
 * folio: its first half exclusive, its second half shared with a child
 * (MADV_DONTFORK on the first half during fork(), MADV_DOFORK after, so
 * the VMA is whole again).  mprotect(PROT_READ), then PROT_READ|
 * PROT_WRITE, over the whole folio (one batch with both kinds of page) or
 * over its second half only (a batch that starts in the middle of a folio
 * whose head page is exclusive: the case upstream's cf1b80dc31a1 fixed).
 * Then a write to each page: an exclusive page must be written in place
 * (same PFN), a shared one must fault and be copied (new PFN), and the
 * child must still read its own data.
 */
TEST_F_TIMEOUT(wprot, write_not_widened, 300)
{
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, n = folio / PSZ, half = n / 2;
	size_t i, from, inplace_shared, copied_excl;
	int go[2], rep[2], status, m;
	unsigned int tag;
	uint64_t before, after;
	uint64_t *pm;
	long bad;
	char *p;

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		tag = 1 + m;
		p = mp_map(folio, folio, 0, MAP_PRIVATE);
		ASSERT_NE(NULL, p);
		fill(p, n, tag);
		assert_folios(_metadata, env, p, 1);

		ASSERT_EQ(0, madvise(p, folio / 2, MADV_DONTFORK));
		ASSERT_EQ(0, pipe(go));
		ASSERT_EQ(0, pipe(rep));
		self->child = fork();
		ASSERT_LE(0, self->child);
		if (!self->child) {
			close(go[1]);
			close(rep[0]);
			wprot_child(p + folio / 2, half, n - half, tag, go[0],
				    rep[1]);
		}
		close(go[0]);
		close(rep[1]);
		ASSERT_EQ(0, madvise(p, folio / 2, MADV_DOFORK));

		from = variant->half ? half : 0;
		ASSERT_EQ(0, mprotect(p + from * PSZ, (n - from) * PSZ,
				      PROT_READ));
		ASSERT_EQ(0, mprotect(p + from * PSZ, (n - from) * PSZ, RW));

		/* The setup worked: one folio, the first half exclusive. */
		pm = pagemap(_metadata, env, p, n);
		for (i = 0; i < n; i++) {
			ASSERT_EQ((pm[0] & LAB_PM_PFN_MASK) + i,
				  pm[i] & LAB_PM_PFN_MASK)
				TH_LOG("%s: page %zu is not in the folio",
				       env->mode, i);
			ASSERT_EQ(i < half, !!(pm[i] & LAB_PM_MMAP_EXCLUSIVE))
				TH_LOG("%s: page %zu is %sshared with the child",
				       env->mode, i, i < half ? "" : "not ");
		}
		free(pm);
		ASSERT_EQ(n, first_bad(p, n, tag));

		inplace_shared = copied_excl = 0;
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd, p + i * PSZ,
						     &before));
			fill_page(p, i, tag + 8);
			ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd, p + i * PSZ,
						     &after));
			if (i >= half && before == after)
				inplace_shared++;
			if (i < half && i >= from && before != after)
				copied_excl++;
		}
		ASSERT_EQ(n, first_bad(p, n, tag + 8));

		ASSERT_EQ(1, write(go[1], "g", 1));
		ASSERT_EQ((ssize_t)sizeof(bad), read(rep[0], &bad, sizeof(bad)))
			TH_LOG("child died before reporting");
		ASSERT_EQ(self->child, waitpid(self->child, &status, 0));
		self->child = -1;
		close(go[1]);
		close(rep[0]);

		ASSERT_EQ(0UL, inplace_shared)
			TH_LOG("%s: %zu shared pages written in place: mprotect() made them writable",
			       env->mode, inplace_shared);
		ASSERT_EQ(-1, bad)
			TH_LOG("%s: the child's page %ld changed: the parent wrote into the shared folio",
			       env->mode, bad);
		ASSERT_EQ(0UL, copied_excl)
			TH_LOG("%s: %zu exclusive pages were copied on write: mprotect() left them read-only",
			       env->mode, copied_excl);
		munmap(p, folio);
	}
}

FIXTURE(track) {
	struct lab_env env;
	int uffd;
};

FIXTURE_VARIANT(track) {
	int flags;
};

FIXTURE_VARIANT_ADD(track, private) {
	.flags = MAP_PRIVATE,
};

FIXTURE_VARIANT_ADD(track, shared) {
	.flags = MAP_SHARED,
};

FIXTURE_SETUP(track)
{
	self->uffd = -1;
	lab_env_setup(_metadata, &self->env, MP_SWITCH, 64, true);
}

FIXTURE_TEARDOWN(track)
{
	if (self->uffd >= 0)
		close(self->uffd);
	lab_env_teardown(_metadata, &self->env);
}

#define TRACK_FOLIOS	4

/*
 * Proves mprotect() keeps the write faults soft-dirty tracking needs, in
 * private and in shared (shmem) mappings.  4 folios of 64 kB are written,
 * clear_refs "4" clears their soft-dirty bits and write-protects them, and
 * the first half of each folio is written again: each folio then has
 * soft-dirty writable PTEs and clean read-only ones.  mprotect(PROT_READ)
 * and back must not give the clean half write permission on the strength
 * of the dirty half: after a write to every page, pagemap must show every
 * page soft-dirty, which for the clean half means its write faulted.
 * Before that write, the clean half must still read clean.  x86_64 only:
 * arm64 has no soft-dirty bit in 6.12.
 */
TEST_F_TIMEOUT(track, soft_dirty, 120)
{
	struct lab_env *env = &self->env;
	const size_t len = TRACK_FOLIOS * env->folio, n = len / PSZ;
	const size_t fpages = env->folio / PSZ;
	struct utsname u;
	uint64_t *pm;
	size_t i;
	char *p;
	int m;

	ASSERT_EQ(0, uname(&u));
	if (strcmp(u.machine, "x86_64"))
		SKIP(return, "%s has no soft-dirty bit in 6.12", u.machine);
	for (m = 0; m < env->nr_modes; m++) {
		p = mp_round(_metadata, env, m, TRACK_FOLIOS, variant->flags, 1 + m);
		ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs", "4"));
		for (i = 0; i < n; i++)
			if (i % fpages < fpages / 2)
				fill_page(p, i, 1 + m);

		ASSERT_EQ(0, mprotect(p, len, PROT_READ));
		ASSERT_EQ(0, mprotect(p, len, RW));

		pm = pagemap(_metadata, env, p, n);
		for (i = 0; i < n; i++)
			ASSERT_EQ(i % fpages < fpages / 2,
				  !!(pm[i] & LAB_PM_SOFT_DIRTY))
				TH_LOG("%s: page %zu reads %s after mprotect()",
				       env->mode, i, pm[i] & LAB_PM_SOFT_DIRTY ?
				       "soft-dirty" : "clean");
		free(pm);
		for (i = 0; i < n; i++)
			fill_page(p, i, 1 + m);
		pm = pagemap(_metadata, env, p, n);
		for (i = 0; i < n; i++)
			ASSERT_TRUE(!!(pm[i] & LAB_PM_SOFT_DIRTY))
				TH_LOG("%s: page %zu written but clean: mprotect() made it writable without a fault",
				       env->mode, i);
		free(pm);
		ASSERT_EQ(n, first_bad(p, n, 1 + m));
		munmap(p, len);
	}
}

/*
 * Proves mprotect() keeps userfaultfd write protection PTE by PTE.  4
 * folios of 64 kB registered for uffd-wp; UFFDIO_WRITEPROTECT on the second
 * half of each folio.  After mprotect(PROT_READ) and back, pagemap must
 * show the uffd-wp bit on exactly those halves (a PTE with the bit is
 * never made writable).  UFFDIO_WRITEPROTECT itself changes PTEs through
 * the same path; resolving the whole range must then clear every bit.  The
 * data must be intact.  Private anonymous memory only: shmem needs the
 * uffd-wp markers of a file mapping.
 */
TEST_F_TIMEOUT(track, uffd_wp, 120)
{
	struct lab_env *env = &self->env;
	const size_t len = TRACK_FOLIOS * env->folio, n = len / PSZ;
	const size_t fpages = env->folio / PSZ;
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = { 0 };
	struct uffdio_writeprotect wp = { 0 };
	uint64_t *pm;
	size_t i, f;
	char *p;
	int m;

	if (variant->flags == MAP_SHARED)
		SKIP(return, "uffd-wp of shmem needs PTE markers, not tested here");
	for (m = 0; m < env->nr_modes; m++) {
		p = mp_round(_metadata, env, m, TRACK_FOLIOS, variant->flags, 3 + m);

		self->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		ASSERT_LE(0, self->uffd) TH_LOG("userfaultfd: %s",
						strerror(errno));
		ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api));
		reg.range.start = (uintptr_t)p;
		reg.range.len = len;
		reg.mode = UFFDIO_REGISTER_MODE_WP;
		ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg))
			TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
		for (f = 0; f < TRACK_FOLIOS; f++) {
			wp.range.start = (uintptr_t)p + f * env->folio +
					 env->folio / 2;
			wp.range.len = env->folio / 2;
			wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
			ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_WRITEPROTECT,
					   &wp));
		}

		ASSERT_EQ(0, mprotect(p, len, PROT_READ));
		ASSERT_EQ(0, mprotect(p, len, RW));
		pm = pagemap(_metadata, env, p, n);
		for (i = 0; i < n; i++)
			ASSERT_EQ(i % fpages >= fpages / 2,
				  !!(pm[i] & LAB_PM_UFFD_WP))
				TH_LOG("%s: page %zu: uffd-wp bit %s after mprotect()",
				       env->mode, i, pm[i] & LAB_PM_UFFD_WP ?
				       "set" : "lost");
		free(pm);

		wp.range.start = (uintptr_t)p;
		wp.range.len = len;
		wp.mode = 0;
		ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_WRITEPROTECT, &wp));
		pm = pagemap(_metadata, env, p, n);
		for (i = 0; i < n; i++)
			ASSERT_FALSE(!!(pm[i] & LAB_PM_UFFD_WP))
				TH_LOG("%s: page %zu still uffd-wp after resolving",
				       env->mode, i);
		free(pm);
		ASSERT_EQ(n, first_bad(p, n, 3 + m));
		close(self->uffd);
		self->uffd = -1;
		munmap(p, len);
	}
}

FIXTURE(bound) {
	struct lab_env env;
};

FIXTURE_VARIANT(bound) {
	unsigned long folio_kb;
};

FIXTURE_VARIANT_ADD(bound, folio_64k) {
	.folio_kb = 64,
};

FIXTURE_VARIANT_ADD(bound, folio_2m) {
	.folio_kb = 2048,
};

FIXTURE_SETUP(bound)
{
	lab_env_setup(_metadata, &self->env, MP_SWITCH, variant->folio_kb, true);
}

FIXTURE_TEARDOWN(bound)
{
	lab_env_teardown(_metadata, &self->env);
}

/* Fails unless writes to pages [@lo, @hi) of @p fault and the others don't. */
static void assert_readonly(struct __test_metadata *_metadata,
			    const struct lab_env *env, char *p, size_t n,
			    size_t lo, size_t hi, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++)
		ASSERT_EQ(i >= lo && i < hi ? SIGSEGV : 0, probe(p, i, true))
			TH_LOG("%s: %s: a write to page %zu %s", env->mode,
			       what, i, i >= lo && i < hi ?
			       "did not fault" : "faulted");
}

/*
 * Proves a batch ends where the range ends, inside a folio, and where the
 * page table ends.  64 kB folios (4, aligned) and a 2 MB folio; the 2 MB
 * one is first moved with mremap() to 1 MB past a PMD boundary, so that its
 * PTEs sit in two page tables.  mprotect(PROT_READ) of a range that starts
 * and ends in the middle of a folio (pages 4 to 11 of each 64 kB folio; a
 * range over both page tables of the 2 MB one): exactly its pages must
 * fault on write.  Then mprotect(PROT_NONE) of the whole: every page must
 * fault on read (the protection NUMA hinting uses, applied by mprotect()).
 * mprotect() back to read-write: no page may fault.  The data must be
 * intact throughout.
 */
TEST_F_TIMEOUT(bound, partial_ranges, 300)
{
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, big = folio == LAB_SZ_2M;
	const size_t nf = big ? 1 : 4, len = nf * folio, n = len / PSZ;
	size_t f, lo, hi;
	char *p, *dst;
	int m;

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		p = mp_map(len, folio, 0, MAP_PRIVATE);
		ASSERT_NE(NULL, p);
		fill(p, n, 5 + m);
		assert_folios(_metadata, env, p, nf);
		if (big) {
			dst = mp_map(len, LAB_SZ_2M, LAB_SZ_1M, MAP_PRIVATE);
			ASSERT_NE(NULL, dst);
			ASSERT_EQ(dst, mremap(p, len, len,
					      MREMAP_MAYMOVE | MREMAP_FIXED,
					      dst))
				TH_LOG("mremap: %s", strerror(errno));
			p = dst;
			assert_folios(_metadata, env, p, 1);
			/* 128 pages on each side of the PMD boundary. */
			lo = n / 4;
			hi = n - n / 4;
			ASSERT_EQ(0, mprotect(p + lo * PSZ, (hi - lo) * PSZ,
					      PROT_READ));
			assert_readonly(_metadata, env, p, n, lo, hi,
					"across a page table boundary");
		} else {
			for (f = 0; f < nf; f++)
				ASSERT_EQ(0, mprotect(p + f * folio + folio / 4,
						      folio / 2, PROT_READ));
			for (f = 0; f < nf; f++)
				assert_readonly(_metadata, env,
						p + f * folio, folio / PSZ,
						folio / 4 / PSZ,
						3 * folio / 4 / PSZ,
						"middle of each folio");
		}
		ASSERT_EQ(n, first_bad(p, n, 5 + m));
		ASSERT_EQ(0, mprotect(p, len, PROT_NONE));
		for (f = 0; f < n; f++)
			ASSERT_EQ(SIGSEGV, probe(p, f, false))
				TH_LOG("%s: page %zu readable after PROT_NONE",
				       env->mode, f);
		ASSERT_EQ(0, mprotect(p, len, RW));
		assert_readonly(_metadata, env, p, n, 0, 0, "read-write again");
		ASSERT_EQ(n, first_bad(p, n, 5 + m));
		munmap(p, len);
	}
}

FIXTURE(pkey) {
	struct lab_env env;
	int pkey;
};

FIXTURE_SETUP(pkey)
{
	self->pkey = -1;
	lab_env_setup(_metadata, &self->env, MP_SWITCH, 64, true);
}

FIXTURE_TEARDOWN(pkey)
{
	if (self->pkey >= 0) {
		pkey_set(self->pkey, 0);
		pkey_free(self->pkey);
	}
	lab_env_teardown(_metadata, &self->env);
}

/*
 * Whether the CPU has protection keys (CPUID.7.0:ECX.PKU), whatever the
 * kernel does with them: QEMU's -cpu max has them, and so must the lab's
 * x86_64 kernels (configs/x86_64.config).
 */
static bool mp_cpu_has_pku(void)
{
#ifdef __x86_64__
	unsigned int a, b, c, d;

	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1U << 3));
#else
	return false;
#endif
}

/*
 * Counts the pages of @nr at @p that a read reaches with the access of
 * key @pkey denied, or that fault for another reason than that key.  A
 * caught fault leaves the signal handler's PKRU, which denies every key
 * but 0, so the key's own bits are set again after each.
 */
static size_t pkey_open_pages(char *p, size_t nr, int pkey)
{
	size_t i, open = 0;

	for (i = 0; i < nr; i++) {
		pkey_set(pkey, PKEY_DISABLE_ACCESS);
		if (probe(p, i, false) != SIGSEGV ||
		    probe_info.si_code != SEGV_PKUERR ||
		    probe_info.si_pkey != (unsigned int)pkey)
			open++;
	}
	pkey_set(pkey, 0);
	return open;
}

/*
 * Proves the protection key reaches every PTE of a batch: pkey_mprotect()
 * of 4 folios of 64 kB to a new key; with the key's access then denied, a
 * read of every page must fault with SEGV_PKUERR for that key.
 * mprotect(PROT_READ) and back keeps the key, through the batch that
 * makes exclusive pages writable in runs, and every page must fault so
 * again.  Both changes make the PTEs writable, and their vm_normal_page()
 * calls show that the switch on took the batch and the switch off and
 * stock took 6.12's path (assert_lookups()).  Fails on a CPU with PKU
 * where pkey_alloc() fails (the lab's x86_64 kernels have protection
 * keys); skips on others.
 */
TEST_F_TIMEOUT(pkey, key_on_every_pte, 120)
{
	struct lab_env *env = &self->env;
	const size_t len = 4 * env->folio, n = len / PSZ;
	long long hits;
	size_t open;
	char *p;
	int m;

	self->pkey = pkey_alloc(0, 0);
	if (self->pkey < 0) {
		ASSERT_FALSE(mp_cpu_has_pku())
			TH_LOG("pkey_alloc: %s, on a CPU with PKU: the lab's x86_64 kernels have protection keys (configs/x86_64.config)",
			       strerror(errno));
		SKIP(return, "pkey_alloc: %s: no protection keys here",
		     strerror(errno));
	}
	mp_lookups_probe(_metadata);
	for (m = 0; m < env->nr_modes; m++) {
		p = mp_round(_metadata, env, m, 4, MAP_PRIVATE, 7 + m);
		hits = mp_counted(_metadata, p, len, RW, self->pkey);
		assert_lookups(_metadata, env, env->sw.valid && m, hits, n,
			       "given a new key");
		open = pkey_open_pages(p, n, self->pkey);
		ASSERT_EQ(0UL, open)
			TH_LOG("%s: %zu of %zu pages not protected by their new key",
			       env->mode, open, n);
		ASSERT_EQ(0, mprotect(p, len, PROT_READ));
		hits = mp_counted(_metadata, p, len, RW, -1);
		assert_lookups(_metadata, env, env->sw.valid && m, hits, n,
			       "made writable with their key");
		open = pkey_open_pages(p, n, self->pkey);
		ASSERT_EQ(0UL, open)
			TH_LOG("%s: %zu of %zu pages lost their key when made writable again",
			       env->mode, open, n);
		ASSERT_EQ(n, first_bad(p, n, 7 + m));
		assert_folios(_metadata, env, p, 4);
		munmap(p, len);
	}
}

#ifdef __aarch64__
#ifndef PROT_MTE
#define PROT_MTE		0x20
#endif
#ifndef HWCAP2_MTE
#define HWCAP2_MTE		(1UL << 18)
#endif
#ifndef PR_SET_TAGGED_ADDR_CTRL
#define PR_SET_TAGGED_ADDR_CTRL	55
#define PR_GET_TAGGED_ADDR_CTRL	56
#define PR_TAGGED_ADDR_ENABLE	(1UL << 0)
#endif
#ifndef PR_MTE_TCF_SYNC
#define PR_MTE_TCF_NONE		0UL
#define PR_MTE_TCF_SYNC		(1UL << 1)
#endif

/* Turns synchronous tag check faults on (@on) or off for this thread. */
static int mte_checks(bool on)
{
	return prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE |
		     (on ? PR_MTE_TCF_SYNC : PR_MTE_TCF_NONE), 0, 0, 0);
}

/* @p with the logical tag @tag (bits 59:56 of the address). */
static char *mte_ptr(char *p, unsigned int tag)
{
	return (char *)(((uintptr_t)p & ~(0xfUL << 56)) |
			((uintptr_t)tag << 56));
}

/* Makes the logical tag of @tagged the tag of its 16-byte granule. */
__attribute__((target("arch=armv8.5-a+memtag")))
static void mte_set_tag(char *tagged)
{
	asm volatile("stg %0, [%0]"
		     : : "r"(tagged) : "memory");
}

/* The tag of the granule at @p: 0 for memory that is not Tagged. */
__attribute__((target("arch=armv8.5-a+memtag")))
static unsigned int mte_get_tag(char *p)
{
	uintptr_t r = (uintptr_t)p;

	asm volatile("ldg %0, [%0]"
		     : "+r"(r) : : "memory");
	return (r >> 56) & 0xf;
}

/*
 * first_bad() with SIGSEGV caught: the first page of @nr at @p whose data
 * is not region @tag's, @nr, or SIZE_MAX when a read faulted (probe_info
 * says where and why), so that a fault fails the test with the page it
 * hit instead of killing it.
 */
static size_t first_bad_caught(const char *p, size_t nr, unsigned int tag)
{
	volatile size_t ret = SIZE_MAX;
	struct sigaction old;

	probe_catch(&old);
	if (!sigsetjmp(probe_env, 1))
		ret = first_bad(p, nr, tag);
	sigaction(SIGSEGV, &old, NULL);
	return ret;
}

/* The tag the test gives page @i's first granule: never 0. */
static unsigned int mte_page_tag(size_t i)
{
	return 1 + i % 15;
}

/* Counts the pages of @nr at @p whose first granule has not their tag. */
static size_t mte_wrong_tags(char *p, size_t nr)
{
	size_t i, wrong = 0;

	for (i = 0; i < nr; i++)
		wrong += mte_get_tag(p + i * PSZ) != mte_page_tag(i);
	return wrong;
}

/*
 * Counts the pages of @nr at @p on which a read through the untagged
 * pointer takes no synchronous tag check fault.
 */
static size_t mte_unchecked(char *p, size_t nr)
{
	size_t i, open = 0;

	for (i = 0; i < nr; i++)
		open += probe(p, i, false) != SIGSEGV ||
			probe_info.si_code != SEGV_MTESERR;
	return open;
}

/*
 * Fails unless every page of @nr at @p still has its tag and takes a tag
 * check fault on a read through the wrong tag, after the change @change.
 */
static void mte_assert_kept(struct __test_metadata *_metadata,
			    const struct lab_env *env, char *p, size_t nr,
			    const char *change)
{
	size_t count;

	count = mte_wrong_tags(p, nr);
	ASSERT_EQ(0UL, count)
		TH_LOG("%s: %zu of %zu pages lost their tag %s",
		       env->mode, count, nr, change);
	count = mte_unchecked(p, nr);
	ASSERT_EQ(0UL, count)
		TH_LOG("%s: %zu of %zu pages read through a wrong tag without a tag check fault %s",
		       env->mode, count, nr, change);
}

/* Counts the pages of @nr at @p that a write through their tag cannot reach. */
static size_t mte_unwritable(char *p, size_t nr)
{
	size_t i, closed = 0;

	for (i = 0; i < nr; i++)
		closed += probe(mte_ptr(p + i * PSZ, mte_page_tag(i)), 0,
				true) != 0;
	return closed;
}
#endif

FIXTURE(mte) {
	struct lab_env env;
	/* PR_GET_TAGGED_ADDR_CTRL before the test, or -1. */
	long tagged_ctrl;
};

FIXTURE_SETUP(mte)
{
	self->tagged_ctrl = -1;
	lab_env_init(&self->env, MP_SWITCH);
#ifdef __aarch64__
	if (!(getauxval(AT_HWCAP2) & HWCAP2_MTE)) {
		ASSERT_FALSE(lab_debug_kernel())
			TH_LOG("the %s kernel has no MTE: the lab boots the debug kernels with -M virt,mte=on",
			       lab_variant());
		SKIP(return, "no MTE: the lab's default arm64 machine has none (its debug kernels boot with -M virt,mte=on)");
	}
	lab_env_setup(_metadata, &self->env, MP_SWITCH, 64, true);
	self->tagged_ctrl = prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0);
	ASSERT_LE(0, self->tagged_ctrl)
		TH_LOG("PR_GET_TAGGED_ADDR_CTRL: %s", strerror(errno));
	ASSERT_EQ(0, mte_checks(true))
		TH_LOG("synchronous tag checks: %s", strerror(errno));
#else
	SKIP(return, "MTE is arm64's");
#endif
}

FIXTURE_TEARDOWN(mte)
{
	if (self->tagged_ctrl >= 0)
		EXPECT_EQ(0, prctl(PR_SET_TAGGED_ADDR_CTRL, self->tagged_ctrl,
				   0, 0, 0));
	lab_env_teardown(_metadata, &self->env);
}

#define MTE_FOLIOS	16

/*
 * Proves that a batched protection change keeps memory tagging on every
 * PTE of a folio, on arm64 with MTE (the lab's debug kernels).  The Tagged
 * attribute comes with each new PTE's protection; the tags sit beside the
 * page, and set_ptes() sets them up (mte_sync_tags(): zeroed, and the page
 * marked tagged) for each page of a batch that a PTE makes reachable for
 * the first time.  16 private folios of 64 kB (each a contpte block),
 * filled while not tagged, with synchronous tag checks on:
 * - mprotect(PROT_READ | PROT_WRITE | PROT_MTE) makes every page Tagged
 *   with zeroed tags: its data reads back through an untagged pointer, and
 *   a tag stored in the first granule of each page reads back (memory that
 *   is not Tagged reads tag 0);
 * - mprotect(PROT_READ | PROT_MTE) keeps both: every tag reads back, and
 *   a read through the wrong tag takes a tag check fault on every page;
 * - mprotect(PROT_READ | PROT_WRITE | PROT_MTE), through the batch that
 *   makes exclusive pages writable in runs: the same, and a write through
 *   the right tag reaches every page; its vm_normal_page() calls show
 *   that the switch on took the batch and the switch off 6.12's path
 *   (assert_lookups());
 * - with the switch, mprotect(PROT_READ | PROT_MTE) once more with it at
 *   0: 6.12's per-PTE path sets up the tags of any page that no PTE has
 *   marked tagged, which zeroes them, so every tag must still read back.
 * Afterwards the folios are still mapped whole, with their data.  A fault
 * the test does not expect is caught and fails it.
 */
TEST_F_TIMEOUT(mte, tags_on_every_pte, 120)
{
#ifdef __aarch64__
	struct lab_env *env = &self->env;
	const size_t len = MTE_FOLIOS * env->folio, n = len / PSZ;
	size_t i, bad, count;
	long long hits;
	char *p;
	int m;

	mp_lookups_probe(_metadata);
	for (m = 0; m < env->nr_modes; m++) {
		p = mp_round(_metadata, env, m, MTE_FOLIOS, MAP_PRIVATE, 11 + m);

		ASSERT_EQ(0, mprotect(p, len, RW | PROT_MTE));
		bad = first_bad_caught(p, n, 11 + m);
		ASSERT_EQ(n, bad)
			TH_LOG("%s: after mprotect(PROT_MTE), %s %zu",
			       env->mode, bad == SIZE_MAX ?
			       "an untagged read faulted (a stale tag) on page" :
			       "bad data on page",
			       bad == SIZE_MAX ? (size_t)((char *)
				probe_info.si_addr - p) / PSZ : bad);
		for (i = 0; i < n; i++)
			mte_set_tag(mte_ptr(p + i * PSZ, mte_page_tag(i)));
		count = mte_wrong_tags(p, n);
		ASSERT_EQ(0UL, count)
			TH_LOG("%s: %zu of %zu pages kept no tag after mprotect(PROT_MTE): not mapped as Tagged",
			       env->mode, count, n);

		ASSERT_EQ(0, mprotect(p, len, PROT_READ | PROT_MTE));
		mte_assert_kept(_metadata, env, p, n,
				"in mprotect(PROT_READ | PROT_MTE)");

		hits = mp_counted(_metadata, p, len, RW | PROT_MTE, -1);
		mte_assert_kept(_metadata, env, p, n,
				"when made writable again");
		assert_lookups(_metadata, env, env->sw.valid && m, hits, n,
			       "made writable with their tags");
		count = mte_unwritable(p, n);
		ASSERT_EQ(0UL, count)
			TH_LOG("%s: %zu of %zu pages not writable through their tag",
			       env->mode, count, n);

		if (env->sw.valid) {
			ASSERT_EQ(0, lab_write_file(MP_SWITCH, "0"));
			ASSERT_EQ(0, mprotect(p, len, PROT_READ | PROT_MTE));
			ASSERT_EQ(0, lab_write_file(MP_SWITCH, m ? "1" : "0"));
			count = mte_wrong_tags(p, n);
			ASSERT_EQ(0UL, count)
				TH_LOG("%s: the 6.12 path zeroed the tags of %zu of %zu pages: no PTE had set them up",
				       env->mode, count, n);
		}

		/* the tags stay: read the data with tag checks off */
		ASSERT_EQ(0, mte_checks(false));
		bad = first_bad(p, n, 11 + m);
		ASSERT_EQ(0, mte_checks(true));
		ASSERT_EQ(n, bad);
		assert_folios(_metadata, env, p, MTE_FOLIOS);
		munmap(p, len);
	}
#endif
}

#define NUMA_SYSCTL	"/proc/sys/kernel/numa_balancing"
#define NUMA_DEBUGFS	"/sys/kernel/debug/sched/numa_balancing"
#define NUMA_FOLIOS	128

/* The NUMA-balancing settings a numa test changes, and its second thread. */
struct numa_state {
	struct lab_knob balancing;
	struct lab_knob delay;
	struct lab_knob period_max;
	pthread_t helper;
	bool has_helper;
};

/* Keeps a second user of the mm alive; see numa_hinting. */
static void *numa_helper(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

/*
 * The setup of the numa fixtures: the switch and the THP knobs of
 * lab_env_setup(), the NUMA-balancing knobs saved, a second thread.
 * Returns false when the test must skip (a kernel without NUMA balancing).
 */
static bool numa_prepare(struct __test_metadata *_metadata, struct lab_env *env,
		       struct numa_state *st)
{
	lab_env_init(env, MP_SWITCH);
	st->balancing.valid = false;
	st->delay.valid = false;
	st->period_max.valid = false;
	st->has_helper = false;
	if (!lab_path_exists(NUMA_SYSCTL)) {
		ASSERT_STREQ("(unset)", lab_variant())
			TH_LOG("the %s kernel has no %s: configs/common.config turns NUMA balancing on",
			       lab_variant(), NUMA_SYSCTL);
		SKIP(return false,
		     "no %s: a kernel without CONFIG_NUMA_BALANCING (the lab's kernels have it)",
		     NUMA_SYSCTL);
	}
	lab_env_setup(_metadata, env, MP_SWITCH, 64, true);
	mp_lookups_probe(_metadata);
	ASSERT_EQ(0, lab_knob_save(&st->balancing, NUMA_SYSCTL));
	ASSERT_EQ(0, lab_knob_save(&st->delay, NUMA_DEBUGFS "/scan_delay_ms"));
	ASSERT_EQ(0, lab_knob_save(&st->period_max,
				   NUMA_DEBUGFS "/scan_period_max_ms"));
	ASSERT_EQ(0, pthread_create(&st->helper, NULL, numa_helper, NULL));
	st->has_helper = true;
	/* No scan delay; one scan a second of CPU time, not backed off. */
	ASSERT_EQ(0, lab_write_file(NUMA_DEBUGFS "/scan_delay_ms", "0"));
	ASSERT_EQ(0, lab_write_file(NUMA_DEBUGFS "/scan_period_max_ms",
				    "1000"));
	return true;
}

static void numa_restore(struct __test_metadata *_metadata,
			  struct lab_env *env, struct numa_state *st)
{
	EXPECT_EQ(0, lab_knob_restore(&st->balancing))
		TH_LOG("cannot restore %s", NUMA_SYSCTL);
	EXPECT_EQ(0, lab_knob_restore(&st->delay));
	EXPECT_EQ(0, lab_knob_restore(&st->period_max));
	lab_env_teardown(_metadata, env);
	if (st->has_helper) {
		pthread_cancel(st->helper);
		pthread_join(st->helper, NULL);
	}
}

FIXTURE(numa) {
	struct lab_env env;
	struct numa_state st;
};

FIXTURE_SETUP(numa)
{
	numa_prepare(_metadata, &self->env, &self->st);
}

FIXTURE_TEARDOWN(numa)
{
	numa_restore(_metadata, &self->env, &self->st);
}

/*
 * Spins on the CPU until numa_pte_updates grows by @want or more between
 * two reads, or 120 s pass, and returns the largest growth between two
 * reads (or -errno).  The scan runs from the task's own ticks, as task
 * work on its way back to user space, so one pass over the process lands
 * whole between two reads; the counter summed over several passes would
 * let a scan that changes one PTE of each folio per pass reach @want too.
 *
 * *@updates and *@lookups get the growth of numa_pte_updates and of the
 * vm_normal_page() calls (the kprobe of mp_lookups_probe()) over the whole
 * wait.  A pass can also run on the way back from one of the loop's own
 * reads, and so fall between the two counters: the calls are read before
 * the counter at the start and after it at the end, so that such a pass
 * adds calls without its updates, never updates without their calls.
 */
static long long numa_wait_pass(long long want, long long *updates,
				long long *lookups)
{
	long long t0 = lab_now_ns(), prev, now, most = 0, u0, h0, h1;
	volatile unsigned long spin;

	h0 = lab_kprobe_hits(MP_LOOKUPS);
	u0 = prev = lab_vmstat("numa_pte_updates");
	if (prev < 0 || h0 < 0)
		return prev < 0 ? prev : h0;
	while (most < want && lab_now_ns() - t0 <= 120 * 1000000000LL) {
		for (spin = 0; spin < 1000000; spin++)
			;
		now = lab_vmstat("numa_pte_updates");
		if (now < 0)
			return now;
		if (now - prev > most)
			most = now - prev;
		prev = now;
	}
	h1 = lab_kprobe_hits(MP_LOOKUPS);
	if (h1 < 0)
		return h1;
	*updates = prev - u0;
	*lookups = h1 - h0;
	return most;
}

/*
 * Proves that the NUMA-balancing scan still makes every PTE of a large
 * folio PROT_NONE, one by one, with the switch on as with it off:
 * change_pte_range() keeps the 6.12 path for MM_CP_PROT_NUMA, and the batch
 * must not take the scan's PTEs.  128 folios of 64 kB (8 MB, 2048 PTEs),
 * private and exclusive, in a process with a second thread (the scan leaves
 * alone the pages of a single-threaded process that sit on its node, the
 * only node here).  With kernel.numa_balancing at 1 the task spins until
 * one scan pass has changed the 2048 PTEs: numa_pte_updates in /proc/vmstat
 * grows by at least that between two reads, and by at most half as much
 * again (the process's other pages).  A scan that left some of a folio's
 * PTEs unchanged, or counted a batch more than once, fails here.  With the
 * scan off again, one page of each folio is read, page f % 16 of folio f,
 * so that every position in a folio is tried: each read must take a NUMA
 * hinting fault (numa_hint_faults grows across it; 6.12's fault handler
 * then maps the whole folio again), which fails when the scan changed only
 * some PTEs of a folio and counted all of them.  A folio that compaction
 * moved in between (its PFN changed; migration maps it without PROT_NONE)
 * is reported and not counted as a miss, up to 16 of them.  Afterwards the
 * folios are still mapped whole, with their data.
 *
 * And proves that the scan is batched by its mechanism: it asks
 * vm_normal_page() (kprobe) at least once for each PTE it changes on stock
 * 6.12 and with the switch off, where prot_numa_skip() looks up every
 * entry; with the switch on, a 64 kB folio costs two lookups for 16 PTEs
 * (prot_numa_skip() and mprotect_pte_batch() on its first entry), and one
 * where a later pass skips it (already PROT_NONE), so over the whole wait
 * the scan must make fewer lookups than half the PTEs it changed, the
 * process's other pages (one or two lookups each) included.
 */
TEST_F_TIMEOUT(numa, numa_hinting, 600)
{
	struct lab_env *env = &self->env;
	const size_t len = NUMA_FOLIOS * env->folio, n = len / PSZ;
	const size_t per_folio = env->folio / PSZ;
	uint64_t pfn[NUMA_FOLIOS], now_pfn;
	size_t f, missed, moved;
	long long pass, updates = -1, lookups = -1, f0, f1;
	char *p, *q;
	bool batched;
	int m;

	for (m = 0; m < env->nr_modes; m++) {
		p = mp_round(_metadata, env, m, NUMA_FOLIOS, MAP_PRIVATE, 9 + m);
		for (f = 0; f < NUMA_FOLIOS; f++)
			ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd,
						     p + f * env->folio, &pfn[f]));

		ASSERT_EQ(0, lab_write_file(NUMA_SYSCTL, "1"));
		pass = numa_wait_pass(n, &updates, &lookups);
		ASSERT_EQ(0, lab_write_file(NUMA_SYSCTL, "0"));
		ASSERT_LE(0, pass) TH_LOG("numa_pte_updates: %s",
					  strerror(-pass));
		ksft_print_msg("%s: one scan pass changed %lld PTEs, %zu of them the folios'; the wait: %lld changed, %lld vm_normal_page() calls\n",
			       env->mode, pass, n, updates, lookups);
		ASSERT_LE((long long)n, pass)
			TH_LOG("%s: no scan pass in 120 s changed the %zu PTEs of the folios (at most %lld)",
			       env->mode, n, pass);
		ASSERT_GE((long long)(n + n / 2), pass)
			TH_LOG("%s: one scan pass counted %lld PTE changes for %zu PTEs and a few other pages",
			       env->mode, pass, n);
		batched = env->sw.valid && m;
		if (batched) {
			ASSERT_GT(updates, 2 * lookups)
				TH_LOG("%s: %lld lookups for %lld PTEs made PROT_NONE: the scan did not batch",
				       env->mode, lookups, updates);
		} else {
			ASSERT_LE(updates, lookups)
				TH_LOG("%s: %lld lookups for %lld PTEs made PROT_NONE: 6.12 looks up every PTE",
				       env->mode, lookups, updates);
		}

		/* Two reads so the counter's own buffer is mapped again. */
		ASSERT_LE(0, lab_vmstat("numa_hint_faults"));
		f0 = lab_vmstat("numa_hint_faults");
		ASSERT_LE(0, f0);
		for (missed = moved = f = 0; f < NUMA_FOLIOS; f++) {
			q = p + f * env->folio;
			(void)*(volatile uint64_t *)(q + (f % per_folio) * PSZ);
			f1 = lab_vmstat("numa_hint_faults");
			ASSERT_LE(0, f1);
			if (f1 == f0) {
				ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd, q,
							     &now_pfn));
				if (now_pfn != pfn[f])
					moved++;
				else
					missed++;
				ksft_print_msg("%s: no hinting fault on page %zu of folio %zu%s\n",
					       env->mode, f % per_folio, f,
					       now_pfn != pfn[f] ?
					       ", which was moved" : "");
			}
			f0 = f1;
		}
		ASSERT_EQ(0UL, missed)
			TH_LOG("%s: %zu of %d folios had a page the scan left accessible",
			       env->mode, missed, NUMA_FOLIOS);
		ASSERT_GE(16UL, moved)
			TH_LOG("%s: %zu of %d folios were moved: too few left to test",
			       env->mode, moved, NUMA_FOLIOS);
		assert_folios(_metadata, env, p, NUMA_FOLIOS);
		ASSERT_EQ(n, first_bad(p, n, 9 + m));
		munmap(p, len);
	}
}

#define SKIP_FOLIOS	32
#define SKIP_XFS	"/mnt/xfs"
#define SKIP_FILE	SKIP_XFS "/mprotect_batch.numa_skips"
#define DIRTY_EXPIRE	"/proc/sys/vm/dirty_expire_centisecs"
#define DIRTY_WB	"/proc/sys/vm/dirty_writeback_centisecs"

/* Each reason prot_numa_skip() has to leave a present PTE alone. */
enum numa_skip_reason {
	SKIP_ZERO_PAGE, SKIP_COW_SHARED, SKIP_PINNED, SKIP_FILE_DIRTY,
	SKIP_ON_NODE, SKIP_TOPTIER,
};

FIXTURE(numaskip) {
	struct lab_env env;
	struct numa_state st;
	struct lab_knob expire;
	struct lab_knob writeback;
};

FIXTURE_VARIANT(numaskip) {
	enum numa_skip_reason reason;
};

FIXTURE_VARIANT_ADD(numaskip, zero_page) { .reason = SKIP_ZERO_PAGE };
FIXTURE_VARIANT_ADD(numaskip, cow_shared) { .reason = SKIP_COW_SHARED };
FIXTURE_VARIANT_ADD(numaskip, dma_pinned) { .reason = SKIP_PINNED };
FIXTURE_VARIANT_ADD(numaskip, file_dirty) { .reason = SKIP_FILE_DIRTY };
FIXTURE_VARIANT_ADD(numaskip, on_node) { .reason = SKIP_ON_NODE };
FIXTURE_VARIANT_ADD(numaskip, toptier) { .reason = SKIP_TOPTIER };

FIXTURE_SETUP(numaskip)
{
	self->expire.valid = false;
	self->writeback.valid = false;
	if (!numa_prepare(_metadata, &self->env, &self->st))
		return;
	/* dirty file pages stay dirty for the whole test */
	ASSERT_EQ(0, lab_knob_save(&self->expire, DIRTY_EXPIRE));
	ASSERT_EQ(0, lab_knob_save(&self->writeback, DIRTY_WB));
	ASSERT_EQ(0, lab_write_file(DIRTY_WB, "0"));
	ASSERT_EQ(0, lab_write_file(DIRTY_EXPIRE, "360000"));
}

FIXTURE_TEARDOWN(numaskip)
{
	EXPECT_EQ(0, lab_knob_restore(&self->expire));
	EXPECT_EQ(0, lab_knob_restore(&self->writeback));
	unlink(SKIP_FILE);
	numa_restore(_metadata, &self->env, &self->st);
}

/* mm->numa_scan_seq of the caller's mm, from /proc/self/sched, or -errno. */
static long long numa_scan_seq(void)
{
	char buf[16384], *s;
	ssize_t n = lab_read_file("/proc/self/sched", buf, sizeof(buf));

	if (n < 0)
		return n;
	s = strstr(buf, "mm->numa_scan_seq");
	if (!s)
		return -ENOENT;
	s = strchr(s, ':');
	return s ? strtoll(s + 1, NULL, 10) : -EINVAL;
}

/* What numa_skip_check() saw; every count is of the subject or the control. */
struct numa_skip_seen {
	long long passes;	/* scan passes ended in the wait, or -errno */
	long long s_faults;	/* hinting faults on reads of the subject */
	size_t s_first[8];	/* the first pages of the subject that took one */
	size_t s_clean;		/* of the subject's file pages, those found clean */
	size_t c_missed;	/* control pieces read without a hinting fault */
	size_t c_moved;		/* of those, pieces compaction moved */
	int err;		/* 0, or the -errno of a failed step */
};

/*
 * With kernel.numa_balancing at @mode, spins until the mm's scan sequence
 * has grown by 2, so that one whole pass over the address space began and
 * ended after the regions were mapped (the scan takes a new VMA on its
 * first two passes whatever its accesses), then turns the scan off and
 * reads: every page of the subject @s (@s_len bytes; the hinting faults
 * over all of them are counted) and, in each 64 kB piece of the controls
 * @c[0] and @c[1] (@c_len bytes each, NULL for none), page i % 16 of piece
 * i, each of which must take a hinting fault.  A piece whose PFN changed
 * in between (compaction moved it and mapped it without PROT_NONE) is
 * counted apart.  With @dirty_kpf_fd (/proc/kpageflags) the subject's
 * pages are dirty file pages, and only those still dirty after the wait
 * are counted: writeback may clean some first (XFS does so for a file just
 * written, stock 6.12 as patched), and a folio it cleaned is one the scan
 * may change; it write-protects the PTEs, and nothing writes them again, so
 * a folio dirty after the wait was dirty throughout it.
 */
static void numa_skip_check(struct numa_skip_seen *seen, const char *mode,
			    const char *s, size_t s_len, char *const c[2],
			    size_t c_len, int pm_fd, int dirty_kpf_fd)
{
	const size_t piece = 16 * PSZ, pieces = c_len / piece;
	uint64_t pfn[2 * SKIP_FOLIOS * 2], now_pfn;
	long long t0 = lab_now_ns(), seq0, seq, f0, f1;
	volatile unsigned long spin;
	size_t i, k, n = 0;
	char *q;

	memset(seen, 0, sizeof(*seen));
	for (k = 0; k < 2 && c[k]; k++)
		for (i = 0; i < pieces; i++, n++)
			if (lab_pagemap_pfn(pm_fd, c[k] + i * piece +
					    (i % 16) * PSZ, &pfn[n])) {
				seen->err = -EIO;
				return;
			}
	seq0 = numa_scan_seq();
	if (seq0 < 0 || lab_write_file(NUMA_SYSCTL, mode)) {
		seen->err = seq0 < 0 ? (int)seq0 : -EIO;
		return;
	}
	do {
		for (spin = 0; spin < 1000000; spin++)
			;
		seq = numa_scan_seq();
	} while (seq >= 0 && seq - seq0 < 2 &&
		 lab_now_ns() - t0 <= 120 * 1000000000LL);
	if (lab_write_file(NUMA_SYSCTL, "0") || seq < 0) {
		seen->err = seq < 0 ? (int)seq : -EIO;
		return;
	}
	seen->passes = seq - seq0;

	/* Two reads so the counter's own buffer is mapped again. */
	lab_vmstat("numa_hint_faults");
	f0 = lab_vmstat("numa_hint_faults");
	for (i = 0; i < s_len; i += PSZ) {
		uint64_t pf, flags = 1ULL << LAB_KPF_DIRTY;

		if (dirty_kpf_fd >= 0 &&
		    (lab_pagemap_pfn(pm_fd, s + i, &pf) ||
		     lab_kpageflags(dirty_kpf_fd, pf, &flags))) {
			seen->err = -EIO;
			return;
		}
		(void)*(const volatile uint64_t *)(s + i);
		f1 = lab_vmstat("numa_hint_faults");
		if (!(flags & (1ULL << LAB_KPF_DIRTY))) {
			seen->s_clean++;
		} else if (f1 != f0) {
			if (seen->s_faults < 8)
				seen->s_first[seen->s_faults] = i / PSZ;
			seen->s_faults += f1 - f0;
		}
		f0 = f1;
	}
	for (n = 0, k = 0; k < 2 && c[k]; k++) {
		for (i = 0; i < pieces; i++, n++) {
			q = c[k] + i * piece + (i % 16) * PSZ;
			f0 = lab_vmstat("numa_hint_faults");
			(void)*(volatile uint64_t *)q;
			f1 = lab_vmstat("numa_hint_faults");
			if (f0 < 0 || f1 < 0 ||
			    lab_pagemap_pfn(pm_fd, q, &now_pfn)) {
				seen->err = -EIO;
				return;
			}
			if (f1 == f0) {
				seen->c_missed++;
				seen->c_moved += now_pfn != pfn[n];
			}
		}
	}
}

/*
 * on_node: the scan of a single-threaded process leaves its private pages
 * on the node it runs on alone.  A child of the test (fork() copies one
 * thread: mm_users is 1) maps the subject private between two controls of
 * MAP_SHARED anonymous memory, which that rule leaves to the scan, runs the
 * check, and sends what it saw through @fd.
 */
static void numa_skip_on_node(int fd, const char *mode, size_t s_len,
			      size_t c_len, unsigned int tag)
{
	struct numa_skip_seen seen = { .err = -ENOMEM };
	char *base, *c[2];
	int pm_fd = open("/proc/self/pagemap", O_RDONLY);

	base = mp_map(s_len + 2 * c_len, LAB_SZ_2M, 0, MAP_PRIVATE);
	if (base && pm_fd >= 0) {
		c[0] = base;
		c[1] = base + c_len + s_len;
		if (mmap(c[0], c_len, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == c[0] &&
		    mmap(c[1], c_len, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == c[1]) {
			fill(base, (s_len + 2 * c_len) / PSZ, tag);
			numa_skip_check(&seen, mode, base + c_len, s_len, c,
					c_len, pm_fd, -1);
			if (!seen.err &&
			    first_bad(base, (s_len + 2 * c_len) / PSZ, tag) !=
			    (s_len + 2 * c_len) / PSZ)
				seen.err = -EBADMSG;
		}
	}
	_exit(write(fd, &seen, sizeof(seen)) == sizeof(seen) ? 0 : 1);
}

/*
 * Proves that the NUMA-balancing scan leaves alone the PTEs of every kind
 * of page prot_numa_skip() skips, with the switch off and on: with it on,
 * a large folio's skipped entries are stepped over in one batch
 * (prot_numa_skip_batch()), which must skip what 6.12 skips, no more, no
 * less.  Each variant maps a subject of 32 folios' size between two
 * controls of 32 private, exclusive 64 kB folios each, in one VMA where
 * the reason allows (so a batch that ran past the subject's folios into a
 * control's, or stopped short, shows), lets one whole scan pass run, and
 * then reads every page of the subject: none may take a NUMA hinting
 * fault.  Every 64 kB of the controls must take one (the scan did change
 * this process's PTEs), but for toptier, whose rule leaves every page
 * alone.  The reasons: zero_page (read faults map the zero page),
 * cow_shared (a child shares the subject's folios; it unmapped its copy of
 * the controls), dma_pinned (pinned with FOLL_LONGTERM through gup_test),
 * file_dirty (a MAP_SHARED XFS file written through its mapping, with
 * writeback held off; its own VMA), on_node (a single-threaded child's
 * private pages, beside MAP_SHARED controls) and toptier
 * (kernel.numa_balancing 2, memory tiering without normal balancing, on a
 * machine whose only node is top tier).  KSM and device pages are not
 * tried: KSM pages are small (no batch to get wrong), and the guest has no
 * ZONE_DEVICE memory.  Afterwards every page keeps its data.
 */
TEST_F_TIMEOUT(numaskip, numa_skips, 900)
{
	struct lab_env *env = &self->env;
	const size_t c_len = SKIP_FOLIOS * env->folio, s_len = c_len;
	const size_t len = 2 * c_len + s_len;
	const enum numa_skip_reason why = variant->reason;
	const char *mode = why == SKIP_TOPTIER ? "2" : "1";
	struct pin_longterm_test pin = { 0 };
	struct numa_skip_seen seen;
	int m, fd = -1, gup = -1, status, pipefd[2], ack[2], hold[2];
	char *p, *s, *c[2], byte;
	size_t i, k;
	pid_t child = 0;

	if (why == SKIP_FILE_DIRTY) {
		int ret = lab_is_mounted(SKIP_XFS, "xfs");

		ASSERT_EQ(1, ret)
			TH_LOG("%s is not an XFS mount point: the lab's guest mounts its labxfs disk there (guest/init)",
			       SKIP_XFS);
	}
	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		if (why == SKIP_ON_NODE) {
			ASSERT_EQ(0, pipe(pipefd));
			child = fork();
			ASSERT_LE(0, child);
			if (!child)
				numa_skip_on_node(pipefd[1], mode, s_len, c_len,
						  21 + m);
			close(pipefd[1]);
			ASSERT_EQ((ssize_t)sizeof(seen),
				  read(pipefd[0], &seen, sizeof(seen)));
			close(pipefd[0]);
			ASSERT_EQ(child, waitpid(child, &status, 0));
			ASSERT_EQ(0, status);
			ASSERT_EQ(0, seen.err) TH_LOG("%s: on_node child: %s",
						     env->mode,
						     strerror(-seen.err));
			goto judge;
		}
		p = mp_map(len, LAB_SZ_2M, 0, MAP_PRIVATE);
		ASSERT_NE(NULL, p);
		c[0] = p;
		s = p + c_len;
		c[1] = s + s_len;
		fill(c[0], c_len / PSZ, 21 + m);
		fill(c[1], c_len / PSZ, 21 + m);
		assert_folios(_metadata, env, c[0], SKIP_FOLIOS);
		assert_folios(_metadata, env, c[1], SKIP_FOLIOS);
		switch (why) {
		case SKIP_ZERO_PAGE:
			for (i = 0; i < s_len; i += PSZ)
				(void)*(volatile char *)(s + i);
			break;
		case SKIP_FILE_DIRTY:
			fd = open(SKIP_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
			ASSERT_LE(0, fd) TH_LOG("%s: %s", SKIP_FILE,
						strerror(errno));
			/* blocks allocated and written, then dirtied in place */
			for (i = 0; i < s_len; i += PSZ)
				ASSERT_EQ((ssize_t)PSZ,
					  pwrite(fd, c[0], PSZ, i));
			ASSERT_EQ(0, fsync(fd));
			ASSERT_EQ(s, mmap(s, s_len, RW, MAP_SHARED | MAP_FIXED,
					  fd, 0));
			fill(s, s_len / PSZ, 21 + m);
			break;
		default:
			fill(s, s_len / PSZ, 21 + m);
			break;
		}
		if (why == SKIP_COW_SHARED) {
			/* the child holds its share until hold[1] closes */
			ASSERT_EQ(0, pipe(ack));
			ASSERT_EQ(0, pipe(hold));
			child = fork();
			ASSERT_LE(0, child);
			if (!child) {
				char ok = !munmap(c[0], c_len) &&
					  !munmap(c[1], c_len);

				close(hold[1]);
				if (write(ack[1], &ok, 1) != 1)
					_exit(1);
				_exit(read(hold[0], &ok, 1) == 0 ? 0 : 1);
			}
			close(hold[0]);
			ASSERT_EQ(1, read(ack[0], &byte, 1));
			ASSERT_EQ(1, byte) TH_LOG("the child could not unmap the controls");
		}
		if (why == SKIP_PINNED) {
			gup = open(GUP_TEST, O_RDWR);
			ASSERT_LE(0, gup)
				TH_LOG("%s: %s: the lab's kernels have GUP_TEST and guest/init mounts debugfs",
				       GUP_TEST, strerror(errno));
			pin.addr = (uintptr_t)s;
			pin.size = s_len;
			pin.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE;
			ASSERT_EQ(0, ioctl(gup, PIN_LONGTERM_TEST_START, &pin))
				TH_LOG("PIN_LONGTERM_TEST_START: %s",
				       strerror(errno));
		}

		numa_skip_check(&seen, mode, s, s_len, c, c_len, env->pm_fd,
				why == SKIP_FILE_DIRTY ? env->kpf_fd : -1);
		if (why == SKIP_PINNED) {
			ASSERT_EQ(0, ioctl(gup, PIN_LONGTERM_TEST_STOP));
			close(gup);
		}
		if (why == SKIP_COW_SHARED) {
			close(hold[1]);
			close(ack[0]);
			close(ack[1]);
			ASSERT_EQ(child, waitpid(child, &status, 0));
			ASSERT_EQ(0, status);
		}
		ASSERT_EQ(0, seen.err) TH_LOG("%s: %s", env->mode,
					     strerror(-seen.err));
		for (k = 0; k < 2; k++)
			ASSERT_EQ(c_len / PSZ, first_bad(c[k], c_len / PSZ, 21 + m))
				TH_LOG("%s: control %zu lost its data", env->mode, k);
		if (why == SKIP_ZERO_PAGE) {
			for (i = 0; i < s_len && !s[i]; i++)
				;
			ASSERT_EQ(s_len, i) TH_LOG("%s: the zero page reads %d at %zu",
						   env->mode, s[i], i);
		} else {
			ASSERT_EQ(s_len / PSZ, first_bad(s, s_len / PSZ, 21 + m))
				TH_LOG("%s: the subject lost its data", env->mode);
		}
		munmap(p, len);
		if (fd >= 0) {
			close(fd);
			fd = -1;
			unlink(SKIP_FILE);
		}
judge:
		ksft_print_msg("%s: %lld scan passes; %lld hinting faults on the subject's %zu pages (%zu found clean); %zu of %zu control pieces without one (%zu moved)\n",
			       env->mode, seen.passes, seen.s_faults,
			       s_len / PSZ, seen.s_clean, seen.c_missed,
			       2 * c_len / (16 * PSZ), seen.c_moved);
		ASSERT_GE(s_len / PSZ / 2, seen.s_clean)
			TH_LOG("%s: writeback cleaned %zu of the %zu dirty file pages: too few left to test",
			       env->mode, seen.s_clean, s_len / PSZ);
		ASSERT_LE(2, seen.passes)
			TH_LOG("%s: no whole scan pass in 120 s", env->mode);
		for (i = 0; i < (size_t)seen.s_faults && i < 8; i++)
			ksft_print_msg("%s: page %zu of the subject took a hinting fault\n",
				       env->mode, seen.s_first[i]);
		ASSERT_EQ(0, seen.s_faults)
			TH_LOG("%s: the scan made %lld of the subject's PTEs PROT_NONE",
			       env->mode, seen.s_faults);
		if (why == SKIP_TOPTIER) {
			ASSERT_EQ(2 * c_len / (16 * PSZ), seen.c_missed)
				TH_LOG("%s: memory tiering mode changed top-tier pages",
				       env->mode);
		} else {
			ASSERT_EQ(seen.c_moved, seen.c_missed)
				TH_LOG("%s: %zu control pieces were left accessible: the scan did not cover the process, or a skip ran past the subject",
				       env->mode, seen.c_missed - seen.c_moved);
			ASSERT_GE(8UL, seen.c_moved);
		}
	}
}

TEST_HARNESS_MAIN
