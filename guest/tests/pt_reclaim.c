// SPDX-License-Identifier: GPL-2.0
/*
 * pt_reclaim.c - tests of pt_reclaim: MADV_DONTNEED over a range that covers
 * a whole 2 MB-aligned PTE page frees that page when every entry of it is
 * none afterwards, and VmPTE in /proc/self/status drops by 4 kB.
 *
 * Every test runs as three variants: "on" and "off" write 1 and 0 to
 * /sys/kernel/mm/foliobatch/pt_reclaim on the patched kernel (the teardown,
 * run in the parent so that it survives a crashed test, writes the saved
 * value back); "stock" runs on the stock kernel, which has no switch.
 * LAB_FLAVOUR (stock or patched) picks the variants that run, the others
 * skip.  Reclaim is expected with the switch on only: stock 6.12 keeps one
 * 4 kB PTE page per 2 MB region a process ever touched.
 *
 * All ranges are MADV_NOHUGEPAGE, which also rules out mTHP, so that memory
 * is mapped by PTEs.  VmPTE counts every page-table page of the process (PTE,
 * PMD and PUD tables), so checks that span a first touch of a range allow a
 * few kB for the PMD tables that touch allocates.
 *
 * Needs root and 4 KiB pages; the file tests need XFS on /mnt/xfs, the
 * uffd tests userfaultfd with write-protect and UFFDIO_MOVE, the collapse
 * test shmem THP.  The lab's guests and kernels have all of them (XFS on
 * the disk guest/init mounts; USERFAULTFD, TRANSPARENT_HUGEPAGE and SHMEM
 * in configs/common.config, uffd-wp on both x86_64 and arm64 in 6.12), so
 * a missing one fails the test rather than skipping it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "lab_test.h"

#define PT_RECLAIM	"/sys/kernel/mm/foliobatch/pt_reclaim"
#define XFS_DIR		"/mnt/xfs"
#define XFS_FILE	XFS_DIR "/lab-pt-reclaim"

#define PSZ		4096UL
#define WORDS		(PSZ / sizeof(uint64_t))
#define PMD_SZ		LAB_SZ_2M
#define PMD_PAGES	(PMD_SZ / PSZ)
/* One PTE page, in the kB of VmPTE. */
#define PTE_KB		(PSZ / LAB_SZ_1K)
/* Room for the PMD (and PUD) tables a first touch of a range allocates. */
#define SLACK_KB	16L

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25	/* uapi/asm-generic/mman-common.h, 6.1 */
#endif

/* Pattern tags; 0 stands for zero-filled memory. */
#define TAG_ANON	0x11
#define TAG_FILE	0x22
#define TAG_COW		0x33
#define TAG_SHMEM	0x44

/* The word @word of page @page of a range filled with tag @tag. */
static inline uint64_t pat(unsigned int tag, size_t page, size_t word)
{
	return (uint64_t)tag << 40 | (uint64_t)page << 12 | word;
}

/* Fills pages [@first, @first + @nr) of @p with pattern @tag. */
static void fill(char *p, size_t first, size_t nr, unsigned int tag)
{
	volatile uint64_t *w;
	size_t pg, i;

	for (pg = first; pg < first + nr; pg++) {
		w = (volatile uint64_t *)(p + pg * PSZ);
		for (i = 0; i < WORDS; i++)
			w[i] = pat(tag, pg, i);
	}
}

/*
 * Reads pages [@first, @first + @nr) of @p.  Returns the first one that
 * does not hold pattern @tag (zeroes for tag 0), or -1 if all do.
 */
static long bad_page(const char *p, size_t first, size_t nr, unsigned int tag)
{
	const volatile uint64_t *w;
	size_t pg, i;

	for (pg = first; pg < first + nr; pg++) {
		w = (const volatile uint64_t *)(p + pg * PSZ);
		for (i = 0; i < WORDS; i++)
			if (w[i] != (tag ? pat(tag, pg, i) : 0))
				return pg;
	}
	return -1;
}

#define ASSERT_PAGES(p, first, nr, tag, what) do {			\
	long __bad = bad_page(p, first, nr, tag);			\
									\
	ASSERT_EQ(-1, __bad)						\
		TH_LOG("%s: page %ld does not hold %s", what, __bad,	\
		       (tag) ? "its pattern" : "zeroes");		\
} while (0)

/*
 * Maps @len bytes (a multiple of 2 MB) of anonymous memory at a 2 MB-aligned
 * address, as a VMA of exactly @len bytes, and makes it MADV_NOHUGEPAGE.
 * @flags is MAP_PRIVATE or MAP_SHARED (shmem).  Returns MAP_FAILED on failure.
 */
static char *map_aligned(size_t len, int prot, int flags)
{
	size_t total = len + PMD_SZ;
	char *map, *p;

	map = mmap(NULL, total, prot, flags | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (map == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)map + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	if (p != map)
		munmap(map, p - map);
	munmap(p + len, map + total - (p + len));
	if (madvise(p, len, MADV_NOHUGEPAGE)) {
		munmap(p, len);
		return MAP_FAILED;
	}
	return p;
}

FIXTURE(pt) {
	struct lab_knob knob;
	/* THP settings a test changed, restored by the teardown. */
	struct lab_thp thp;
	bool thp_saved;
	/* The switch is on: DONTNEED of a whole PTE page frees it. */
	bool reclaim;
};

FIXTURE_VARIANT(pt) {
	/* LAB_FLAVOUR this variant runs on. */
	const char *flavour;
	/* Value written to the switch; NULL on stock. */
	const char *value;
};

FIXTURE_VARIANT_ADD(pt, on) {
	.flavour = "patched",
	.value = "1",
};

FIXTURE_VARIANT_ADD(pt, off) {
	.flavour = "patched",
	.value = "0",
};

FIXTURE_VARIANT_ADD(pt, stock) {
	.flavour = "stock",
	.value = NULL,
};

/*
 * Skips variants of the other flavour, checks that the switch exists exactly
 * on patched, and sets it.  Writing the switch is the last thing that can
 * fail, so that the teardown runs whenever it was changed.
 */
FIXTURE_SETUP(pt)
{
	self->knob.valid = false;
	self->thp_saved = false;
	self->reclaim = false;
	LAB_REQUIRE_FLAVOUR(variant->flavour, "variant for the %s kernel",
			    variant->flavour);
	ASSERT_EQ(PSZ, (unsigned long)getpagesize());
	if (!variant->value) {
		ASSERT_FALSE(lab_path_exists(PT_RECLAIM))
			TH_LOG("the stock kernel has %s", PT_RECLAIM);
		return;
	}
	ASSERT_EQ(0, lab_knob_save(&self->knob, PT_RECLAIM))
		TH_LOG("cannot read %s", PT_RECLAIM);
	ASSERT_EQ(0, lab_write_file(PT_RECLAIM, variant->value))
		TH_LOG("cannot write %s to %s", variant->value, PT_RECLAIM);
	self->reclaim = !strcmp(variant->value, "1");
}

FIXTURE_TEARDOWN_PARENT(pt)
{
	EXPECT_EQ(0, lab_knob_restore(&self->knob))
		TH_LOG("cannot restore %s to %s", self->knob.path,
		       self->knob.saved);
	if (self->thp_saved)
		EXPECT_EQ(0, lab_thp_restore(&self->thp))
			TH_LOG("cannot restore the THP settings");
}

/*
 * Proves the feature and its switch: 512 rounds of {fill a 2 MB-aligned
 * region, MADV_DONTNEED exactly that region} over distinct regions of one
 * 1 GB mapping leave VmPTE within 16 kB of where it was with the switch on
 * (every PTE page is freed again; the slack is for the PMD tables of the
 * mapping), and grow it by at least 512 PTE pages less 16 kB with the switch
 * off and on stock, where every emptied PTE page stays.
 */
TEST_F_TIMEOUT(pt, rounds, 300)
{
	const size_t rounds = 512, len = rounds * PMD_SZ;
	long before, after;
	size_t i;
	char *p;

	p = map_aligned(len, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));

	before = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	for (i = 0; i < rounds; i++) {
		memset(p + i * PMD_SZ, 1, PMD_SZ);
		ASSERT_EQ(0, madvise(p + i * PMD_SZ, PMD_SZ, MADV_DONTNEED))
			TH_LOG("round %zu: %s", i, strerror(errno));
	}
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, after);
	munmap(p, len);

	ksft_print_msg("%zu rounds: VmPTE before %ld kB after %ld kB\n",
		       rounds, before, after);
	if (self->reclaim) {
		ASSERT_LE(after - before, SLACK_KB)
			TH_LOG("empty PTE pages were not freed");
	} else {
		ASSERT_LE((long)(rounds * PTE_KB) - SLACK_KB, after - before)
			TH_LOG("PTE pages were freed without pt_reclaim");
	}
}

