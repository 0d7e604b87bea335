// SPDX-License-Identifier: GPL-2.0
/*
 * mremap_batch.c - tests of mremap() over PTE-mapped large anonymous folios,
 * the case the mremap_batch switch makes move_ptes() handle in batches
 * (get_and_clear_full_ptes() and set_ptes() over the PTEs of one folio).
 *
 * The data tests run their checks twice, with /sys/kernel/mm/foliobatch/
 * mremap_batch at 0 and at 1, when the switch exists (LAB_FLAVOUR=patched
 * requires it), and once as the kernel is otherwise (stock).  The
 * mechanism test (fixture mech) runs as variants "on", "off" (patched)
 * and "stock", and counts calls with a kprobe.  The switch and the THP
 * settings are restored in the teardown.
 *
 * Folio sizes are forced with the mTHP knobs: the wanted size "always",
 * every other size and the top level "never".  Before every move the test
 * checks in /proc/kpageflags that it really got folios of that size.
 *
 * Needs root (pagemap PFNs, /proc/kpageflags, THP knobs, kprobes in
 * tracefs) and 4 KiB pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define MB_SWITCH	"/sys/kernel/mm/foliobatch/mremap_batch"
#define PSZ		4096UL
#define WORDS		(PSZ / sizeof(uint64_t))

/*
 * Maps @len bytes of private anonymous memory with @prot at an address
 * @off bytes past a multiple of @align, as a VMA of exactly @len bytes (the
 * extra mapped for alignment is unmapped again).  Returns NULL on failure.
 */
static char *map_at(size_t len, size_t align, size_t off, int prot)
{
	return lab_map_aligned(len, align, off, prot, MAP_PRIVATE);
}

/*
 * Maps @len bytes aligned to the folio size and asks for huge pages (with
 * THP defrag "madvise" that lets the fault compact memory).
 */
static char *map_src(struct __test_metadata *_metadata, size_t len,
		     size_t align, size_t off)
{
	char *p = map_at(len, align, off, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, p) TH_LOG("mmap of %zu bytes failed", len);
	ASSERT_EQ(0, madvise(p, len, MADV_HUGEPAGE));
	return p;
}


/* Fails unless the @nr pages at @p hold pages @first... of region @tag. */
static void assert_pattern(struct __test_metadata *_metadata,
			   const struct lab_env *env, const char *p,
			   size_t first, size_t nr, unsigned int tag,
			   const char *what)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i = lab_check_pat(p, first, nr, tag), n = nr * WORDS;

	ASSERT_EQ(n, i)
		TH_LOG("%s: %s: page %zu word %zu (%p) is %#llx, expected %#llx",
		       env->mode, what, first + i / WORDS, i % WORDS, &w[i],
		       (unsigned long long)w[i],
		       (unsigned long long)lab_pat(tag, first + i / WORDS,
					       i % WORDS));
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
			TH_LOG("%s: %p maps %zu kB of one folio, wanted %zu kB%s",
			       env->mode, p + f * env->folio, size / LAB_SZ_1K,
			       env->folio / LAB_SZ_1K, size == PSZ ?
			       ": the kernel gave small pages, not mTHP" : "");
	}
}

/*
 * Reads the pagemap entries of @nr pages at @p into @pm (malloc'ed, to be
 * freed by the caller) and fails unless all of them are present or swapped
 * out, i.e. none was lost.
 */
static uint64_t *pagemap_mapped(struct __test_metadata *_metadata,
				const struct lab_env *env, const char *p,
				size_t nr, const char *what)
{
	uint64_t *pm = malloc(nr * sizeof(*pm));
	size_t i;
	int ret;

	ASSERT_NE(NULL, pm);
	ret = lab_pagemap_read(env->pm_fd, p, nr, pm);
	ASSERT_EQ(0, ret) TH_LOG("pagemap: %s", strerror(-ret));
	for (i = 0; i < nr; i++)
		if (!(pm[i] & (LAB_PM_PRESENT | LAB_PM_SWAP)))
			break;
	ASSERT_EQ(nr, i)
		TH_LOG("%s: %s: page %zu (%p) is not mapped", env->mode, what,
		       i, p + i * PSZ);
	return pm;
}

FIXTURE(data) {
	struct lab_env env;
};

FIXTURE_VARIANT(data) {
	unsigned long folio_kb;
	size_t nr_folios;
};

FIXTURE_VARIANT_ADD(data, folio_16k) {
	.folio_kb = 16,
	.nr_folios = 4,
};

FIXTURE_VARIANT_ADD(data, folio_64k) {
	.folio_kb = 64,
	.nr_folios = 4,
};

FIXTURE_VARIANT_ADD(data, folio_2m) {
	.folio_kb = 2048,
	.nr_folios = 2,
};

FIXTURE_SETUP(data)
{
	lab_env_setup(_metadata, &self->env, MB_SWITCH, variant->folio_kb, false);
}

FIXTURE_TEARDOWN(data)
{
	lab_env_teardown(_metadata, &self->env);
}

/* Where a case puts the destination, from a 2 MB-aligned base. */
enum dst_pos {
	DST_ALIGNED,		/* at the base */
	DST_PAGE,		/* one page past the base */
	DST_PMD_LESS_PAGE,	/* one page before the next PMD boundary */
	DST_PMD_LESS_HALF,	/* half a folio before the next PMD boundary */
};

