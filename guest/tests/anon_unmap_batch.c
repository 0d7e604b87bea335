// SPDX-License-Identifier: GPL-2.0
/*
 * anon_unmap_batch.c - tests of anon_unmap_batch: swapping out a
 * swap-backed anonymous large folio in batches loses no data, keeps the
 * swap counts, the anon-exclusive marks, the uffd-wp and soft-dirty bits
 * exact, and takes the batched path exactly when its switch is on.
 *
 * Variants: "stock" (the stock kernel), "off" (unmap_batch 0,
 * anon_unmap_batch 0), "unmap" (1, 0: the file and lazy-free batching as
 * it was, which must leave swap-backed folios to 6.12's per-PTE path),
 * "anon" (0, 1: anon_unmap_batch refines unmap_batch, so 6.12's path
 * again) and "on" (1, 1).  The data tests assert the same outcome in every
 * variant; batch_calls and uffd_wp_shmem_markers count kernel function
 * calls with kprobes (never times) and assert the batched counts in "on"
 * and 6.12's in the others.  uffd_wp_shmem_markers takes the file path of
 * the same switch: shmem large folios in a VMA registered for uffd-wp.
 *
 * Swap: each test swaps on /dev/zram0, at a higher priority than the
 * boot's swap disk, for as long as it runs: a rotational device (the
 * virtio disk) takes no 64 kB folio whole, and the batching applies only
 * to a folio in the swap cache whole.  The teardown turns it off again.
 *
 * Needs root, 4 KiB pages, 64 kB anonymous and shmem mTHP, CONFIG_ZRAM,
 * kprobe events and uffd-wp: the lab's guests have them, so a missing one
 * fails.
 * arm64 has no soft-dirty bit in 6.12: soft_dirty_kept is left out there
 * (lab/guest/suites.py).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "lab_test.h"

#define MTHP_64K	LAB_THP_DIR "/hugepages-64kB/stats"
#define SHMEM_64K	LAB_THP_DIR "/hugepages-64kB/shmem_enabled"
#define ZRAM		"/dev/zram0"
#define ZRAM_SYS	"/sys/block/zram0"
#define PSZ		4096UL
#define WORDS		(PSZ / 8)
#define FOLIO		(64 * LAB_SZ_1K)
#define FOLIO_PAGES	(FOLIO / PSZ)
#define NR_FOLIOS	32
#define LEN		(NR_FOLIOS * FOLIO)
#define NR_PTES		(LEN / PSZ)
#define RW		(PROT_READ | PROT_WRITE)
#define CG		"lab-anon-unmap"
/* kprobe hits that are not the unmap's own (another task's pageout) */
#define SLACK		4
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

enum { SW_UNMAP, SW_ANON, NR_SWITCHES };
static const char *const switch_names[NR_SWITCHES] = {
	"unmap_batch", "anon_unmap_batch",
};

FIXTURE(au) {
	struct lab_knob sw[NR_SWITCHES];
	struct lab_thp thp;
	struct lab_knob shmem_64k;	/* saved by a test that sets it */
	bool thp_saved;
	bool zram_on;
	int pm_fd;
};

FIXTURE_VARIANT(au) {
	const char *flavour;
	const char *sw[NR_SWITCHES];	/* NULL on stock */
};

FIXTURE_VARIANT_ADD(au, stock) { .flavour = "stock" };
FIXTURE_VARIANT_ADD(au, off) { .flavour = "patched", .sw = { "0", "0" } };
FIXTURE_VARIANT_ADD(au, unmap) { .flavour = "patched", .sw = { "1", "0" } };
FIXTURE_VARIANT_ADD(au, anon) { .flavour = "patched", .sw = { "0", "1" } };
FIXTURE_VARIANT_ADD(au, on) { .flavour = "patched", .sw = { "1", "1" } };

/* Whether the variant takes the batched swap-out: both switches on. */
static bool au_batched(const FIXTURE_VARIANT(au) *variant)
{
	return variant->sw[SW_UNMAP] && !strcmp(variant->sw[SW_UNMAP], "1") &&
	       variant->sw[SW_ANON] && !strcmp(variant->sw[SW_ANON], "1");
}

/* Whether /proc/swaps lists ZRAM. */
static bool au_zram_listed(void)
{
	char buf[4096];

	if (lab_read_file("/proc/swaps", buf, sizeof(buf)) <= 0)
		return false;
	return strstr(buf, ZRAM " ") != NULL;
}

/*
 * Swaps on ZRAM (256 MB) at the highest priority.  Returns 0 or -errno;
 * -EBUSY if ZRAM is in use already (the test would not know its state).
 */
static int au_zram_on(void)
{
	unsigned long size;

	if (au_zram_listed())
		return -EBUSY;
	if (lab_read_ulong(ZRAM_SYS "/disksize", &size))
		return -ENOENT;
	if (size && lab_write_file(ZRAM_SYS "/reset", "1"))
		return -EIO;
	if (lab_write_file(ZRAM_SYS "/disksize", "256M"))
		return -EIO;
	if (system("mkswap " ZRAM " > /dev/null 2>&1"))
		return -EIO;
	if (swapon(ZRAM, SWAP_FLAG_PREFER | (32767 & SWAP_FLAG_PRIO_MASK)))
		return -errno;
	return 0;
}