/*
 * Proves a DONTNEED that leaves the last page of a 2 MB region mapped (it
 * covers 2 MB less one page) keeps the PTE page: VmPTE unchanged, the last
 * page still holds its data, the others read zero.
 */
TEST_F(pt, no_reclaim_partial_tail)
{
	long before, after;
	char *p;

	p = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, PMD_PAGES, TAG_ANON);

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, PMD_SZ - PSZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_EQ(before, after) TH_LOG("a PTE page in use was freed");

	ASSERT_PAGES(p, PMD_PAGES - 1, 1, TAG_ANON, "last page");
	ASSERT_PAGES(p, 0, PMD_PAGES - 1, 0, "dropped pages");
	munmap(p, PMD_SZ);
}

/*
 * Proves a DONTNEED of 1 MB in the middle of a populated 2 MB region keeps
 * the PTE page: VmPTE unchanged, the 512 kB on either side keep their data,
 * the middle reads zero.
 */
TEST_F(pt, no_reclaim_partial_half)
{
	const size_t q = PMD_PAGES / 4;
	long before, after;
	char *p;

	p = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, PMD_PAGES, TAG_ANON);

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p + q * PSZ, 2 * q * PSZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_EQ(before, after) TH_LOG("a PTE page in use was freed");

	ASSERT_PAGES(p, 0, q, TAG_ANON, "first quarter");
	ASSERT_PAGES(p, 3 * q, q, TAG_ANON, "last quarter");
	ASSERT_PAGES(p, q, 2 * q, 0, "dropped middle");
	munmap(p, PMD_SZ);
}

/*
 * Proves a DONTNEED of a whole VMA keeps the PTE page it shares with a
 * neighbouring VMA: a 2 MB-aligned region is populated, its second 1 MB made
 * read-only (a VMA of its own), and DONTNEED of the first VMA leaves VmPTE
 * unchanged and the second VMA's data intact.
 */
TEST_F(pt, no_reclaim_partial_vma)
{
	const size_t half = PMD_PAGES / 2;
	long before, after;
	char *p;

	p = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, PMD_PAGES, TAG_ANON);
	ASSERT_EQ(0, mprotect(p + half * PSZ, half * PSZ, PROT_READ));

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, half * PSZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_EQ(before, after) TH_LOG("a PTE page in use was freed");

	ASSERT_PAGES(p, half, half, TAG_ANON, "read-only VMA");
	ASSERT_PAGES(p, 0, half, 0, "dropped VMA");
	munmap(p, PMD_SZ);
}

/*
 * Proves a DONTNEED of 2 MB that is not 2 MB-aligned frees neither of the
 * two PTE pages it straddles: both regions are populated, the range covers
 * the second half of one and the first half of the other; VmPTE unchanged,
 * the outer halves keep their data, the range reads zero.
 */
TEST_F(pt, no_reclaim_partial_unaligned)
{
	const size_t half = PMD_PAGES / 2, len = 2 * PMD_SZ;
	long before, after;
	char *p;

	p = map_aligned(len, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, 2 * PMD_PAGES, TAG_ANON);

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p + half * PSZ, PMD_SZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_EQ(before, after) TH_LOG("a PTE page in use was freed");

	ASSERT_PAGES(p, 0, half, TAG_ANON, "first half");
	ASSERT_PAGES(p, 3 * half, half, TAG_ANON, "last half");
	ASSERT_PAGES(p, half, PMD_PAGES, 0, "dropped range");
	munmap(p, len);
}

/*
 * Reads the pagemap entries of the @nr pages at @p and checks that their
 * PM_PRESENT and PM_UFFD_WP bits are @want.  Returns the first page that
 * differs, its entry in *@entry, or -1; -2 if pagemap could not be read.
 */
static long pm_mismatch(int pm_fd, const char *p, size_t nr, uint64_t want,
			uint64_t *entry)
{
	uint64_t pm[PMD_PAGES];
	size_t i;

	if (nr > PMD_PAGES || lab_pagemap_read(pm_fd, p, nr, pm))
		return -2;
	for (i = 0; i < nr; i++) {
		*entry = pm[i];
		if ((pm[i] & (LAB_PM_PRESENT | LAB_PM_UFFD_WP)) != want)
			return i;
	}
	return -1;
}

#define ASSERT_PAGEMAP(pm_fd, p, nr, want, when) do {			\
	uint64_t __e = 0;						\
	long __bad = pm_mismatch(pm_fd, p, nr, want, &__e);		\
									\
	ASSERT_EQ(-1, __bad)						\
		TH_LOG("%s, page %ld (-2: unreadable): pagemap %#llx",	\
		       when, __bad, (unsigned long long)__e);		\
} while (0)

/*
 * Proves uffd-wp markers keep a PTE page: a 2 MB-aligned shmem region is
 * filled, registered with userfaultfd in write-protect mode and write
 * protected; DONTNEED of all of it replaces its PTEs with uffd-wp markers
 * (file-backed VMA), so VmPTE is unchanged, pagemap shows PM_UFFD_WP on
 * every page (a freed PTE page would read as a hole, without it), and reads
 * still return the data, which shmem keeps in its page cache.  Fails when
 * the kernel lacks uffd-wp for shmem: the lab's 6.12 builds have it on
 * both arches (arch/arm64/Kconfig selects HAVE_ARCH_USERFAULTFD_WP in
 * this tree, x86 since 5.7; PTE_MARKER_UFFD_WP in configs/common.config).
 */
TEST_F(pt, no_reclaim_uffd_wp)
{
	struct uffdio_writeprotect wp = { 0 };
	struct uffdio_register reg = { 0 };
	long before, after;
	int uffd, pm_fd;
	char *p;

	uffd = lab_uffd_open_features(UFFD_FEATURE_PAGEFAULT_FLAG_WP |
				      UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	ASSERT_LE(0, uffd)
		TH_LOG("no userfaultfd write protection for shmem: %s",
		       strerror(-uffd));

	p = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, PMD_PAGES, TAG_SHMEM);

	reg.range.start = (uintptr_t)p;
	reg.range.len = PMD_SZ;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
	ASSERT_TRUE(!!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)));
	wp.range.start = (uintptr_t)p;
	wp.range.len = PMD_SZ;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		TH_LOG("UFFDIO_WRITEPROTECT: %s", strerror(errno));

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pm_fd);
	ASSERT_PAGEMAP(pm_fd, p, PMD_PAGES, LAB_PM_PRESENT | LAB_PM_UFFD_WP,
		       "before DONTNEED");

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, PMD_SZ, MADV_DONTNEED))
		TH_LOG("MADV_DONTNEED: %s", strerror(errno));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_EQ(before, after)
		TH_LOG("the PTE page holding uffd-wp markers was freed");

	ASSERT_PAGEMAP(pm_fd, p, PMD_PAGES, LAB_PM_UFFD_WP, "after DONTNEED");

	/* Read faults through the markers; no write, it would block. */
	ASSERT_PAGES(p, 0, PMD_PAGES, TAG_SHMEM, "shmem after DONTNEED");
	ASSERT_PAGEMAP(pm_fd, p, PMD_PAGES, LAB_PM_PRESENT | LAB_PM_UFFD_WP,
		       "after reading");

	close(pm_fd);
	close(uffd);
	munmap(p, PMD_SZ);
}