struct move_case {
	const char *name;
	size_t head;		/* pages left behind at the start */
	size_t tail;		/* pages left behind at the end */
	enum dst_pos dst;
};

static const struct move_case move_cases[] = {
	{ "whole region, destination aligned", 0, 0, DST_ALIGNED },
	{ "partial first and last folio, destination congruent",
	  1, 1, DST_PAGE },
	{ "partial first and last folio, destination aligned",
	  1, 1, DST_ALIGNED },
	{ "whole region, destination misaligned by a page",
	  0, 0, DST_PMD_LESS_PAGE },
	{ "whole region, destination misaligned by half a folio",
	  0, 0, DST_PMD_LESS_HALF },
};

static size_t dst_offset(enum dst_pos pos, size_t folio)
{
	switch (pos) {
	case DST_PAGE:
		return PSZ;
	case DST_PMD_LESS_PAGE:
		return LAB_SZ_2M - PSZ;
	case DST_PMD_LESS_HALF:
		return LAB_SZ_2M - folio / 2;
	default:
		return 0;
	}
}

/*
 * Proves mremap() moves PTE-mapped (and, for 2 MB, PMD-mapped) large folios
 * without losing or corrupting a page.  The source is 4 folios (2 for 2 MB)
 * straddling a PMD boundary, each 8-byte word holding its page index and
 * offset.  Each case moves the whole region or all of it but the first and
 * last page (partial folios at both ends), to a destination aligned,
 * congruent, one page off or half a folio off, so batches start and end
 * inside folios and at page-table boundaries on both sides.  Afterwards
 * every moved page is mapped and holds its words, the pages just outside
 * the destination are not mapped, the moved source range is unmapped, and
 * the pages left behind are still mapped and hold their words.
 */
TEST_F_TIMEOUT(data, data_intact, 300)
{
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, len = variant->nr_folios * folio;
	const size_t area = len + 4 * LAB_SZ_2M;
	const struct move_case *mc;
	char *src, *area_p, *dst, *ret;
	size_t c, i, off, mlen, npages;
	unsigned char vec;
	uint64_t *pm, edge[2];
	unsigned int tag;
	int m;

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		for (c = 0; c < ARRAY_SIZE(move_cases); c++) {
			mc = &move_cases[c];
			tag = 1 + m * 16 + c;
			off = mc->head * PSZ;
			mlen = len - (mc->head + mc->tail) * PSZ;
			npages = mlen / PSZ;

			/* Half the folios on each side of a PMD boundary. */
			src = map_src(_metadata, len, LAB_SZ_2M, LAB_SZ_2M -
				      variant->nr_folios / 2 * folio);
			lab_fill_pat(src, 0, len / PSZ, tag);
			assert_folios(_metadata, env, src, variant->nr_folios);

			/* 2 MB of PROT_NONE on either side of the move. */
			area_p = map_at(area, LAB_SZ_2M, 0, PROT_NONE);
			ASSERT_NE(NULL, area_p);
			dst = area_p + LAB_SZ_2M + dst_offset(mc->dst, folio);

			ret = mremap(src + off, mlen, mlen,
				     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
			ASSERT_EQ(dst, ret)
				TH_LOG("%s: %s: mremap: %s", env->mode,
				       mc->name, strerror(errno));

			pm = pagemap_mapped(_metadata, env, dst, npages,
					    mc->name);
			free(pm);
			assert_pattern(_metadata, env, dst, mc->head, npages,
				       tag, mc->name);
			/* Nothing may land beside the destination. */
			ASSERT_EQ(0, lab_pagemap_read(env->pm_fd, dst - PSZ, 1,
						      &edge[0]));
			ASSERT_EQ(0, lab_pagemap_read(env->pm_fd, dst + mlen, 1,
						      &edge[1]));
			ASSERT_FALSE(!!((edge[0] | edge[1]) &
					(LAB_PM_PRESENT | LAB_PM_SWAP)))
				TH_LOG("%s: %s: a page was mapped %s the destination",
				       env->mode, mc->name, edge[0] &
				       (LAB_PM_PRESENT | LAB_PM_SWAP) ?
				       "just before" : "just after");
			for (i = 0; i < npages; i++) {
				errno = 0;
				mincore(src + off + i * PSZ, PSZ, &vec);
				ASSERT_EQ(ENOMEM, errno)
					TH_LOG("%s: %s: old page %zu still mapped",
					       env->mode, mc->name, mc->head + i);
			}
			/*
			 * Pagemap first: a stale TLB entry could still read
			 * the data of a page whose PTE the move took away.
			 */
			if (mc->head) {
				pm = pagemap_mapped(_metadata, env, src,
						    mc->head,
						    "page left before the move");
				free(pm);
				assert_pattern(_metadata, env, src, 0, mc->head,
					       tag, "page left before the move");
			}
			if (mc->tail) {
				pm = pagemap_mapped(_metadata, env,
						    src + off + mlen, mc->tail,
						    "page left after the move");
				free(pm);
				assert_pattern(_metadata, env, src + off + mlen,
					       mc->head + npages, mc->tail, tag,
					       "page left after the move");
			}

			munmap(area_p, area);
			munmap(src, len);
		}
	}
}

FIXTURE(mech) {
	struct lab_env env;
};