static void au_alarm(int sig)
{
	(void)sig;
}

/*
 * swapoff(ZRAM), given @secs seconds: swapoff() loops while an entry has
 * a count no mapping holds (a leaked reference), and the alarm ends it
 * with EINTR.  Returns 0 or -errno.
 */
static int au_zram_off(unsigned int secs)
{
	struct sigaction sa = { .sa_handler = au_alarm }, old;
	int err = 0;

	sigaction(SIGALRM, &sa, &old);
	alarm(secs);
	if (swapoff(ZRAM))
		err = -errno;
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return err;
}

FIXTURE_SETUP(au)
{
	int i, err;

	for (i = 0; i < NR_SWITCHES; i++)
		self->sw[i].valid = false;
	self->thp_saved = false;
	self->shmem_64k.valid = false;
	self->zram_on = false;
	self->pm_fd = -1;
	LAB_REQUIRE_FLAVOUR(variant->flavour, "variant for the %s kernel",
			    variant->flavour);
	ASSERT_EQ(PSZ, (unsigned long)getpagesize());
	lab_switches_set(_metadata, self->sw, switch_names, variant->sw,
			 NR_SWITCHES);
	ASSERT_EQ(0, lab_thp_save(&self->thp));
	self->thp_saved = true;
	ASSERT_EQ(0, lab_thp_only(&self->thp, FOLIO / LAB_SZ_1K));
	err = au_zram_on();
	ASSERT_EQ(0, err) TH_LOG("swap on " ZRAM ": %s", strerror(-err));
	self->zram_on = true;
	self->pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, self->pm_fd);
}

FIXTURE_TEARDOWN(au)
{
	if (self->pm_fd >= 0)
		close(self->pm_fd);
	if (self->zram_on && au_zram_listed())
		EXPECT_EQ(0, au_zram_off(120));
	if (self->thp_saved)
		EXPECT_EQ(0, lab_thp_restore(&self->thp));
	EXPECT_EQ(0, lab_knob_restore(&self->shmem_64k));
	lab_switches_restore(_metadata, self->sw, NR_SWITCHES);
}

/* A 64 kB mTHP counter (hugepages-64kB/stats/@name), or -1. */
static long long au_mthp(const char *name)
{
	char path[256];
	unsigned long v;

	snprintf(path, sizeof(path), MTHP_64K "/%s", name);
	return lab_read_ulong(path, &v) ? -1 : (long long)v;
}

/*
 * Maps LEN bytes of private anonymous memory, 64 kB-aligned, writes page i
 * with pattern @tag of page i, and returns it (NULL on failure).
 */
static char *au_map_filled(unsigned int tag)
{
	char *p = lab_map_aligned(LEN, FOLIO, 0, RW, MAP_PRIVATE | MAP_ANONYMOUS);

	if (!p)
		return NULL;
	lab_fill_pat(p, 0, NR_PTES, tag);
	return p;
}

/* How many of the NR_PTES pages at @p pagemap shows with all of @bits. */
static size_t au_count(int pm_fd, const char *p, uint64_t bits)
{
	static uint64_t pm[NR_PTES];
	size_t i, n = 0;

	if (lab_pagemap_read(pm_fd, p, NR_PTES, pm))
		return 0;
	for (i = 0; i < NR_PTES; i++)
		n += (pm[i] & bits) == bits;
	return n;
}

/*
 * MADV_PAGEOUTs LEN bytes at @p and waits (up to 5 s) until pagemap shows
 * every page as a swap entry; returns how many are.
 */
static size_t au_pageout(int pm_fd, char *p)
{
	size_t swapped = 0;
	int tries;

	if (madvise(p, LEN, MADV_PAGEOUT))
		return 0;
	for (tries = 0; tries < 50; tries++) {
		swapped = au_count(pm_fd, p, LAB_PM_SWAP);
		if (swapped == NR_PTES)
			break;
		usleep(100000);
	}
	return swapped;
}

/* The pages of the NR_PTES at @p that hold pattern @tag whole. */
static size_t au_intact(const char *p, unsigned int tag)
{
	size_t pg, n = 0;

	for (pg = 0; pg < NR_PTES; pg++)
		n += lab_check_pat(p + pg * PSZ, pg, 1, tag) == WORDS;
	return n;
}

/*
 * Proves the swap-out loses no data, takes the folios whole and leaks no
 * swap reference: 32 folios of 64 kB, each 4 kB page stamped with its own
 * pattern, are paged out (every page a swap entry, 64 kB swpout +32, no
 * fallback), read back (every stamp intact), unmapped, and then swapoff()
 * of the zram device succeeds within 60 s: it cannot while an entry keeps
 * a count that no mapping holds.
 */