/*
 * Checks the VmPTE change of one DONTNEED that emptied a whole PTE page:
 * -4 kB with the switch on, none otherwise.
 */
#define ASSERT_ONE_RECLAIMED(before, after) do {			\
	ksft_print_msg("VmPTE before %ld kB after %ld kB\n",		\
		       before, after);					\
	ASSERT_LE(0, before);						\
	ASSERT_EQ(before - (self->reclaim ? (long)PTE_KB : 0), after)	\
		TH_LOG("%s", self->reclaim ?				\
		       "the empty PTE page was not freed" :		\
		       "a PTE page was freed without pt_reclaim");	\
} while (0)

/*
 * Proves private anonymous memory is sound after its PTE page was freed (or
 * kept): a DONTNEED of a filled 2 MB region changes VmPTE by -4 kB with the
 * switch on and not at all otherwise; afterwards every byte reads zero, and
 * new data written into the region (through a new PTE page) reads back.
 */
TEST_F(pt, data_after_reclaim_anon)
{
	long before, after;
	char *p;

	p = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	fill(p, 0, PMD_PAGES, TAG_ANON);

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, PMD_SZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_ONE_RECLAIMED(before, after);

	ASSERT_PAGES(p, 0, PMD_PAGES, 0, "after DONTNEED");
	fill(p, 0, PMD_PAGES, TAG_COW);
	ASSERT_PAGES(p, 0, PMD_PAGES, TAG_COW, "written again");
	munmap(p, PMD_SZ);
}

/*
 * Creates an unlinked 4 MB file on XFS holding pattern TAG_FILE, written with
 * write(2) and fsync'd, and maps it at a 2 MB-aligned address with @flags
 * (MAP_SHARED or MAP_PRIVATE), MADV_NOHUGEPAGE so that it is PTE-mapped.
 */