LAB_KERNEL_VARIANTS(mech);

/*
 * Skips variants of the other flavour (LAB_FLAVOUR must be stock or
 * patched), checks that the switch exists exactly on patched, and saves
 * the settings lab_env_mode() changes.
 */
FIXTURE_SETUP(mech)
{
	const char *fl = lab_flavour();

	self->env.sw.valid = false;
	self->env.thp.top.valid = false;
	self->env.thp.nr = 0;
	self->env.pm_fd = -1;
	self->env.kpf_fd = -1;
	LAB_REQUIRE_FLAVOUR(variant->flavour, "variant for the %s kernel",
			    variant->flavour);
	ASSERT_EQ(variant->value >= 0, lab_path_exists(MB_SWITCH))
		TH_LOG("%s %s on the %s kernel", MB_SWITCH,
		       variant->value >= 0 ? "missing" : "present", fl);
	lab_env_setup(_metadata, &self->env, MB_SWITCH, 64, false);
}

FIXTURE_TEARDOWN(mech)
{
	lab_env_teardown(_metadata, &self->env);
}

#define MECH_FOLIOS	16
#define MECH_ROUNDS	4

/*
 * Proves the batch on arm64 by its mechanism: a move of PTE-mapped 64 kB
 * folios clears each folio's contiguous PTEs at once, with no
 * __contpte_try_unfold() call, where stock 6.12 (and the switch off)
 * clears PTE by PTE and so unfolds every contiguous block it moves (one
 * per 64 kB folio: the destination is folded again once its last PTE is
 * set).  16 folios, 1 MB inside one 2 MB region (so move_ptes() moves them,
 * not a whole page table), are moved 4 times to a 64 kB-aligned place;
 * the calls counted by a kprobe across the mremap() calls must be at most
 * one per 8 folios moved with the switch on, and at least one per folio
 * moved with it off and on stock.  The data is checked after every move.
 *
 * x86_64 has no contiguous PTEs: pte_batch_hint() is 1 there, so
 * mremap_folio_pte_batch() never batches and nothing differs to count.
 */
TEST_F_TIMEOUT(mech, contpte_unfolds, 120)
{
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, len = MECH_FOLIOS * folio;
	long long h0, h1, hits = 0;
	char *src, *dst, *ret;
	size_t moved = 0;
	struct utsname u;
	unsigned int r;
	int err;

	ASSERT_EQ(0, uname(&u));
	if (strcmp(u.machine, "aarch64"))
		SKIP(return, "%s has no contiguous PTEs: move_ptes() never batches there (pte_batch_hint() is 1), nothing to count",
		     u.machine);
	err = lab_kprobe_add("mb_unfold", "__contpte_try_unfold");
	ASSERT_EQ(0, err) TH_LOG("kprobe on __contpte_try_unfold: %s",
				 strerror(-err));
	lab_env_mode(_metadata, env, variant->value > 0);

	/* Half a PMD into a 2 MB region: 1 MB never spans a whole PMD. */
	src = map_src(_metadata, len, LAB_SZ_2M, LAB_SZ_2M / 4);
	lab_fill_pat(src, 0, len / PSZ, 1);
	for (r = 0; r < MECH_ROUNDS; r++) {
		assert_folios(_metadata, env, src, MECH_FOLIOS);
		/* Another 64 kB-aligned place in another 2 MB region. */
		dst = map_at(len, LAB_SZ_2M, LAB_SZ_2M / 4 + (r + 1) * folio,
			     PROT_NONE);
		ASSERT_NE(NULL, dst);
		h0 = lab_kprobe_hits("mb_unfold");
		ret = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			     dst);
		h1 = lab_kprobe_hits("mb_unfold");
		ASSERT_EQ(dst, ret)
			TH_LOG("%s: mremap: %s", env->mode, strerror(errno));
		ASSERT_LE(0, h0);
		ASSERT_LE(h0, h1);
		hits += h1 - h0;
		moved += MECH_FOLIOS;
		assert_pattern(_metadata, env, dst, 0, len / PSZ, 1,
			       "moved folios");
		src = dst;
	}
	munmap(src, len);

	ksft_print_msg("%s: %lld __contpte_try_unfold() calls for %zu folios of 64 kB moved\n",
		       env->mode, hits, moved);
	if (variant->value > 0) {
		ASSERT_LE(hits * 8, (long long)moved)
			TH_LOG("%s: more than one contpte unfold per 8 folios: the moves were not batched",
			       env->mode);
	} else {
		ASSERT_LE((long long)moved, hits)
			TH_LOG("%s: fewer contpte unfolds than folios moved: stock moves unfold every block",
			       env->mode);
	}
}

/* The layouts of copy_choice, in its order. */
enum copy_layout { COPY_LARGE, COPY_SMALL, COPY_SMALL_LARGE, NR_COPY_LAYOUTS };
static const char *const copy_layout_name[NR_COPY_LAYOUTS] = {
	"64 kB folios", "4 kB pages", "4 kB pages, then 64 kB folios",
};

/* The kprobes of copy_choice, event and function. */
enum { COPY_LOOK, COPY_BATCHED, NR_COPY_PROBES };
static const char *const copy_probe[NR_COPY_PROBES][2] = {
	[COPY_LOOK] = { "mb_copy_look", "mremap_finds_block" },
	[COPY_BATCHED] = { "mb_copy_batched", "move_ptes_batched" },
};