TEST_F_TIMEOUT(au, pageout_data, 300)
{
	long long out0, fb0;
	size_t swapped;
	char *p;

	out0 = au_mthp("swpout");
	fb0 = au_mthp("swpout_fallback");
	ASSERT_LE(0, out0);
	p = au_map_filled(0x61);
	ASSERT_NE(NULL, p);
	swapped = au_pageout(self->pm_fd, p);
	ksft_print_msg("%zu of %lu pages swapped out; 64 kB swpout +%lld, fallback +%lld\n",
		       swapped, NR_PTES, au_mthp("swpout") - out0,
		       au_mthp("swpout_fallback") - fb0);
	EXPECT_EQ(NR_PTES, swapped);
	EXPECT_EQ(NR_FOLIOS, au_mthp("swpout") - out0)
		TH_LOG("the folios did not go to swap whole");
	EXPECT_EQ(0, au_mthp("swpout_fallback") - fb0);
	ASSERT_EQ(NR_PTES, au_intact(p, 0x61))
		TH_LOG("a stamp changed across swap-out and swap-in");
	ASSERT_EQ(0, munmap(p, LEN));
	ASSERT_EQ(0, au_zram_off(60))
		TH_LOG("swapoff failed: a swap reference was leaked");
	self->zram_on = false;
}

/*
 * Proves the swap entries keep anon-exclusive right when the pages are
 * shared after swap-out: the parent pages out 32 folios and forks; the
 * child reads every stamp (swap-in of entries it shares), writes pattern
 * 0x62 to every other page and reads it back; the parent still reads 0x61
 * on every page.  An exclusive mark kept on a shared entry would let the
 * child's write land in the parent's page.
 */