static char *map_xfs_file(struct __test_metadata *_metadata, size_t len,
			  int flags, int *fdp)
{
	size_t done = 0;
	char *buf, *p;
	ssize_t n;
	int fd;

	fd = open(XFS_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd) TH_LOG("create %s: %s", XFS_FILE, strerror(errno));
	ASSERT_EQ(0, unlink(XFS_FILE));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	fill(buf, 0, len / PSZ, TAG_FILE);
	while (done < len) {
		n = write(fd, buf + done, len - done);
		ASSERT_LT(0, n) TH_LOG("write: %s", strerror(errno));
		done += n;
	}
	free(buf);
	ASSERT_EQ(0, fsync(fd));

	p = map_aligned(len, PROT_NONE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(p, mmap(p, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED,
			  fd, 0))
		TH_LOG("mmap of the file: %s", strerror(errno));
	ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
	*fdp = fd;
	return p;
}

/*
 * Proves a shared file mapping is sound after its PTE page was freed: a 4 MB
 * file on XFS written with write(2) is mapped MAP_SHARED at a 2 MB-aligned
 * address and its first 2 MB read; a DONTNEED of those 2 MB changes VmPTE by
 * -4 kB with the switch on and not at all otherwise; reading the mapping
 * again returns the file's bytes.
 */
TEST_F(pt, data_after_reclaim_shared)
{
	const size_t len = 2 * PMD_SZ;
	long before, after;
	char *p;
	int fd, ret;

	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_LE(0, ret) TH_LOG("/proc/mounts: %s", strerror(-ret));
	ASSERT_EQ(1, ret)
		TH_LOG("%s is not an XFS mount point: the lab's guest mounts its labxfs disk there (guest/init)",
		       XFS_DIR);

	p = map_xfs_file(_metadata, len, MAP_SHARED, &fd);
	ASSERT_PAGES(p, 0, PMD_PAGES, TAG_FILE, "file before DONTNEED");

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, PMD_SZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_ONE_RECLAIMED(before, after);

	ASSERT_PAGES(p, 0, len / PSZ, TAG_FILE, "file after DONTNEED");
	munmap(p, len);
	close(fd);
}

/*
 * Proves a private file mapping is sound after its PTE page was freed: the
 * first 2 MB of a MAP_PRIVATE mapping of a 4 MB XFS file are overwritten
 * (every page becomes a private anonymous copy); a DONTNEED of those 2 MB
 * changes VmPTE by -4 kB with the switch on and not at all otherwise, drops
 * the copies, and reads return the file's original bytes.
 */
TEST_F(pt, data_after_reclaim_private)
{
	const size_t len = 2 * PMD_SZ;
	long before, after;
	char *p;
	int fd, ret;

	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_LE(0, ret) TH_LOG("/proc/mounts: %s", strerror(-ret));
	ASSERT_EQ(1, ret)
		TH_LOG("%s is not an XFS mount point: the lab's guest mounts its labxfs disk there (guest/init)",
		       XFS_DIR);

	p = map_xfs_file(_metadata, len, MAP_PRIVATE, &fd);
	ASSERT_PAGES(p, 0, PMD_PAGES, TAG_FILE, "file before writing");
	fill(p, 0, PMD_PAGES, TAG_COW);
	ASSERT_PAGES(p, 0, PMD_PAGES, TAG_COW, "private copies");

	before = lab_status_kb("VmPTE");
	ASSERT_EQ(0, madvise(p, PMD_SZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_ONE_RECLAIMED(before, after);

	ASSERT_PAGES(p, 0, len / PSZ, TAG_FILE, "file after DONTNEED");
	munmap(p, len);
	close(fd);
}

/*
 * UFFDIO_MOVE racing MADV_DONTNEED of its source range.  move_pages_pte()
 * maps the source page table and then checks the source PMD; in between,
 * a DONTNEED of the whole 2 MB source region can free that table with
 * pt_reclaim on, and a fault can install a new table or, with THP, a huge
 * PMD.  Either is a legitimate race: the move must retry, never fail with
 * EINVAL, and never warn.  Any WARNING in the console fails the boot; that
 * is the main evidence, as an EINVAL after some pages of the range moved
 * reaches user space as EAGAIN.
 */
#define MOVE_SECONDS	6

static struct {
	char *src;
	char *dst;
	int uffd;
	int stop;
	/* /proc/kpageflags, to tell THPs at the source; -1: do not look. */
	int kpf_fd;
	unsigned long passes, moved, dontneeds, touches, thp_passes;
	int bad_errno;
	size_t bad_page;
	uint64_t bad_word;
} mv;

static inline uint64_t mv_stamp(size_t page)
{
	return 0x4d4f564500000000ULL | page;
}

/* Touches one source page, then zaps the whole region: the PTE page goes. */
static void *mv_zapper(void *arg)
{
	unsigned int seed = 1;

	while (!__atomic_load_n(&mv.stop, __ATOMIC_ACQUIRE)) {
		size_t pg = rand_r(&seed) % PMD_PAGES;
		int i;

		for (i = 0; i < 32; i++, pg = (pg + 97) % PMD_PAGES) {
			*(volatile uint64_t *)(mv.src + pg * PSZ) = mv_stamp(pg);
			mv.touches++;
		}
		madvise(mv.src, PMD_SZ, MADV_DONTNEED);
		mv.dontneeds++;
	}
	return NULL;
}

/*
 * One pass: stamps one source page itself, so that nearly every pass has
 * a page table and a page to move whatever the scheduler makes of the
 * zapper (which can still zap between the stamp and the move), and counts
 * the pass in thp_passes when that page is part of a THP (kpageflags),
 * then moves the whole source region with one UFFDIO_MOVE, holes allowed,
 * so that the kernel walks the source page table back to back with the
 * zapper freeing it; then checks each page that arrived (found through
 * pagemap, so that reading it cannot block on the userfaultfd): it holds
 * its own stamp, or zeroes (a page of a THP that was never written).
 * EAGAIN, and EBUSY for a THP that cannot be split just now, end the pass
 * early; any other error is recorded.
 */
static void mv_mover(int pm_fd)
{
	struct uffdio_move m = {
		.dst = (unsigned long)mv.dst,
		.src = (unsigned long)mv.src,
		.len = PMD_SZ,
		.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES,
	};
	uint64_t pm[PMD_PAGES], w, pfn, flags;
	size_t pg = (mv.passes * 61) % PMD_PAGES;

	*(volatile uint64_t *)(mv.src + pg * PSZ) = mv_stamp(pg);
	if (mv.kpf_fd >= 0 &&
	    !lab_pagemap_pfn(pm_fd, mv.src + pg * PSZ, &pfn) &&
	    !lab_kpageflags(mv.kpf_fd, pfn, &flags) &&
	    (flags & (1ULL << LAB_KPF_THP)))
		mv.thp_passes++;
	if (ioctl(mv.uffd, UFFDIO_MOVE, &m) && errno != EAGAIN &&
	    errno != EBUSY) {
		mv.bad_errno = errno;
		return;
	}
	mv.passes++;
	if (lab_pagemap_read(pm_fd, mv.dst, PMD_PAGES, pm)) {
		mv.bad_errno = EIO;
		return;
	}
	for (pg = 0; pg < PMD_PAGES; pg++) {
		if (!(pm[pg] & LAB_PM_PRESENT))
			continue;
		mv.moved++;
		w = *(volatile uint64_t *)(mv.dst + pg * PSZ);
		if (w && w != mv_stamp(pg)) {
			mv.bad_page = pg;
			mv.bad_word = w;
			return;
		}
	}
	/* The destination must be none again for the next pass. */
	madvise(mv.dst, PMD_SZ, MADV_DONTNEED);
}

/*
 * The race for uffd_move_race (@thp_advice MADV_NOHUGEPAGE, @kpf_fd -1) and
 * uffd_move_race_thp (MADV_HUGEPAGE, @kpf_fd /proc/kpageflags).  With
 * @kpf_fd, the source must be one 2 MB folio before the race starts, and
 * with @thp_again (pt_reclaim on) a THP must be found at the source again
 * in at least two passes: the first pass moves the first THP away.
 */
static void uffd_move_race(struct __test_metadata *_metadata, int thp_advice,
			   int kpf_fd, bool thp_again)
{
	struct uffdio_register reg = { 0 };
	struct timespec t0, t;
	pthread_t zapper;
	int uffd, pm_fd, ret;
	size_t size;

	uffd = lab_uffd_open_features(UFFD_FEATURE_MOVE);
	ASSERT_LE(0, uffd)
		TH_LOG("no userfaultfd with UFFD_FEATURE_MOVE: %s",
		       strerror(-uffd));

	memset(&mv, 0, sizeof(mv));
	mv.uffd = uffd;
	mv.kpf_fd = kpf_fd;
	mv.src = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS);
	ASSERT_NE(MAP_FAILED, mv.src) TH_LOG("mmap: %s", strerror(errno));
	mv.dst = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS);
	ASSERT_NE(MAP_FAILED, mv.dst) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0, madvise(mv.src, PMD_SZ, thp_advice));
	ASSERT_EQ(0, madvise(mv.dst, PMD_SZ, MADV_NOHUGEPAGE));
	reg.range.start = (unsigned long)mv.dst;
	reg.range.len = PMD_SZ;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pm_fd) TH_LOG("pagemap: %s", strerror(errno));

	if (kpf_fd >= 0) {
		/* The first fault maps a 2 MB folio: the race starts there. */
		*(volatile uint64_t *)mv.src = mv_stamp(0);
		ret = lab_folio_mapped_size(pm_fd, kpf_fd, mv.src,
					    PMD_SZ + PSZ, &size);
		ASSERT_EQ(0, ret) TH_LOG("pagemap or kpageflags: %s",
					 strerror(-ret));
		ASSERT_EQ(PMD_SZ, size)
			TH_LOG("the source maps %zu kB of one folio, not a 2 MB THP",
			       size / LAB_SZ_1K);
	}

	ASSERT_EQ(0, pthread_create(&zapper, NULL, mv_zapper, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		mv_mover(pm_fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (mv.bad_errno || mv.bad_word)
			break;
	} while (t.tv_sec - t0.tv_sec < MOVE_SECONDS);
	__atomic_store_n(&mv.stop, 1, __ATOMIC_RELEASE);
	pthread_join(zapper, NULL);

	ksft_print_msg("%lu passes, %lu pages moved, %lu DONTNEEDs, %lu touches\n",
		       mv.passes, mv.moved, mv.dontneeds, mv.touches);
	if (kpf_fd >= 0)
		ksft_print_msg("%lu passes found a THP at the source\n",
			       mv.thp_passes);
	if (thp_again)
		EXPECT_LE(2UL, mv.thp_passes)
			TH_LOG("THPs did not come back at the source after its page table was freed");
	EXPECT_EQ(0, mv.bad_errno)
		TH_LOG("UFFDIO_MOVE failed: %s", strerror(mv.bad_errno));
	EXPECT_EQ(0ULL, mv.bad_word)
		TH_LOG("moved page %zu holds %#llx, not its stamp", mv.bad_page,
		       (unsigned long long)mv.bad_word);
	EXPECT_LT(0UL, mv.moved) TH_LOG("no page was moved");
	EXPECT_LT(0UL, mv.dontneeds) TH_LOG("the zapper never ran");

	close(pm_fd);
	close(uffd);
	munmap(mv.dst, PMD_SZ);
	munmap(mv.src, PMD_SZ);
}

/*
 * Proves UFFDIO_MOVE copes with its source PTE page being freed under it:
 * with small pages only, DONTNEED of the 2 MB source region frees the PTE
 * page (pt_reclaim on) while moves of its pages run; every move succeeds,
 * finds a hole or retries, and each moved page holds its stamp.
 */
TEST_F_TIMEOUT(pt, uffd_move_race, 120)
{
	uffd_move_race(_metadata, MADV_NOHUGEPAGE, -1, false);
}

/*
 * As uffd_move_race, with 2 MB THP "always" and the source MADV_HUGEPAGE:
 * after a DONTNEED a fault may install a huge PMD where the freed PTE page
 * was.  Proves a THP was there: the source is one 2 MB folio when the race
 * starts (pagemap and /proc/kpageflags), in every variant.  With pt_reclaim
 * on, THPs keep coming back (at least two passes find the page they stamp
 * in a THP; 2 MB is the only anonymous size left on).  Off and on stock,
 * the first move over a hole (the zapper had just zapped) gives the source
 * a PTE page that then stays, so later passes may find no THP: their
 * count is printed, not checked.
 */
TEST_F_TIMEOUT(pt, uffd_move_race_thp, 120)
{
	int kpf_fd, ret;

	ret = lab_thp_save(&self->thp);
	self->thp_saved = true;
	ASSERT_EQ(0, ret) TH_LOG("saving THP settings: %s", strerror(-ret));
	ret = lab_thp_only(&self->thp, 2048);
	ASSERT_EQ(0, ret) TH_LOG("2 MB THP only: %s", strerror(-ret));
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	ASSERT_LE(0, kpf_fd) TH_LOG("/proc/kpageflags: %s", strerror(errno));
	uffd_move_race(_metadata, MADV_HUGEPAGE, kpf_fd, self->reclaim);
	close(kpf_fd);
}

/*
 * The race test.  Region r of the 8 MB mapping is guarded by race.lock[r];
 * race.gen[r][pg] is the generation the writer last wrote into page pg of
 * it, 0 when the page must read zero (never written, or dropped since).
 */
#define RACE_REGIONS	4
#define RACE_LEN	(RACE_REGIONS * PMD_SZ)
#define RACE_SECONDS	8
#define RACE_THREADS	6
#define RACE_STACK	(256 * LAB_SZ_1K)

struct race_thread {
	const char *name;
	void (*step)(struct race_thread *t);
	unsigned int seed;
	uint32_t gen;
	unsigned long ops;
	/* Reader: a page read through /proc/self/mem, pagemap entries. */
	uint64_t buf[WORDS];
	uint64_t pm[PMD_PAGES];
};

static struct {
	char *map;
	char *scratch;
	int mem_fd;
	int pm_fd;
	pthread_mutex_t lock[RACE_REGIONS];
	uint32_t gen[RACE_REGIONS][PMD_PAGES];
	int go;
	int stop;
	pthread_mutex_t fail_lock;
	bool failed;
	char why[256];
	volatile int fault_sig;
	void *volatile fault_addr;
} race;

static struct race_thread race_threads[RACE_THREADS];

static __thread sigjmp_buf race_jmp;
static __thread volatile sig_atomic_t race_armed;
static __thread int race_held = -1;
static volatile sig_atomic_t race_in_child;

/* Records the first failure and stops every thread. */
static void __attribute__((format(printf, 1, 2))) race_fail(const char *fmt,
							    ...)
{
	va_list ap;

	pthread_mutex_lock(&race.fail_lock);
	if (!race.failed) {
		race.failed = true;
		va_start(ap, fmt);
		vsnprintf(race.why, sizeof(race.why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&race.fail_lock);
	__atomic_store_n(&race.stop, 1, __ATOMIC_RELEASE);
}

static bool race_stopped(void)
{
	return __atomic_load_n(&race.stop, __ATOMIC_ACQUIRE);
}

static char *race_region(int r)
{
	return race.map + r * PMD_SZ;
}

static void race_lock(int r)
{
	pthread_mutex_lock(&race.lock[r]);
	race_held = r;
}

static void race_unlock(int r)
{
	race_held = -1;
	pthread_mutex_unlock(&race.lock[r]);
}

/* Low 32 bits of every word of global page @gpg: where the word is. */
static inline uint32_t race_idx(size_t gpg, size_t word)
{
	return gpg * WORDS + word;
}

static inline uint64_t race_word(size_t gpg, uint32_t gen, size_t word)
{
	return (uint64_t)gen << 32 | race_idx(gpg, word);
}

/*
 * Compares page @pg of region @r, currently mapped at @base, with what
 * race.gen says it holds.  Returns the first word that differs, or -1.
 * Async-signal-safe: a fork child calls it.
 */
static long race_bad_word(const char *base, int r, size_t pg, uint64_t *got,
			  uint64_t *want)
{
	const volatile uint64_t *w = (const volatile uint64_t *)(base + pg * PSZ);
	size_t gpg = r * PMD_PAGES + pg, i;
	uint32_t gen = race.gen[r][pg];

	for (i = 0; i < WORDS; i++) {
		*want = gen ? race_word(gpg, gen, i) : 0;
		*got = w[i];
		if (*got != *want)
			return i;
	}
	return -1;
}

/* race_bad_word() that records a mismatch; the region lock must be held. */
static bool race_check(const char *who, const char *base, int r, size_t pg)
{
	uint64_t got, want;
	long i;

	i = race_bad_word(base, r, pg, &got, &want);
	if (i < 0)
		return true;
	race_fail("%s: region %d page %zu word %ld reads %#llx, expected %#llx",
		  who, r, pg, i, (unsigned long long)got,
		  (unsigned long long)want);
	return false;
}

static int race_rand(struct race_thread *t, int n)
{
	return rand_r(&t->seed) % n;
}

/* A: check, rewrite and read back a few random pages of a region. */
static void race_writer(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS), k;
	volatile uint64_t *w;
	size_t pg, gpg, i;

	race_lock(r);
	for (k = 0; k < 4; k++) {
		pg = race_rand(t, PMD_PAGES);
		gpg = r * PMD_PAGES + pg;
		if (!race_check("writer, before writing", race_region(r), r,
				pg))
			break;
		/* The thread's tag in the top byte: never 0. */
		t->gen = (t->gen + 1) & 0xffffff;
		w = (volatile uint64_t *)(race_region(r) + pg * PSZ);
		for (i = 0; i < WORDS; i++)
			w[i] = race_word(gpg, 0x5a000000 | t->gen, i);
		race.gen[r][pg] = 0x5a000000 | t->gen;
		if (!race_check("writer, read-back", race_region(r), r, pg))
			break;
	}
	race_unlock(r);
}

/* B: MADV_DONTNEED of a whole region, which must then read zero. */
static void race_dontneed(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS);

	race_lock(r);
	if (madvise(race_region(r), PMD_SZ, MADV_DONTNEED)) {
		race_fail("madvise(MADV_DONTNEED): errno %d", errno);
	} else {
		memset(race.gen[r], 0, sizeof(race.gen[r]));
		race_check("after DONTNEED", race_region(r), r,
			   race_rand(t, PMD_PAGES));
	}
	race_unlock(r);
	usleep(race_rand(t, 2000));
}

/* C: make a region read-only, check a page, make it writable again. */
static void race_mprotect(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS);

	race_lock(r);
	if (mprotect(race_region(r), PMD_SZ, PROT_READ)) {
		race_fail("mprotect(PROT_READ): errno %d", errno);
	} else {
		race_check("read-only", race_region(r), r,
			   race_rand(t, PMD_PAGES));
		if (mprotect(race_region(r), PMD_SZ, PROT_READ | PROT_WRITE))
			race_fail("mprotect(PROT_READ | PROT_WRITE): errno %d",
				  errno);
	}
	race_unlock(r);
	usleep(race_rand(t, 2000));
}