/*
 * The calls of copy_probe[@probe] that one move of one page table's range
 * in @layout makes with the switch @on (arm64): the look runs once per
 * move with the switch on, and the batched copy runs when the range holds
 * a contiguous block.
 */
static long long copy_want(int probe, bool on, enum copy_layout layout)
{
	if (!on)
		return 0;
	if (probe == COPY_LOOK)
		return 1;
	return layout == COPY_SMALL ? 0 : 1;
}

/*
 * Maps 1 MB half a PMD into a 2 MB region (one page table) in @layout and
 * fills it with pattern @tag: 64 kB folios (checked), 4 kB pages (faulted
 * with every mTHP size off), or 512 kB of 4 kB pages followed by 512 kB of
 * 64 kB folios (checked).  Leaves 64 kB mTHP on.
 */
static char *copy_map(struct __test_metadata *_metadata, struct lab_env *env,
		      enum copy_layout layout, size_t len, unsigned int tag)
{
	const size_t small = layout == COPY_SMALL ? len :
			     layout == COPY_SMALL_LARGE ? len / 2 : 0;
	char *p;

	p = map_src(_metadata, len, LAB_SZ_2M, LAB_SZ_2M / 4);
	ASSERT_EQ(0, lab_thp_only(&env->thp, 0));
	lab_fill_pat(p, 0, small / PSZ, tag);
	ASSERT_EQ(0, lab_thp_only(&env->thp, env->folio / LAB_SZ_1K));
	lab_fill_pat(p + small, small / PSZ, (len - small) / PSZ, tag);
	lab_assert_small_pages(_metadata, env, p, 0, small / PSZ,
			       copy_layout_name[layout]);
	assert_folios(_metadata, env, p + small, (len - small) / env->folio);
	return p;
}

/*
 * Proves which copy of move_ptes() a move takes: with mremap_batch on,
 * arm64 reads a range's first PTE and one in 16 after it
 * (mremap_finds_block()) and moves the range with the batched copy,
 * move_ptes_batched(), only when one is in a contiguous block; a range
 * without a block takes the single-entry loop, which skips the test at
 * each entry.  Three layouts of 1 MB inside one page table, each moved
 * once to the same offset of another 2 MB region (one move_ptes() call):
 * 64 kB folios, 4 kB pages, and 4 kB pages followed by 64 kB folios (a
 * block found only 128 entries in).  Kprobes count the two functions'
 * calls (copy_want()); with the switch off neither runs.  The data must
 * survive every move.  x86_64 has no pte_batch_hint(), so no batch can
 * start there, and stock has neither function: there both kprobes must
 * fail for want of the function.
 */
TEST_F_TIMEOUT(mech, copy_choice, 120)
{
	const bool on = variant->value > 0;
	struct lab_env *env = &self->env;
	const size_t len = MECH_FOLIOS * env->folio;
	long long h0[NR_COPY_PROBES], hits, want;
	int layout, i, err;
	struct utsname u;
	char *src, *dst, *ret;

	ASSERT_EQ(0, uname(&u));
	if (variant->value < 0 || strcmp(u.machine, "aarch64")) {
		for (i = 0; i < NR_COPY_PROBES; i++) {
			err = lab_kprobe_add(copy_probe[i][0], copy_probe[i][1]);
			ksft_print_msg("%s, %s: kprobe on %s: %s\n",
				       variant->value < 0 ? "stock" : "patched",
				       u.machine, copy_probe[i][1],
				       strerror(-err));
			ASSERT_EQ(-ENOENT, err)
				TH_LOG("%s() exists on %s %s: no batched copy of move_ptes() was expected there",
				       copy_probe[i][1], u.machine,
				       variant->value < 0 ? "stock" : "patched");
		}
		return;
	}
	for (i = 0; i < NR_COPY_PROBES; i++) {
		err = lab_kprobe_add(copy_probe[i][0], copy_probe[i][1]);
		ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", copy_probe[i][1],
					 strerror(-err));
	}
	lab_env_mode(_metadata, env, on);
	for (layout = 0; layout < NR_COPY_LAYOUTS; layout++) {
		src = copy_map(_metadata, env, layout, len, 5 + layout);
		dst = map_at(len, LAB_SZ_2M, LAB_SZ_2M / 4, PROT_NONE);
		ASSERT_NE(NULL, dst);
		for (i = 0; i < NR_COPY_PROBES; i++)
			h0[i] = lab_kprobe_hits(copy_probe[i][0]);
		ret = mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		ASSERT_EQ(dst, ret)
			TH_LOG("%s: mremap: %s", env->mode, strerror(errno));
		for (i = 0; i < NR_COPY_PROBES; i++) {
			hits = lab_kprobe_hits(copy_probe[i][0]);
			ASSERT_LE(0, h0[i]);
			ASSERT_LE(h0[i], hits);
			hits -= h0[i];
			want = copy_want(i, on, layout);
			ksft_print_msg("%s, %s: %lld %s() calls\n", env->mode,
				       copy_layout_name[layout], hits,
				       copy_probe[i][1]);
			ASSERT_EQ(want, hits)
				TH_LOG("%s, %s: %lld %s() calls for one move of one page table's range, not %lld",
				       env->mode, copy_layout_name[layout], hits,
				       copy_probe[i][1], want);
		}
		assert_pattern(_metadata, env, dst, 0, len / PSZ, 5 + layout,
			       "moved range");
		munmap(dst, len);
	}
}