TEST_F_TIMEOUT(au, fork_after_pageout, 300)
{
	size_t pg;
	int status;
	pid_t pid;
	char *p;

	p = au_map_filled(0x61);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(NR_PTES, au_pageout(self->pm_fd, p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (au_intact(p, 0x61) != NR_PTES)
			_exit(2);
		for (pg = 0; pg < NR_PTES; pg += 2)
			lab_fill_pat(p + pg * PSZ, pg, 1, 0x62);
		for (pg = 0; pg < NR_PTES; pg += 2)
			if (lab_check_pat(p + pg * PSZ, pg, 1, 0x62) != WORDS)
				_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("the child read wrong data");
	ASSERT_EQ(NR_PTES, au_intact(p, 0x61))
		TH_LOG("the child's writes reached the parent");
	ASSERT_EQ(0, munmap(p, LEN));
}

/*
 * Proves a batch of shared pages is swapped out and COW-broken right: the
 * parent stamps 32 folios and forks, so that every page is mapped by two
 * processes and exclusive to neither; reclaim of their memory cgroup
 * (memory.reclaim) swaps them out through both mappings.  Then the child
 * writes 0x62 to the even pages, the parent 0x64 to the odd ones, and each
 * reads its own writes and the other half still at 0x61.
 */
TEST_F_TIMEOUT(au, fork_then_reclaim, 300)
{
	int go[2], done[2], status, err = 0, i;
	size_t pg, swapped;
	char c = 0, *p;
	pid_t pid;

	ASSERT_EQ(0, lab_cg_enable_memory());
	ASSERT_EQ(0, lab_cg_create(CG));
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	p = au_map_filled(0x61);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (read(go[0], &c, 1) != 1)
			_exit(4);
		if (au_intact(p, 0x61) != NR_PTES)
			_exit(2);
		for (pg = 0; pg < NR_PTES; pg += 2)
			lab_fill_pat(p + pg * PSZ, pg, 1, 0x62);
		if (write(done[1], &c, 1) != 1)
			_exit(4);
		for (pg = 0; pg < NR_PTES; pg++)
			if (lab_check_pat(p + pg * PSZ, pg, 1,
					  pg % 2 ? 0x61 : 0x62) != WORDS)
				_exit(3);
		_exit(0);
	}
	/* the first pass may find the pages young and keep them */
	for (i = 0, swapped = 0; i < 3 && swapped < NR_PTES * 3 / 4; i++) {
		err = lab_cg_reclaim(CG, "8M");
		swapped = au_count(self->pm_fd, p, LAB_PM_SWAP);
	}
	ksft_print_msg("memory.reclaim x%d: %s; %zu of %lu pages swapped out\n",
		       i, err ? strerror(-err) : "all reclaimed", swapped, NR_PTES);
	EXPECT_LE(NR_PTES / 2, swapped)
		TH_LOG("reclaim swapped out less than half of the shared pages");
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(1, read(done[0], &c, 1));
	for (pg = 1; pg < NR_PTES; pg += 2)
		lab_fill_pat(p + pg * PSZ, pg, 1, 0x64);
	for (pg = 0; pg < NR_PTES; pg++)
		EXPECT_EQ(WORDS, lab_check_pat(p + pg * PSZ, pg, 1,
					       pg % 2 ? 0x64 : 0x61))
			TH_LOG("page %zu of the parent is wrong", pg);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the child read wrong data (exit %d)", WEXITSTATUS(status));
	ASSERT_EQ(0, munmap(p, LEN));
	ASSERT_EQ(0, lab_cg_move("", 0));
	EXPECT_EQ(0, lab_cg_remove(CG));
}

/* The kprobes of batch_calls, and what a child reports of one pageout. */
enum { PR_WALK, PR_UNMAP_ONE, PR_DUP, PR_DUP_NR, PR_FLUSH, PR_DEFERRED,
       PR_UNFOLD, NR_PR };
static const char *const pr_funcs[NR_PR] = {
	[PR_WALK] = "page_vma_mapped_walk",
	[PR_UNMAP_ONE] = "try_to_unmap_one",
	[PR_DUP] = "swap_duplicate",
	[PR_DUP_NR] = "swap_duplicate_nr",
#ifdef __x86_64__
	[PR_FLUSH] = "flush_tlb_mm_range",
	[PR_DEFERRED] = "arch_tlbbatch_flush",
#endif
#ifdef __aarch64__
	[PR_UNFOLD] = "__contpte_try_unfold",
#endif
};

struct au_report {
	int err;		/* -errno of the child's first failed step */
	int step;
	size_t swapped;
	size_t intact;
	long long calls[NR_PR];
};

static void au_child_calls(int out)
{
	struct au_report rep = { 0 };
	long long before[NR_PR], after;
	char name[32];
	int i, pm_fd;
	char *p;

	/* the parent's pagemap fd reads the parent's mm: open our own */
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	p = au_map_filled(0x63);
	if (pm_fd < 0 || !p) {
		rep.err = pm_fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (i = 0; i < NR_PR; i++) {
		snprintf(name, sizeof(name), "au_%d", i);
		before[i] = pr_funcs[i] ? lab_kprobe_hits(name) : 0;
	}
	rep.step = 1;
	rep.swapped = au_pageout(pm_fd, p);
	/* -1: no count (no such event: it was not set, or is gone) */
	for (i = 0; i < NR_PR; i++) {
		snprintf(name, sizeof(name), "au_%d", i);
		after = pr_funcs[i] ? lab_kprobe_hits(name) : 0;
		rep.calls[i] = before[i] < 0 || after < 0 ? -1 : after - before[i];
	}
	rep.intact = au_intact(p, 0x63);
out:
	if (write(out, &rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	_exit(0);
}

/*
 * Proves the switch takes effect, and only with unmap_batch: a child
 * process, new and pinned to one CPU (so that x86 flushes at once instead
 * of deferring), MADV_PAGEOUTs 32 folios of 64 kB while kprobes count
 * kernel calls.  6.12 takes a page_vma_mapped_walk() step and a
 * swap_duplicate() per PTE, flushes the TLB per PTE on x86
 * (flush_tlb_mm_range()) and unfolds each contiguous block on arm64
 * (__contpte_try_unfold()).  With both switches on: one
 * swap_duplicate_nr() per folio and no swap_duplicate(), walk steps and
 * x86 flushes at most one per try_to_unmap_one() call (plus SLACK), and no
 * unfold.  In every other variant: a swap_duplicate() per PTE, no
 * swap_duplicate_nr(), at least a walk step per PTE, an x86 flush per PTE,
 * an arm64 unfold per folio.
 */
TEST_F_TIMEOUT(au, batch_calls, 300)
{
	bool stock = !variant->sw[0], on = au_batched(variant);
	const long long ptes = NR_PTES, folios = NR_FOLIOS;
	long long *c;
	struct au_report rep;
	char name[32];
	int out[2], i, status;
	cpu_set_t set;
	pid_t pid;

	for (i = 0; i < NR_PR; i++) {
		if (!pr_funcs[i] || (stock && i == PR_DUP_NR))
			continue;
		snprintf(name, sizeof(name), "au_%d", i);
		ASSERT_EQ(0, lab_kprobe_add(name, pr_funcs[i]))
			TH_LOG("kprobe on %s", pr_funcs[i]);
	}
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(out[0]);
		au_child_calls(out[1]);
	}
	close(out[1]);
	ASSERT_EQ((ssize_t)sizeof(rep), read(out[0], &rep, sizeof(rep)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, rep.err) TH_LOG("child, step %d: %s", rep.step,
				     strerror(-rep.err));
	c = rep.calls;
	for (i = 0; i < NR_PR; i++) {
		if (!pr_funcs[i] || (stock && i == PR_DUP_NR))
			continue;
		ASSERT_LE(0, c[i]) TH_LOG("no count of %s", pr_funcs[i]);
	}
	if (stock)
		c[PR_DUP_NR] = 0;	/* 6.12 has no swap_duplicate_nr() */
	ksft_print_msg("%zu of %lu pages swapped out; calls: walk %lld, try_to_unmap_one %lld, swap_duplicate %lld, swap_duplicate_nr %lld, flush_tlb_mm_range %lld, arch_tlbbatch_flush %lld, __contpte_try_unfold %lld\n",
		       rep.swapped, NR_PTES, c[PR_WALK], c[PR_UNMAP_ONE],
		       c[PR_DUP], c[PR_DUP_NR], c[PR_FLUSH], c[PR_DEFERRED],
		       c[PR_UNFOLD]);
	ASSERT_EQ(NR_PTES, rep.swapped);
	ASSERT_EQ(NR_PTES, rep.intact);
	ASSERT_LE(folios, c[PR_UNMAP_ONE]);
	if (on) {
		EXPECT_GE(SLACK, c[PR_DUP]);
		EXPECT_EQ(folios, c[PR_DUP_NR]);
		EXPECT_GE(c[PR_UNMAP_ONE] + SLACK, c[PR_WALK]) {
			TH_LOG("more than one walk step per folio: not batched");
		}
	} else {
		EXPECT_LE(ptes, c[PR_DUP]);
		EXPECT_EQ(0, c[PR_DUP_NR]);
		EXPECT_LE(c[PR_UNMAP_ONE] + ptes, c[PR_WALK]) {
			TH_LOG("fewer walk steps than PTEs: batched");
		}
	}
#ifdef __x86_64__
	ASSERT_EQ(0, c[PR_DEFERRED])
		TH_LOG("the flushes were deferred: the mm ran on another CPU");
	if (on) {
		EXPECT_GE(c[PR_UNMAP_ONE] + SLACK, c[PR_FLUSH]);
	} else {
		EXPECT_LE(ptes, c[PR_FLUSH]);
	}
#endif
#ifdef __aarch64__
	if (on) {
		EXPECT_GE(2, c[PR_UNFOLD]);
	} else {
		EXPECT_LE(folios, c[PR_UNFOLD]);
	}
#endif
}

/*
 * Registers the LEN bytes at @p for uffd-wp and write-protects them, on a
 * userfaultfd opened with @features; returns the uffd or -errno.
 */
static int au_uffd_wp(char *p, uint64_t features)
{
	struct uffdio_register reg = {
		.range = { .start = (unsigned long)p, .len = LEN },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { .start = (unsigned long)p, .len = LEN },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int fd = lab_uffd_open_features(features), err;

	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) || ioctl(fd, UFFDIO_WRITEPROTECT, &wp)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Proves the uffd-wp bit survives the swap-out of a write-protected range:
 * 32 folios of 64 kB registered
 * for uffd-wp and write-protected are paged out; pagemap shows every page
 * as a swap entry with the uffd-wp bit, and after a read of every page
 * (swap-in) as present with the bit still set.  With both switches on,
 * one swap_duplicate_nr() per folio: such a VMA is batched now.
 */
TEST_F_TIMEOUT(au, uffd_wp_kept, 300)
{
	long long n0 = 0, dupnr;
	size_t wp_swapped, wp_present;
	int fd;
	char *p;

	if (variant->sw[0])
		ASSERT_EQ(0, lab_kprobe_add("au_wp_dupnr", "swap_duplicate_nr"));
	p = au_map_filled(0x65);
	ASSERT_NE(NULL, p);
	fd = au_uffd_wp(p, 0);
	ASSERT_LE(0, fd) TH_LOG("uffd-wp: %s", strerror(-fd));
	if (variant->sw[0])
		n0 = lab_kprobe_hits("au_wp_dupnr");
	ASSERT_EQ(NR_PTES, au_pageout(self->pm_fd, p));
	dupnr = variant->sw[0] ? lab_kprobe_hits("au_wp_dupnr") - n0 : 0;
	wp_swapped = au_count(self->pm_fd, p, LAB_PM_SWAP | LAB_PM_UFFD_WP);
	ASSERT_EQ(NR_PTES, au_intact(p, 0x65));
	wp_present = au_count(self->pm_fd, p, LAB_PM_PRESENT | LAB_PM_UFFD_WP);
	ksft_print_msg("uffd-wp on %zu swap entries, on %zu pages after swap-in; swap_duplicate_nr() %lld\n",
		       wp_swapped, wp_present, dupnr);
	EXPECT_EQ(NR_PTES, wp_swapped) TH_LOG("swap entries lost the uffd-wp bit");
	EXPECT_EQ(NR_PTES, wp_present) TH_LOG("pages lost the uffd-wp bit");
	EXPECT_EQ(au_batched(variant) ? NR_FOLIOS : 0, dupnr);
	close(fd);
	ASSERT_EQ(0, munmap(p, LEN));
}

/*
 * Proves each PTE of a shmem large folio that a batch unmaps keeps its
 * uffd-wp marker: with both switches on, a VMA registered for uffd-wp is
 * batched (patch 0052) and the batch installs a marker in every entry it
 * cleared, not only in the first.  32 folios of 64 kB of shared anonymous
 * memory (shmem), registered for uffd-wp and write-protected, are paged
 * out; every page that left the page table must show the marker
 * (pagemap), most must have left, and after a read of every page (the data
 * intact) every page must still be write-protected.  With both switches
 * on, page_vma_mapped_walk() takes at most one step per
 * try_to_unmap_one() call (plus SLACK), as in batch_calls; in every other
 * variant at least one per PTE: 6.12, and the patched kernel unless both
 * switches are on, unmap such a VMA one PTE at a time.  That the memory was
 * in 64 kB shmem folios is checked (hugepages-64kB/stats/shmem_alloc).
 */
TEST_F_TIMEOUT(au, uffd_wp_shmem_markers, 300)
{
	long long walk0, one0, walk, one, alloc0, alloc;
	size_t left, marked, wp_present;
	uint64_t *pm;
	size_t i;
	int fd;
	char *p;

	ASSERT_EQ(0, lab_kprobe_add("au_sh_walk", "page_vma_mapped_walk"));
	ASSERT_EQ(0, lab_kprobe_add("au_sh_one", "try_to_unmap_one"));
	ASSERT_EQ(0, lab_knob_save(&self->shmem_64k, SHMEM_64K))
		TH_LOG("no %s: the lab's kernels have 64 kB shmem mTHP", SHMEM_64K);
	ASSERT_EQ(0, lab_write_file(SHMEM_64K, "always"));
	alloc0 = au_mthp("shmem_alloc");
	ASSERT_LE(0, alloc0);
	p = lab_map_aligned(LEN, FOLIO, 0, RW, MAP_SHARED | MAP_ANONYMOUS);
	ASSERT_NE(NULL, p);
	lab_fill_pat(p, 0, NR_PTES, 0x66);
	alloc = au_mthp("shmem_alloc") - alloc0;
	ASSERT_LE(NR_FOLIOS, alloc)
		TH_LOG("%lld 64 kB shmem folios allocated for %d", alloc, NR_FOLIOS);
	fd = au_uffd_wp(p, UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	ASSERT_LE(0, fd) TH_LOG("uffd-wp of shmem: %s", strerror(-fd));
	walk0 = lab_kprobe_hits("au_sh_walk");
	one0 = lab_kprobe_hits("au_sh_one");
	ASSERT_LE(0, walk0);
	ASSERT_LE(0, one0);
	ASSERT_EQ(0, madvise(p, LEN, MADV_PAGEOUT));
	walk = lab_kprobe_hits("au_sh_walk");
	one = lab_kprobe_hits("au_sh_one");
	ASSERT_LE(walk0, walk);
	ASSERT_LE(one0, one);
	walk -= walk0;
	one -= one0;

	pm = calloc(NR_PTES, sizeof(*pm));
	ASSERT_NE(NULL, pm);
	ASSERT_EQ(0, lab_pagemap_read(self->pm_fd, p, NR_PTES, pm));
	left = marked = 0;
	for (i = 0; i < NR_PTES; i++) {
		if (pm[i] & LAB_PM_PRESENT)
			continue;
		left++;
		marked += !!(pm[i] & LAB_PM_UFFD_WP);
	}
	free(pm);
	ASSERT_EQ(NR_PTES, au_intact(p, 0x66));
	wp_present = au_count(self->pm_fd, p, LAB_PM_PRESENT | LAB_PM_UFFD_WP);
	ksft_print_msg("%zu of %lu PTEs unmapped, %zu with a uffd-wp marker; "
		       "%zu pages write-protected after the read; "
		       "walk steps %lld, try_to_unmap_one %lld\n",
		       left, NR_PTES, marked, wp_present, walk, one);
	EXPECT_EQ(left, marked) TH_LOG("PTEs left without their uffd-wp marker");
	EXPECT_EQ(NR_PTES, wp_present) TH_LOG("pages lost their write protection");
	ASSERT_LT(NR_PTES / 2, left) TH_LOG("MADV_PAGEOUT unmapped too little");
	ASSERT_LE(NR_FOLIOS, one);
	if (au_batched(variant)) {
		EXPECT_GE(one + SLACK, walk) {
			TH_LOG("more than one walk step per folio: not batched");
		}
	} else {
		EXPECT_LE(one + (long long)left, walk) {
			TH_LOG("fewer walk steps than PTEs: batched");
		}
	}
	close(fd);
	ASSERT_EQ(0, munmap(p, LEN));
}

/*
 * Proves the soft-dirty bit of each page survives a batched swap-out
 * (x86_64; arm64 has no soft-dirty): after clear_refs clears it, page 5 of
 * every even folio and pages 0-7 of every fourth folio are written again,
 * so that folios hold runs of soft-dirty and clean PTEs.  After the
 * pageout, pagemap shows the soft-dirty bit on exactly those pages' swap
 * entries, and after a read of every page (swap-in) on exactly those
 * pages.  A batch that gave its first entry's bit to the others, or the
 * bits its dirty entries merged into, would show more or fewer.
 */
TEST_F_TIMEOUT(au, soft_dirty_kept, 300)
{
#ifdef __x86_64__
	static uint64_t pm[NR_PTES];
	size_t pg, f, want = 0, wrong_out = 0, wrong_in = 0;
	static bool sd[NR_PTES];
	char *p;

	p = au_map_filled(0x66);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, lab_write_file("/proc/self/clear_refs", "4"));
	memset(sd, 0, sizeof(sd));
	for (f = 0; f < NR_FOLIOS; f++) {
		if (f % 2 == 0)
			sd[f * FOLIO_PAGES + 5] = true;
		if (f % 4 == 0)
			for (pg = 0; pg < 8; pg++)
				sd[f * FOLIO_PAGES + pg] = true;
	}
	for (pg = 0; pg < NR_PTES; pg++) {
		if (sd[pg]) {
			lab_fill_pat(p + pg * PSZ, pg, 1, 0x66);
			want++;
		}
	}
	ASSERT_EQ(NR_PTES, au_pageout(self->pm_fd, p));
	ASSERT_EQ(0, lab_pagemap_read(self->pm_fd, p, NR_PTES, pm));
	for (pg = 0; pg < NR_PTES; pg++)
		wrong_out += !!(pm[pg] & LAB_PM_SOFT_DIRTY) != sd[pg];
	ASSERT_EQ(NR_PTES, au_intact(p, 0x66));
	ASSERT_EQ(0, lab_pagemap_read(self->pm_fd, p, NR_PTES, pm));
	for (pg = 0; pg < NR_PTES; pg++)
		wrong_in += !!(pm[pg] & LAB_PM_SOFT_DIRTY) != sd[pg];
	ksft_print_msg("%zu soft-dirty pages; wrong bit on %zu swap entries, on %zu pages after swap-in\n",
		       want, wrong_out, wrong_in);
	EXPECT_EQ(0UL, wrong_out);
	EXPECT_EQ(0UL, wrong_in);
	ASSERT_EQ(0, munmap(p, LEN));
#else
	SKIP(return, "no soft-dirty on arm64 in 6.12");
#endif
}

/* A race: one thread's loop against MADV_PAGEOUT rounds of the main one. */
struct au_race {
	char *p;
	volatile int stop;
	long rounds;
	int err;		/* errno of a failed call, or EBADMSG */
	size_t bad;		/* words found wrong */
};

#define RACE_SECS	10

/*
 * Writer: a counter in word 1 of every page, incremented in page order,
 * each increment checking the value the previous round left; word 0 and
 * the others keep the stamp.
 */
static void *au_writer(void *arg)
{
	struct au_race *r = arg;
	uint64_t *w;
	size_t pg;

	while (!r->stop) {
		for (pg = 0; pg < NR_PTES; pg++) {
			w = (uint64_t *)(r->p + pg * PSZ);
			if (w[1] != (uint64_t)r->rounds)
				r->bad++;
			w[1] = r->rounds + 1;
		}
		r->rounds++;
	}
	return NULL;
}

/* Forker: a child reads every page's stamp (word 0) and exits with 0 or 1. */
static void *au_forker(void *arg)
{
	struct au_race *r = arg;
	int status;
	size_t pg;
	pid_t pid;

	while (!r->stop) {
		pid = fork();
		if (pid < 0) {
			r->err = errno;
			return NULL;
		}
		if (!pid) {
			for (pg = 0; pg < NR_PTES; pg++)
				if (*(uint64_t *)(r->p + pg * PSZ) != lab_pat(0x67, pg, 0))
					_exit(1);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid) {
			r->err = errno;
			return NULL;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			r->bad++;
		r->rounds++;
	}
	return NULL;
}

/* Zapper: MADV_DONTNEED of one folio at a time, then its stamp again. */
static void *au_zapper(void *arg)
{
	struct au_race *r = arg;
	size_t f;

	while (!r->stop) {
		f = r->rounds % NR_FOLIOS;
		if (madvise(r->p + f * FOLIO, FOLIO, MADV_DONTNEED)) {
			r->err = errno;
			return NULL;
		}
		lab_fill_pat(r->p + f * FOLIO, f * FOLIO_PAGES, FOLIO_PAGES, 0x67);
		r->rounds++;
	}
	return NULL;
}

/*
 * Runs @fn in a thread against rounds of this one for RACE_SECS seconds,
 * each round a read of every page (which swaps the region back in) and
 * MADV_PAGEOUT of the whole region, and checks the thread's findings and
 * every stamp (word 0 and words 2 up of every page) afterwards.
 */
static void au_race(struct __test_metadata *_metadata, void *(*fn)(void *),
		    const char *what)
{
	struct au_race r = { 0 };
	uint64_t sink = 0;
	long pageouts = 0;
	size_t pg, w, bad = 0;
	pthread_t t;
	time_t end;

	r.p = au_map_filled(0x67);
	ASSERT_NE(NULL, r.p);
	for (pg = 0; pg < NR_PTES; pg++)
		((uint64_t *)(r.p + pg * PSZ))[1] = 0;
	ASSERT_EQ(0, pthread_create(&t, NULL, fn, &r));
	end = time(NULL) + RACE_SECS;
	while (time(NULL) < end && !r.err) {
		/* swap the region in, so that each round has folios to page out */
		for (pg = 0; pg < NR_PTES; pg++)
			sink += *(volatile uint64_t *)(r.p + pg * PSZ);
		if (madvise(r.p, LEN, MADV_PAGEOUT)) {
			r.err = errno;
			break;
		}
		pageouts++;
	}
	r.stop = 1;
	pthread_join(t, NULL);
	(void)sink;
	for (pg = 0; pg < NR_PTES; pg++)
		for (w = 0; w < WORDS; w++)
			if (w != 1 && ((uint64_t *)(r.p + pg * PSZ))[w] != lab_pat(0x67, pg, w))
				bad++;
	ksft_print_msg("%s: %ld rounds against %ld MADV_PAGEOUTs; %zu found wrong by the thread, %zu stamp words wrong after\n",
		       what, r.rounds, pageouts, r.bad, bad);
	EXPECT_EQ(0, r.err) TH_LOG("%s", strerror(r.err));
	EXPECT_LE(1, r.rounds);
	EXPECT_LE(2, pageouts);
	EXPECT_EQ(0UL, r.bad);
	EXPECT_EQ(0UL, bad);
	ASSERT_EQ(0, munmap(r.p, LEN));
}

/*
 * Proves no store is lost when MADV_PAGEOUT swaps out folios that another
 * thread writes: a writer increments a counter in every page while the
 * main thread pages the region out, for 10 s; every increment finds the
 * value the previous one left, and every stamp holds.
 */
TEST_F_TIMEOUT(au, race_writes, 300)
{
	au_race(_metadata, au_writer, "writes");
}

/*
 * Proves fork() racing the swap-out shares the pages right: a thread forks
 * children that each read every page's stamp while the main thread pages
 * the region out, for 10 s; no child reads a wrong stamp.
 */
TEST_F_TIMEOUT(au, race_fork, 300)
{
	au_race(_metadata, au_forker, "fork");
}

/*
 * Proves MADV_DONTNEED racing the swap-out leaves consistent page tables:
 * a thread zaps one folio at a time and stamps it again while the main
 * thread pages the region out, for 10 s; every stamp holds afterwards
 * (and the console shows no bad swap entry or rmap report).
 */
TEST_F_TIMEOUT(au, race_dontneed, 300)
{
	au_race(_metadata, au_zapper, "MADV_DONTNEED");
}

/*
 * Pinner: a long-term pin (gup_test, FOLL_LONGTERM) of the whole region,
 * taken and dropped in a loop, so that some swap-outs find a folio pinned
 * after its PTEs were cleared and must put them back (the share's -EBUSY:
 * in a batch, swap_free_nr() of the references the batch took).
 */
static void *au_pinner(void *arg)
{
	struct pin_longterm_test pin = {
		.addr = (uintptr_t)((struct au_race *)arg)->p,
		.size = LEN,
	};
	struct au_race *r = arg;
	int gup = open(GUP_TEST, O_RDWR);

	if (gup < 0) {
		r->err = errno;
		return NULL;
	}
	while (!r->stop) {
		if (ioctl(gup, PIN_LONGTERM_TEST_START, &pin) ||
		    ioctl(gup, PIN_LONGTERM_TEST_STOP)) {
			r->err = errno;
			break;
		}
		r->rounds++;
	}
	close(gup);
	return NULL;
}

/*
 * Proves a pin that races the swap-out loses no data and leaks no swap
 * reference: a thread pins and unpins the whole region (gup_test) in a
 * loop while the main thread pages it out, for 10 s; every stamp holds,
 * and the teardown's swapoff() succeeds.
 */
TEST_F_TIMEOUT(au, race_pin, 300)
{
	au_race(_metadata, au_pinner, "long-term pins");
}

#define SHARERS		70
#define SHARED_FOLIOS	4

/*
 * Proves the swap references of a batch that needs a swap count
 * continuation (an entry past SWAP_MAP_MAX, 62 references) are right:
 * the parent stamps 4 folios of 64 kB and forks 70 children, so that each
 * page is mapped 71 times; reclaim of their memory cgroup swaps the folios
 * out through all 71 mappings, which takes each entry past 62 (in a
 * batch, swap_duplicate_nr() falls back to one entry at a time there).
 * Then every child reads every stamp and exits, the parent reads them
 * too, and swapoff() succeeds within 60 s: it could not with a count
 * left over, and a count short by one would free an entry still mapped.
 */
TEST_F_TIMEOUT(au, many_sharers, 600)
{
	const size_t len = SHARED_FOLIOS * FOLIO, nr = len / PSZ;
	int go[2], status, bad = 0, err = 0, i, n;
	pid_t pids[SHARERS];
	size_t swapped = 0;
	char c = 0, *p;

	ASSERT_EQ(0, lab_cg_enable_memory());
	ASSERT_EQ(0, lab_cg_create(CG));
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	p = lab_map_aligned(len, FOLIO, 0, RW, MAP_PRIVATE | MAP_ANONYMOUS);
	ASSERT_NE(NULL, p);
	lab_fill_pat(p, 0, nr, 0x68);
	ASSERT_EQ(0, pipe(go));
	for (n = 0; n < SHARERS; n++) {
		pids[n] = fork();
		if (pids[n] < 0)
			break;
		if (!pids[n]) {
			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(4);
			_exit(lab_check_pat(p, 0, nr, 0x68) == nr * WORDS ? 0 : 2);
		}
	}
	close(go[0]);
	ASSERT_EQ(SHARERS, n) TH_LOG("fork: %s", strerror(errno));
	for (i = 0; i < 3 && swapped < nr; i++) {
		err = lab_cg_reclaim(CG, "8M");
		swapped = 0;
		{
			uint64_t pm[SHARED_FOLIOS * FOLIO_PAGES];
			size_t k;

			ASSERT_EQ(0, lab_pagemap_read(self->pm_fd, p, nr, pm));
			for (k = 0; k < nr; k++)
				swapped += !!(pm[k] & LAB_PM_SWAP);
		}
	}
	ksft_print_msg("memory.reclaim x%d: %s; %zu of %zu pages swapped out, each mapped %d times\n",
		       i, err ? strerror(-err) : "all reclaimed", swapped, nr,
		       SHARERS + 1);
	close(go[1]);
	for (n = 0; n < SHARERS; n++) {
		ASSERT_EQ(pids[n], waitpid(pids[n], &status, 0));
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	EXPECT_EQ(0, bad) TH_LOG("%d children read a wrong stamp", bad);
	EXPECT_EQ(nr * WORDS, lab_check_pat(p, 0, nr, 0x68));
	EXPECT_LE(nr / 2, swapped)
		TH_LOG("reclaim swapped out less than half of the shared pages");
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, lab_cg_move("", 0));
	EXPECT_EQ(0, lab_cg_remove(CG));
	ASSERT_EQ(0, au_zram_off(60))
		TH_LOG("swapoff failed: a swap reference was leaked");
	self->zram_on = false;
}

TEST_HARNESS_MAIN