/*
 * D: fork while holding a region's lock; the child checks a few pages of
 * that region against the shadow it inherited and exits: 0 if they match,
 * 1 if not, 2 on SIGSEGV or SIGBUS (see race_on_fault()).
 */
static void race_fork(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS), k, status;
	uint64_t got, want;
	size_t pg[4];
	pid_t pid;

	for (k = 0; k < 4; k++)
		pg[k] = race_rand(t, PMD_PAGES);
	race_lock(r);
	pid = fork();
	if (!pid) {
		race_in_child = 1;
		for (k = 0; k < 4; k++)
			if (race_bad_word(race_region(r), r, pg[k], &got,
					  &want) >= 0)
				_exit(1);
		_exit(0);
	}
	race_unlock(r);
	if (pid < 0) {
		race_fail("fork: errno %d", errno);
		return;
	}
	if (waitpid(pid, &status, 0) != pid)
		race_fail("waitpid: errno %d", errno);
	else if (!WIFEXITED(status) || WEXITSTATUS(status))
		race_fail("fork child of region %d: wait status %#x (exit 1: wrong data, 2: fault)",
			  r, status);
	usleep(race_rand(t, 2000));
}

/*
 * E: move a region to the scratch area and back.  MREMAP_DONTUNMAP leaves
 * the source mapped (empty), so no address range is ever a hole that
 * another thread's mmap could take.
 */