FIXTURE(wprot) {
	struct lab_env env;
	pid_t child;
};

FIXTURE_VARIANT(wprot) {
	unsigned long folio_kb;
};

FIXTURE_VARIANT_ADD(wprot, folio_64k) {
	.folio_kb = 64,
};

FIXTURE_VARIANT_ADD(wprot, folio_128k) {
	.folio_kb = 128,
};

FIXTURE_SETUP(wprot)
{
	self->child = -1;
	lab_env_setup(_metadata, &self->env, MB_SWITCH, variant->folio_kb, false);
}

FIXTURE_TEARDOWN(wprot)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	lab_env_teardown(_metadata, &self->env);
}

/* What the child reports: the first page of its half that changed, or -1. */
struct wprot_report {
	long bad;
	uint64_t seen;
};

/*
 * Child: waits for the parent's go, then checks that its copy of the shared
 * half (@nr pages at @p, pages @first... of region @tag) is unchanged, and
 * reports.  Must not use ASSERT.
 */
static void __attribute__((noreturn)) wprot_child(const char *p, size_t first,
						   size_t nr, unsigned int tag,
						   int rfd, int wfd)
{
	struct wprot_report rep = { -1, 0 };
	const uint64_t *w = (const uint64_t *)p;
	size_t i;
	char go;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(rfd, &go, 1) != 1)
		_exit(1);
	i = lab_check_pat(p, first, nr, tag);
	if (i < nr * WORDS) {
		rep.bad = first + i / WORDS;
		rep.seen = w[i];
	}
	_exit(write(wfd, &rep, sizeof(rep)) == sizeof(rep) ? 0 : 1);
}

/*
 * Proves a move never makes read-only PTEs of a folio writable, i.e. a
 * batch does not give set_ptes() a writable first PTE for read-only ones.
 * One folio (64 or 128 kB) in one VMA: its first half writable and
 * exclusive, its second half read-only because it is shared with a child
 * (MADV_DONTFORK on the first half during fork(), MADV_DOFORK after, so the
 * VMA is whole again).  mremap() moves the folio, aligned and one page off.
 * A write to a page of the first half must then land in place (same PFN),
 * a write to a page of the second half must fault and copy it (new PFN),
 * and the child must still read its original data: a widened write bit
 * would let the parent write into the child's memory.  The moved data is
 * checked before the writes, the new data after them.  (mprotect(PROT_READ)
 * on the second half would split the VMA, and mremap() cannot move a range
 * spanning two VMAs, so a batch could never see both halves.)
 */
TEST_F_TIMEOUT(wprot, write_protect_not_widened, 300)
{
	static const size_t dst_offs[] = { 0, PSZ };
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, n = folio / PSZ, half = n / 2;
	size_t d, i, inplace_ro, copied_rw, first_ro, first_rw;
	int go[2], rep_pipe[2], status, m;
	struct wprot_report rep;
	unsigned int tag, tag2;
	char *src, *area, *dst, *ret;
	uint64_t before, after;
	uint64_t *pm;

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		for (d = 0; d < ARRAY_SIZE(dst_offs); d++) {
			tag = 1 + m * 16 + d * 2;
			tag2 = tag + 1;
			src = map_src(_metadata, folio, folio, 0);
			lab_fill_pat(src, 0, n, tag);
			assert_folios(_metadata, env, src, 1);

			ASSERT_EQ(0, madvise(src, folio / 2, MADV_DONTFORK));
			ASSERT_EQ(0, pipe(go));
			ASSERT_EQ(0, pipe(rep_pipe));
			self->child = fork();
			ASSERT_LE(0, self->child);
			if (!self->child) {
				close(go[1]);
				close(rep_pipe[0]);
				wprot_child(src + folio / 2, half, n - half,
					    tag, go[0], rep_pipe[1]);
			}
			close(go[0]);
			close(rep_pipe[1]);
			ASSERT_EQ(0, madvise(src, folio / 2, MADV_DOFORK));

			area = map_at(2 * folio, folio, 0, PROT_NONE);
			ASSERT_NE(NULL, area);
			dst = area + dst_offs[d];
			ret = mremap(src, folio, folio,
				     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
			ASSERT_EQ(dst, ret)
				TH_LOG("%s: mremap: %s%s", env->mode,
				       strerror(errno), errno == EFAULT ?
				       " (the halves did not merge back)" : "");

			/*
			 * The setup worked: still one folio, its first half
			 * mapped by the parent only, its second half shared.
			 */
			pm = pagemap_mapped(_metadata, env, dst, n,
					    "moved folio");
			for (i = 0; i < n; i++) {
				ASSERT_EQ((pm[0] & LAB_PM_PFN_MASK) + i,
					  pm[i] & LAB_PM_PFN_MASK)
					TH_LOG("%s: moved page %zu is not in the folio",
					       env->mode, i);
				ASSERT_EQ(i < half,
					  !!(pm[i] & LAB_PM_MMAP_EXCLUSIVE))
					TH_LOG("%s: moved page %zu is %sshared with the child",
					       env->mode, i, i < half ? "" : "not ");
			}
			free(pm);
			assert_pattern(_metadata, env, dst, 0, n, tag,
				       "moved folio before the writes");

			inplace_ro = copied_rw = 0;
			first_ro = first_rw = n;
			for (i = 0; i < n; i++) {
				ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd,
							     dst + i * PSZ,
							     &before));
				lab_fill_pat(dst + i * PSZ, i, 1, tag2);
				ASSERT_EQ(0, lab_pagemap_pfn(env->pm_fd,
							     dst + i * PSZ,
							     &after));
				if (i < half && before != after) {
					copied_rw++;
					if (first_rw == n)
						first_rw = i;
				}
				if (i >= half && before == after) {
					inplace_ro++;
					if (first_ro == n)
						first_ro = i;
				}
			}
			assert_pattern(_metadata, env, dst, 0, n, tag2,
				       "moved folio after the writes");

			ASSERT_EQ(1, write(go[1], "g", 1));
			ASSERT_EQ((ssize_t)sizeof(rep),
				  read(rep_pipe[0], &rep, sizeof(rep)))
				TH_LOG("child died before reporting");
			ASSERT_EQ(self->child, waitpid(self->child, &status,
						       0));
			self->child = -1;
			close(go[1]);
			close(rep_pipe[0]);

			ASSERT_EQ(0UL, inplace_ro)
				TH_LOG("%s, dst +%zu: %zu read-only pages written in place, first page %zu: the move made them writable",
				       env->mode, dst_offs[d], inplace_ro,
				       first_ro);
			ASSERT_EQ(-1, rep.bad)
				TH_LOG("%s, dst +%zu: child's page %ld reads %#llx: the parent wrote into the shared folio",
				       env->mode, dst_offs[d], rep.bad,
				       (unsigned long long)rep.seen);
			ASSERT_EQ(0UL, copied_rw)
				TH_LOG("%s, dst +%zu: %zu writable pages were copied on write, first page %zu",
				       env->mode, dst_offs[d], copied_rw,
				       first_rw);

			munmap(area, 2 * folio);
		}
	}
}

FIXTURE(track) {
	struct lab_env env;
	int uffd;
};

FIXTURE_SETUP(track)
{
	self->uffd = -1;
	lab_env_setup(_metadata, &self->env, MB_SWITCH, 64, false);
}

FIXTURE_TEARDOWN(track)
{
	if (self->uffd >= 0)
		close(self->uffd);
	lab_env_teardown(_metadata, &self->env);
}

#define TRACK_FOLIOS	4

/*
 * Proves moved PTEs keep (get) their soft-dirty bit: mremap() marks every
 * moved PTE soft-dirty, so after clear_refs "4" and a move of 4 folios of
 * 64 kB (one of them half written again, so clean and soft-dirty PTEs sit
 * in one folio), pagemap shows soft-dirty and present for every moved page.
 * A never-touched page moved along must stay clean: that proves the new
 * VMA is not VM_SOFTDIRTY, which would make every page read soft-dirty.
 * Destination aligned and one page off.  x86_64 only: arm64 has no
 * soft-dirty in 6.12.
 */
TEST_F_TIMEOUT(track, soft_dirty_survives, 120)
{
	static const size_t dst_offs[] = { 0, PSZ };
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, len = TRACK_FOLIOS * folio;
	const size_t n = len / PSZ, half = folio / PSZ / 2;
	char *src, *area, *dst, *ret;
	unsigned int tag;
	struct utsname u;
	uint64_t *pm;
	size_t d, i;
	bool dirty;
	int m;

	ASSERT_EQ(0, uname(&u));
	if (strcmp(u.machine, "x86_64"))
		SKIP(return, "no soft-dirty on %s in 6.12", u.machine);

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		for (d = 0; d < ARRAY_SIZE(dst_offs); d++) {
			tag = 1 + m * 16 + d;
			/* One more page, never touched: a hole in the move. */
			src = map_src(_metadata, len + PSZ, folio, 0);
			lab_fill_pat(src, 0, n, tag);
			assert_folios(_metadata, env, src, TRACK_FOLIOS);
			/* Before clear_refs, so it loses VM_SOFTDIRTY too. */
			area = map_at(len + 2 * folio, folio, 0, PROT_NONE);
			ASSERT_NE(NULL, area);
			dst = area + dst_offs[d];

			ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs",
						    "4"));
			/* Rewrite the first half of folio 1: soft-dirty. */
			lab_fill_pat(src + folio, n / TRACK_FOLIOS, half, tag);

			pm = malloc((n + 1) * sizeof(*pm));
			ASSERT_NE(NULL, pm);
			ASSERT_EQ(0, lab_pagemap_read(env->pm_fd, src, n + 1,
						      pm));
			for (i = 0; i <= n; i++) {
				dirty = i >= n / TRACK_FOLIOS &&
					i < n / TRACK_FOLIOS + half;
				ASSERT_EQ(dirty, !!(pm[i] & LAB_PM_SOFT_DIRTY))
					TH_LOG("%s: before the move, page %zu is %ssoft-dirty after clear_refs",
					       env->mode, i, dirty ? "not " : "");
			}
			ASSERT_FALSE(!!(pm[n] & (LAB_PM_PRESENT | LAB_PM_SWAP)));
			free(pm);

			ret = mremap(src, len + PSZ, len + PSZ,
				     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
			ASSERT_EQ(dst, ret)
				TH_LOG("%s: mremap: %s", env->mode,
				       strerror(errno));

			pm = pagemap_mapped(_metadata, env, dst, n,
					    "moved range");
			for (i = 0; i < n; i++)
				if (!(pm[i] & LAB_PM_SOFT_DIRTY))
					break;
			ASSERT_EQ(n, i)
				TH_LOG("%s, dst +%zu: moved page %zu is not soft-dirty",
				       env->mode, dst_offs[d], i);
			free(pm);
			pm = malloc(sizeof(*pm));
			ASSERT_NE(NULL, pm);
			ASSERT_EQ(0, lab_pagemap_read(env->pm_fd, dst + len, 1,
						      pm));
			ASSERT_FALSE(!!(pm[0] & LAB_PM_SOFT_DIRTY))
				TH_LOG("%s: the unpopulated page reads soft-dirty: the new VMA is VM_SOFTDIRTY, the test cannot see PTE bits",
				       env->mode);
			free(pm);
			assert_pattern(_metadata, env, dst, 0, n, tag,
				       "moved range");

			munmap(area, len + 2 * folio);
			munmap(src, len + PSZ);
		}
	}
}