static void race_mremap(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS);
	void *q;

	race_lock(r);
	q = mremap(race_region(r), PMD_SZ, PMD_SZ,
		   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		   race.scratch);
	if (q != race.scratch) {
		race_fail("mremap to the scratch area: errno %d", errno);
		goto out;
	}
	if (!race_check("moved out", race.scratch, r,
			race_rand(t, PMD_PAGES)))
		goto out;
	q = mremap(race.scratch, PMD_SZ, PMD_SZ,
		   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		   race_region(r));
	if (q != race_region(r)) {
		race_fail("mremap back: errno %d", errno);
		goto out;
	}
	race_check("moved back", race_region(r), r, race_rand(t, PMD_PAGES));
out:
	race_unlock(r);
	usleep(race_rand(t, 2000));
}

/*
 * F: without any lock, read a page through /proc/self/mem (GUP, which may
 * fault in a PTE page while another thread frees it) or a region's pagemap
 * (a page-table walk).  The page may be read mid-write, so each byte of the
 * low half of a word must be 0 or the byte of that word's position.
 */
static void race_reader(struct race_thread *t)
{
	int r = race_rand(t, RACE_REGIONS), b;
	size_t pg = race_rand(t, PMD_PAGES);
	size_t gpg = r * PMD_PAGES + pg, i;
	uint32_t lo, idx, x;
	off_t off;
	ssize_t n;

	if (t->ops & 1) {
		off = (uintptr_t)race_region(r) / PSZ * sizeof(uint64_t);
		n = pread(race.pm_fd, t->pm, sizeof(t->pm), off);
		if (n != sizeof(t->pm))
			race_fail("pagemap read of region %d: %zd, errno %d",
				  r, n, errno);
		return;
	}
	off = (uintptr_t)(race_region(r) + pg * PSZ);
	n = pread(race.mem_fd, t->buf, PSZ, off);
	if (n != PSZ) {
		race_fail("/proc/self/mem read of region %d page %zu: %zd, errno %d",
			  r, pg, n, errno);
		return;
	}
	for (i = 0; i < WORDS; i++) {
		lo = (uint32_t)t->buf[i];
		idx = race_idx(gpg, i);
		for (b = 0; b < 32; b += 8) {
			x = (lo >> b) & 0xff;
			if (x && x != ((idx >> b) & 0xff)) {
				race_fail("reader: region %d page %zu word %zu reads %#llx",
					  r, pg, i,
					  (unsigned long long)t->buf[i]);
				return;
			}
		}
	}
}

/*
 * SIGSEGV or SIGBUS: in a fork child, exit 2; in a race thread, record the
 * fault and jump back to race_thread_fn(); elsewhere, let it kill the test.
 */
static void race_on_fault(int sig, siginfo_t *si, void *uc)
{
	if (race_in_child)
		_exit(2);
	race.fault_sig = sig;
	race.fault_addr = si->si_addr;
	if (race_armed)
		siglongjmp(race_jmp, sig);
	signal(sig, SIG_DFL);
}

static void *race_thread_fn(void *arg)
{
	struct race_thread *t = arg;

	while (!__atomic_load_n(&race.go, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (sigsetjmp(race_jmp, 1)) {
		race_armed = 0;
		race_fail("%s: signal %d at %p", t->name, race.fault_sig,
			  race.fault_addr);
		if (race_held >= 0)
			race_unlock(race_held);
		return NULL;
	}
	race_armed = 1;
	while (!race_stopped()) {
		t->step(t);
		t->ops++;
	}
	race_armed = 0;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Starts one thread of each kind, reads VmPTE into *@before once they are
 * running but before they touch the mapping, lets them work for
 * RACE_SECONDS (less if one fails) and joins them.  Returns 0 or the error
 * of pthread_create(), in which case the threads that did start were
 * stopped.  Uses no ASSERT: the threads must be joined first.
 */
static int race_run(long *before)
{
	static const struct {
		const char *name;
		void (*step)(struct race_thread *t);
	} kinds[RACE_THREADS] = {
		{ "writer", race_writer },
		{ "dontneed", race_dontneed },
		{ "mprotect", race_mprotect },
		{ "fork", race_fork },
		{ "mremap", race_mremap },
		{ "reader", race_reader },
	};
	pthread_t tid[RACE_THREADS];
	pthread_attr_t attr;
	int i, nr = 0, err;
	double start;

	*before = -1;
	/* Small stacks: fewer page tables that are not the mapping's. */
	err = pthread_attr_init(&attr);
	if (err)
		return err;
	err = pthread_attr_setstacksize(&attr, RACE_STACK);
	for (i = 0; i < RACE_THREADS && !err; i++) {
		memset(&race_threads[i], 0, sizeof(race_threads[i]));
		race_threads[i].name = kinds[i].name;
		race_threads[i].step = kinds[i].step;
		race_threads[i].seed = 0x5eed0000 + i;
		err = pthread_create(&tid[i], &attr, race_thread_fn,
				     &race_threads[i]);
		if (!err)
			nr++;
	}
	pthread_attr_destroy(&attr);

	*before = lab_status_kb("VmPTE");
	if (err)
		__atomic_store_n(&race.stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&race.go, 1, __ATOMIC_RELEASE);
	start = now();
	while (!race_stopped() && now() - start < RACE_SECONDS)
		usleep(100 * 1000);
	__atomic_store_n(&race.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nr; i++)
		pthread_join(tid[i], NULL);
	return err;
}

/* Checks every page of the mapping, single-threaded; see race_check(). */
static bool race_check_all(void)
{
	size_t pg;
	int r;

	for (r = 0; r < RACE_REGIONS; r++)
		for (pg = 0; pg < PMD_PAGES; pg++)
			if (!race_check("at the end", race_region(r), r, pg))
				return false;
	return true;
}

/*
 * GCC 12 warns that the harness's own 'child' (a local of the wrapper that
 * TEST_F() generates around setjmp()) might be clobbered by longjmp(), for
 * this test only, depending on register allocation.  If it were, an ASSERT
 * failing in the test process would run the parent's half of the wrapper
 * there: the teardown (once, guarded by the harness's shared flag) and then
 * abort(), which the real parent reports as a failed assertion, as it should.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclobbered"

/*
 * Proves pt_reclaim is safe against concurrent users of the same page tables:
 * for 8 seconds, on an 8 MB mapping of four 2 MB-aligned regions, a writer
 * rewrites random pages and checks them, another thread DONTNEEDs whole
 * regions, another mprotects them read-only and back, another forks children
 * that check a few pages, another mremaps regions to a scratch area and back
 * (those five take a per-region lock, so data is predictable), and a reader
 * without any lock reads pages through /proc/self/mem and pagemap.  No
 * SIGSEGV or SIGBUS, every checked page holds what was last written since the
 * last DONTNEED (zeroes after one), every child exits 0, every thread got
 * work done, and the whole mapping reads as expected at the end.  With the
 * switch on, a final DONTNEED of everything brings VmPTE back within 16 kB
 * of its value before the mapping was touched.  The host checks the console
 * for oopses, "Bad rss-counter", KASAN and lockdep reports.
 */
TEST_F_TIMEOUT(pt, race, 120)
{
	struct sigaction sa = { .sa_sigaction = race_on_fault,
				.sa_flags = SA_SIGINFO };
	struct sigaction old_segv, old_bus;
	long before, after;
	int i, r, err;

	memset(&race, 0, sizeof(race));
	race.map = map_aligned(RACE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, race.map) TH_LOG("mmap: %s", strerror(errno));
	race.scratch = map_aligned(PMD_SZ, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, race.scratch)
		TH_LOG("mmap: %s", strerror(errno));
	race.mem_fd = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, race.mem_fd);
	race.pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, race.pm_fd);
	for (r = 0; r < RACE_REGIONS; r++)
		ASSERT_EQ(0, pthread_mutex_init(&race.lock[r], NULL));
	ASSERT_EQ(0, pthread_mutex_init(&race.fail_lock, NULL));

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, &old_segv));
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &old_bus));

	err = race_run(&before);
	if (err)
		race_fail("pthread_create: %s", strerror(err));
	for (i = 0; i < RACE_THREADS && race_threads[i].name; i++)
		ksft_print_msg("%-8s %lu operations\n", race_threads[i].name,
			       race_threads[i].ops);
	ASSERT_FALSE(race.failed) TH_LOG("%s", race.why);
	ASSERT_LE(0, before);
	for (i = 0; i < RACE_THREADS; i++)
		if (!race_threads[i].ops)
			break;
	ASSERT_EQ(RACE_THREADS, i)
		TH_LOG("the %s thread did nothing in %d s",
		       race_threads[i].name, RACE_SECONDS);

	ASSERT_TRUE(race_check_all()) TH_LOG("%s", race.why);

	ASSERT_EQ(0, madvise(race.map, RACE_LEN, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(race.scratch, PMD_SZ, MADV_DONTNEED));
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, after);
	ksft_print_msg("VmPTE before %ld kB, after the final DONTNEED %ld kB\n",
		       before, after);
	if (self->reclaim)
		ASSERT_LE(after - before, SLACK_KB)
			TH_LOG("empty PTE pages were left behind");

	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	close(race.pm_fd);
	close(race.mem_fd);
	munmap(race.scratch, PMD_SZ);
	munmap(race.map, RACE_LEN);
}
#pragma GCC diagnostic pop