/* The uffd features the test needs. */
#define UFFD_NEED	(UFFD_FEATURE_PAGEFAULT_FLAG_WP |		\
			 UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_SIGBUS)

/*
 * Which halves of the 4 folios are write-protected: folio 0 the second,
 * folio 1 the first, folio 2 both, folio 3 neither.
 */
static const bool wp_layout[2 * TRACK_FOLIOS] = {
	false, true, true, false, true, true, false, false,
};

struct remap_reader {
	int uffd;
	int err;
	int others;
	struct uffd_msg msg;
};

/*
 * Thread: reads the UFFD_EVENT_REMAP message the mremap() waits for (in
 * userfaultfd_event_wait_completion()) and keeps it.  Gives up after 30 s.
 */
static void *remap_reader(void *arg)
{
	struct remap_reader *r = arg;
	struct pollfd pfd = { .fd = r->uffd, .events = POLLIN };
	int waited, n;

	for (waited = 0; waited < 30000; waited += 100) {
		n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR) {
			r->err = errno;
			return NULL;
		}
		if (n <= 0)
			continue;
		if (read(r->uffd, &r->msg, sizeof(r->msg)) !=
		    sizeof(r->msg)) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			r->err = errno;
			return NULL;
		}
		if (r->msg.event == UFFD_EVENT_REMAP)
			return NULL;
		r->others++;
	}
	r->err = ETIMEDOUT;
	return NULL;
}

static sigjmp_buf bus_env;
static void *volatile bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	bus_addr = si->si_addr;
	siglongjmp(bus_env, 1);
}

/* Writes @val to *@w; returns 1 if that raised SIGBUS, else 0. */
static int try_write(volatile uint64_t *w, uint64_t val)
{
	if (sigsetjmp(bus_env, 1))
		return 1;
	*w = val;
	return 0;
}

/*
 * Proves moved PTEs keep their uffd-wp bit, and only those that had it.
 * 4 folios of 64 kB are filled (before registering: a uffd-armed VMA gets
 * no mTHP), registered for write-protect with EVENT_REMAP (without it
 * mremap() drops the bits) and SIGBUS, and write-protected by halves: the
 * second half of folio 0, the first of folio 1, all of folio 2, none of
 * folio 3.  After mremap() (aligned and one page off; a thread reads the
 * REMAP event the mremap() waits for) pagemap shows PM_UFFD_WP on exactly
 * the protected pages, the data is intact, and a write raises SIGBUS on
 * every protected page (leaving it unchanged) and on no other.  Fails if
 * userfaultfd or its write-protect support is missing: both lab arches
 * have them in 6.12.
 */
TEST_F_TIMEOUT(track, uffd_wp_survives, 120)
{
	static const size_t dst_offs[] = { 0, PSZ };
	struct lab_env *env = &self->env;
	const size_t folio = env->folio, len = TRACK_FOLIOS * folio;
	const size_t n = len / PSZ, half = folio / PSZ / 2;
	size_t d, i, h, bad_bits, bad_wr, first_bits, first_wr;
	struct sigaction sa = { 0 }, old_sa;
	struct uffdio_writeprotect wp;
	struct uffdio_register reg;
	struct remap_reader rd;
	struct uffdio_api api;
	char *src, *area, *dst, *ret;
	unsigned int tag;
	pthread_t thr;
	uint64_t *pm;
	bool want;
	int fd, m, bus;

	/* The lab's x86_64 and arm64 kernels have uffd-wp: no skip. */
	fd = lab_uffd_open();
	ASSERT_LE(0, fd)
		TH_LOG("userfaultfd: %s: the lab's kernels have USERFAULTFD",
		       strerror(-fd));
	api.api = UFFD_API;
	api.features = 0;
	ASSERT_EQ(0, ioctl(fd, UFFDIO_API, &api))
		TH_LOG("UFFDIO_API: %s", strerror(errno));
	close(fd);
	ASSERT_EQ((__u64)UFFD_NEED, api.features & UFFD_NEED)
		TH_LOG("userfaultfd lacks features %#llx: the lab's x86_64 and arm64 kernels have write-protect (HAVE_ARCH_USERFAULTFD_WP) and EVENT_REMAP",
		       (unsigned long long)(UFFD_NEED & ~api.features));

	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &old_sa));

	for (m = 0; m < env->nr_modes; m++) {
		lab_env_mode(_metadata, env, m);
		for (d = 0; d < ARRAY_SIZE(dst_offs); d++) {
			tag = 1 + m * 16 + d;
			src = map_src(_metadata, len, folio, 0);
			lab_fill_pat(src, 0, n, tag);
			assert_folios(_metadata, env, src, TRACK_FOLIOS);
			area = map_at(len + 2 * folio, folio, 0, PROT_NONE);
			ASSERT_NE(NULL, area);
			dst = area + dst_offs[d];

			self->uffd = lab_uffd_open();
			ASSERT_LE(0, self->uffd)
				TH_LOG("userfaultfd: %s", strerror(-self->uffd));
			api.api = UFFD_API;
			api.features = UFFD_NEED;
			ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api))
				TH_LOG("UFFDIO_API: %s", strerror(errno));
			reg.range.start = (uintptr_t)src;
			reg.range.len = len;
			reg.mode = UFFDIO_REGISTER_MODE_WP;
			ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg))
				TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
			ASSERT_TRUE(!!(reg.ioctls &
				       (1ULL << _UFFDIO_WRITEPROTECT)));
			for (h = 0; h < 2 * TRACK_FOLIOS; h++) {
				if (!wp_layout[h])
					continue;
				wp.range.start = (uintptr_t)src + h * folio / 2;
				wp.range.len = folio / 2;
				wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
				ASSERT_EQ(0, ioctl(self->uffd,
						   UFFDIO_WRITEPROTECT, &wp))
					TH_LOG("UFFDIO_WRITEPROTECT: %s",
					       strerror(errno));
			}
			pm = pagemap_mapped(_metadata, env, src, n,
					    "before the move");
			for (i = 0; i < n; i++) {
				want = wp_layout[i / half];
				ASSERT_EQ(want, !!(pm[i] & LAB_PM_UFFD_WP))
					TH_LOG("%s: before the move, page %zu is %suffd-wp",
					       env->mode, i, want ? "not " : "");
			}
			free(pm);

			memset(&rd, 0, sizeof(rd));
			rd.uffd = self->uffd;
			ASSERT_EQ(0, pthread_create(&thr, NULL, remap_reader,
						    &rd));
			ret = mremap(src, len, len,
				     MREMAP_MAYMOVE | MREMAP_FIXED, dst);
			ASSERT_EQ(dst, ret)
				TH_LOG("%s: mremap: %s", env->mode,
				       strerror(errno));
			ASSERT_EQ(0, pthread_join(thr, NULL));
			ASSERT_EQ(0, rd.err)
				TH_LOG("reading the REMAP event: %s",
				       strerror(rd.err));
			ASSERT_EQ(0, rd.others);
			ASSERT_EQ(UFFD_EVENT_REMAP, rd.msg.event);
			ASSERT_EQ((uintptr_t)src, rd.msg.arg.remap.from);
			ASSERT_EQ((uintptr_t)dst, rd.msg.arg.remap.to);
			ASSERT_EQ(len, rd.msg.arg.remap.len);

			pm = pagemap_mapped(_metadata, env, dst, n,
					    "moved range");
			bad_bits = 0;
			first_bits = n;
			for (i = 0; i < n; i++) {
				want = wp_layout[i / half];
				if (want != !!(pm[i] & LAB_PM_UFFD_WP)) {
					bad_bits++;
					if (first_bits == n)
						first_bits = i;
				}
			}
			free(pm);
			ASSERT_EQ(0UL, bad_bits)
				TH_LOG("%s, dst +%zu: %zu moved pages have the wrong uffd-wp bit, first page %zu (should be %s)",
				       env->mode, dst_offs[d], bad_bits,
				       first_bits,
				       wp_layout[first_bits / half] ?
				       "set" : "clear");
			assert_pattern(_metadata, env, dst, 0, n, tag,
				       "moved range");

			bad_wr = 0;
			first_wr = n;
			for (i = 0; i < n; i++) {
				volatile uint64_t *w =
					(uint64_t *)(dst + i * PSZ);

				want = wp_layout[i / half];
				bus_addr = NULL;
				bus = try_write(w, ~lab_pat(tag, i, 0));
				if (bus != want ||
				    *w != (want ? lab_pat(tag, i, 0) :
					   ~lab_pat(tag, i, 0)) ||
				    (bus && bus_addr != (void *)w)) {
					bad_wr++;
					if (first_wr == n)
						first_wr = i;
				}
			}
			ASSERT_EQ(0UL, bad_wr)
				TH_LOG("%s, dst +%zu: %zu moved pages wrong on write, first page %zu (should %sfault)",
				       env->mode, dst_offs[d], bad_wr,
				       first_wr,
				       wp_layout[first_wr / half] ?
				       "" : "not ");

			close(self->uffd);
			self->uffd = -1;
			munmap(area, len + 2 * folio);
			munmap(src, len);
		}
	}
	sigaction(SIGBUS, &old_sa, NULL);
}

TEST_HARNESS_MAIN