/*
 * collapse_race: khugepaged's collapse of a file range against the reclaim
 * of its page tables.  A 2 MB shmem range (a memfd, MADV_HUGEPAGE, shmem
 * THP on "advise") is mapped twice.  The main thread splits its folio by
 * punching one page, rewrites that page and collapses the range with
 * MADV_COLLAPSE, which runs collapse_file() (retract_page_tables() on the
 * other mapping) and collapse_pte_mapped_thp() on this one; a second thread
 * keeps reading 32 pages of both mappings and DONTNEEDing them whole, which
 * frees their PTE pages with pt_reclaim on, at any step of the collapse.
 */
#define COLLAPSE_SECONDS	6
/*
 * A guest slowed down (a debug kernel on a loaded host) may get only a few
 * tries in COLLAPSE_SECONDS and lose every one to the zapper: without a
 * collapse yet, the loop goes on up to COLLAPSE_MAX_SECONDS, so that the
 * check that one succeeded means the race was run, not that time ran out.
 */
#define COLLAPSE_MAX_SECONDS	(4 * COLLAPSE_SECONDS)
#define SHMEM_ENABLED	"/sys/kernel/mm/transparent_hugepage/shmem_enabled"

static struct {
	char *map[2];
	int stop;
	unsigned long dontneeds;
} cr;

/*
 * The first page of a 2 MB shmem range, read through @map[0] (even pages)
 * and @map[1] (odd pages), whose second word does not hold its TAG_SHMEM
 * pattern; PMD_PAGES if every page does.
 */
static size_t shmem_bad_page(char *const map[2])
{
	size_t pg;

	for (pg = 0; pg < PMD_PAGES; pg++)
		if (*(volatile uint64_t *)(map[pg & 1] + pg * PSZ + 8) !=
		    pat(TAG_SHMEM, pg, 1))
			return pg;
	return PMD_PAGES;
}

static void *cr_zapper(void *arg)
{
	unsigned int seed = 2;
	uint64_t sum = 0;

	while (!__atomic_load_n(&cr.stop, __ATOMIC_ACQUIRE)) {
		char *m = cr.map[rand_r(&seed) & 1];
		size_t pg = rand_r(&seed) % PMD_PAGES;
		int i;

		for (i = 0; i < 32; i++, pg = (pg + 97) % PMD_PAGES)
			sum += *(volatile uint64_t *)(m + pg * PSZ);
		madvise(m, PMD_SZ, MADV_DONTNEED);
		cr.dontneeds++;
	}
	return (void *)(uintptr_t)(sum & 1);
}

/*
 * Proves that a collapse racing the reclaim of the page tables it works on
 * neither warns (the console is judged), nor fails other than with the
 * retryable errors, nor loses data: after every collapse all 512 pages of
 * the range read back their own pattern through both mappings.
 */
TEST_F_TIMEOUT(pt, collapse_race, 120)
{
	struct lab_knob shmem = { 0 };
	unsigned long collapsed = 0, tries = 0;
	struct timespec t0, t;
	pthread_t zapper;
	size_t pg, bad = PMD_PAGES;
	char *res;
	int fd, i, err = 0;

	ASSERT_TRUE(lab_path_exists(SHMEM_ENABLED))
		TH_LOG("no shmem THP (%s)", SHMEM_ENABLED);
	ASSERT_EQ(0, lab_knob_save(&shmem, SHMEM_ENABLED));
	ASSERT_EQ(0, lab_write_file(SHMEM_ENABLED, "advise"));
	fd = memfd_create("lab-collapse", 0);
	ASSERT_LE(0, fd) TH_LOG("memfd_create: %s", strerror(errno));
	ASSERT_EQ(0, ftruncate(fd, PMD_SZ));
	for (i = 0; i < 2; i++) {
		res = map_aligned(PMD_SZ, PROT_NONE, MAP_PRIVATE);
		ASSERT_NE(MAP_FAILED, res);
		cr.map[i] = mmap(res, PMD_SZ, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, fd, 0);
		ASSERT_EQ(res, cr.map[i]) TH_LOG("mmap: %s", strerror(errno));
		ASSERT_EQ(0, madvise(cr.map[i], PMD_SZ, MADV_HUGEPAGE));
	}
	fill(cr.map[0], 0, PMD_PAGES, TAG_SHMEM);
	if (madvise(cr.map[0], PMD_SZ, MADV_COLLAPSE) && errno == EINVAL) {
		err = errno;
		EXPECT_EQ(0, err)
			TH_LOG("MADV_COLLAPSE of shmem: %s: the lab's kernels collapse shmem",
			       strerror(err));
		goto out;
	}

	cr.stop = 0;
	cr.dontneeds = 0;
	ASSERT_EQ(0, pthread_create(&zapper, NULL, cr_zapper, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pg = tries % PMD_PAGES;
		tries++;
		/* split the THP, if there is one, and refault small pages */
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      pg * PSZ, PSZ)) {
			err = errno;
			break;
		}
		fill(cr.map[0], pg, 1, TAG_SHMEM);
		if (!madvise(cr.map[0], PMD_SZ, MADV_COLLAPSE))
			collapsed++;
		else if (errno != EAGAIN && errno != EBUSY && errno != ENOMEM) {
			err = errno;
			break;
		}
		bad = shmem_bad_page(cr.map);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (bad == PMD_PAGES &&
		 (t.tv_sec - t0.tv_sec < COLLAPSE_SECONDS ||
		  (!collapsed && t.tv_sec - t0.tv_sec < COLLAPSE_MAX_SECONDS)));
	__atomic_store_n(&cr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(zapper, NULL);

	ksft_print_msg("%lu collapses of %lu tries, %lu DONTNEEDs\n",
		       collapsed, tries, cr.dontneeds);
	EXPECT_EQ(0, err) TH_LOG("fallocate or MADV_COLLAPSE: %s", strerror(err));
	EXPECT_EQ(PMD_PAGES, bad) TH_LOG("page %zu lost its data", bad);
	EXPECT_LT(0UL, collapsed) TH_LOG("no collapse succeeded");
	EXPECT_LT(0UL, cr.dontneeds) TH_LOG("the zapper never ran");
out:
	munmap(cr.map[0], PMD_SZ);
	munmap(cr.map[1], PMD_SZ);
	close(fd);
	EXPECT_EQ(0, lab_knob_restore(&shmem));
}

/*
 * collapse_uffd_race: collapse_pte_mapped_thp() on a private mapping of shmem
 * registered with userfaultfd takes the PMD lock before it maps the PTE page
 * for its second pass; without split PTE locks that lock is the PTE page's
 * lock too.  If MADV_DONTNEED frees the PTE page between the two passes, the
 * second mapping fails, and the collapse must still drop the PMD lock.
 *
 * The file is written through its descriptor and the private mapping only
 * read, so no anonymous page appears.  A first MADV_COLLAPSE puts a THP in
 * the page cache; then, round after round, the main thread maps it with
 * PTEs (reads under MADV_NOHUGEPAGE, where a fault cannot map the PMD) and
 * collapses it again, which goes straight to collapse_pte_mapped_thp();
 * a second thread DONTNEEDs the whole range again and again, which zaps
 * those PTEs (or the PMD) and frees the PTE page with pt_reclaim on.  It
 * never reads, so it never faults (which userfaultfd would hold).
 */
#define CU_SECONDS	10

static struct {
	char *map;
	int stop;
	unsigned long dontneeds;
} cu;

static void *cu_zapper(void *arg)
{
	while (!__atomic_load_n(&cu.stop, __ATOMIC_ACQUIRE)) {
		madvise(cu.map, PMD_SZ, MADV_DONTNEED);
		cu.dontneeds++;
	}
	return NULL;
}

/* Writes page @pg of the file with its pattern, through the descriptor. */
static int cu_write(int fd, size_t pg)
{
	uint64_t buf[WORDS];
	size_t i;

	for (i = 0; i < WORDS; i++)
		buf[i] = pat(TAG_SHMEM, pg, i);
	return pwrite(fd, buf, PSZ, pg * PSZ) == (ssize_t)PSZ ? 0 : -1;
}

/*
 * A collapse failure other than the retryable ones and EINVAL, which is what
 * MADV_COLLAPSE returns when collapse_pte_mapped_thp() gives up (SCAN_FAIL)
 * because the PTE page or the PMD changed under it: the race this test
 * makes, and the path where the PMD lock must be dropped.
 */
static bool cu_collapse_failed(void)
{
	return errno != EAGAIN && errno != EBUSY && errno != ENOMEM &&
	       errno != EINVAL;
}

/*
 * Proves that the collapse of a userfaultfd-armed private shmem range racing
 * the reclaim of its PTE page neither leaves a lock held (lockdep's "lock
 * held when returning to user space", a deadlock or a soft lockup: the
 * console is judged; 'lab test' runs this on a kernel without split PTE
 * locks too), nor fails other than with the retryable errors, nor loses
 * data.
 */
TEST_F_TIMEOUT(pt, collapse_uffd_race, 120)
{
	struct uffdio_register reg = { 0 };
	struct lab_knob shmem = { 0 };
	unsigned long collapsed = 0, tries = 0, aborted = 0;
	struct timespec t0, t;
	pthread_t zapper;
	size_t pg, bad = PMD_PAGES;
	uint64_t sum = 0;
	char *res;
	int fd, uffd, i, err = 0;

	ASSERT_TRUE(lab_path_exists(SHMEM_ENABLED))
		TH_LOG("no shmem THP (%s): the lab kernels have it", SHMEM_ENABLED);
	ASSERT_EQ(0, lab_knob_save(&shmem, SHMEM_ENABLED));
	ASSERT_EQ(0, lab_write_file(SHMEM_ENABLED, "advise"));
	fd = memfd_create("lab-collapse-uffd", 0);
	ASSERT_LE(0, fd) TH_LOG("memfd_create: %s", strerror(errno));
	ASSERT_EQ(0, ftruncate(fd, PMD_SZ));
	for (pg = 0; pg < PMD_PAGES; pg++)
		ASSERT_EQ(0, cu_write(fd, pg)) TH_LOG("pwrite: %s", strerror(errno));
	res = map_aligned(PMD_SZ, PROT_NONE, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, res);
	cu.map = mmap(res, PMD_SZ, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	ASSERT_EQ(res, cu.map) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0, madvise(cu.map, PMD_SZ, MADV_HUGEPAGE));
	uffd = lab_uffd_open_features(0);
	ASSERT_LE(0, uffd) TH_LOG("userfaultfd: %s", strerror(-uffd));
	reg.range.start = (uintptr_t)cu.map;
	reg.range.len = PMD_SZ;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
	/* the page cache THP that every round maps with PTEs again */
	for (i = 0; i < 100 && madvise(cu.map, PMD_SZ, MADV_COLLAPSE); i++) {
		err = errno;
		ASSERT_FALSE(cu_collapse_failed())
			TH_LOG("MADV_COLLAPSE: %s", strerror(err));
		usleep(10000);
	}
	ASSERT_GT(100, i)
		TH_LOG("no MADV_COLLAPSE succeeded in 100 tries: %s", strerror(err));
	err = 0;

	cu.stop = 0;
	cu.dontneeds = 0;
	ASSERT_EQ(0, pthread_create(&zapper, NULL, cu_zapper, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		tries++;
		/* a PTE page mapping the THP, for collapse_pte_mapped_thp() */
		if (madvise(cu.map, PMD_SZ, MADV_NOHUGEPAGE)) {
			err = errno;
			break;
		}
		for (pg = 0; pg < PMD_PAGES; pg += 16)
			sum += *(volatile uint64_t *)(cu.map + pg * PSZ);
		if (madvise(cu.map, PMD_SZ, MADV_HUGEPAGE)) {
			err = errno;
			break;
		}
		if (!madvise(cu.map, PMD_SZ, MADV_COLLAPSE))
			collapsed++;
		else if (cu_collapse_failed()) {
			err = errno;
			break;
		} else if (errno == EINVAL) {
			aborted++;
		}
		if (tries % 64 == 0)
			bad = shmem_bad_page((char *const[2]){ cu.map, cu.map });
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (bad == PMD_PAGES && t.tv_sec - t0.tv_sec < CU_SECONDS);
	__atomic_store_n(&cu.stop, 1, __ATOMIC_RELEASE);
	pthread_join(zapper, NULL);

	ksft_print_msg("%lu collapses, %lu given up (EINVAL), of %lu tries; %lu DONTNEEDs (%lu)\n",
		       collapsed, aborted, tries, cu.dontneeds,
		       (unsigned long)(sum & 1));
	EXPECT_EQ(0, err) TH_LOG("madvise: %s", strerror(err));
	EXPECT_EQ(PMD_PAGES, bad) TH_LOG("page %zu lost its data", bad);
	EXPECT_LT(0UL, collapsed) TH_LOG("no collapse succeeded");
	EXPECT_LT(0UL, cu.dontneeds) TH_LOG("the zapper never ran");
	close(uffd);
	munmap(cu.map, PMD_SZ);
	close(fd);
	EXPECT_EQ(0, lab_knob_restore(&shmem));
}

TEST_HARNESS_MAIN
