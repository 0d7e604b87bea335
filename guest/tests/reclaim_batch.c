// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim_batch.c - tests of referenced_batch, unmap_batch and
 * mglru_young_batch: reclaim of large folios keeps what it must keep and
 * loses nothing when it checks young bits and unmaps a whole run of PTEs
 * at once.
 *
 * Every test runs as variants that set the switches on the patched kernel
 * (the teardown, run in the parent, writes the saved values back) or run
 * on the stock kernel, with the classic LRU and with MGLRU
 * (/sys/kernel/mm/lru_gen/enabled).  LAB_FLAVOUR picks the variants that
 * run, the others skip.  The tests assert the same outcome for every
 * variant: batching must not change what reclaim keeps or loses.
 *
 * File tests use a file on XFS, whose page cache holds large folios, mapped
 * MADV_NOHUGEPAGE so that 2 MB folios are mapped by PTEs too.  Each test
 * moves itself into the cgroup "lab-reclaim-batch" and reclaims it with
 * memory.reclaim.
 *
 * Needs root, 4 KiB pages, cgroup2 and XFS on /mnt/xfs; the shmem test needs
 * swap, 64 kB shmem mTHP and userfaultfd write-protect for shmem.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"

#define FB_DIR		"/sys/kernel/mm/foliobatch"
#define LRU_GEN		"/sys/kernel/mm/lru_gen/enabled"
#define SHMEM_64K	LAB_THP_DIR "/hugepages-64kB/shmem_enabled"
#define XFS_DIR		"/mnt/xfs"
#define XFS_FILE	XFS_DIR "/lab-reclaim-batch"
#define CG		"lab-reclaim-batch"

#define PSZ		4096UL
#define WORDS		(PSZ / sizeof(uint64_t))
#define PMD_SZ		LAB_SZ_2M
#define PMD_PAGES	(PMD_SZ / PSZ)
/* The test file: 8 regions of 2 MB. */
#define FILE_REGIONS	8
#define FILE_SZ		(FILE_REGIONS * PMD_SZ)
#define FILE_PAGES	(FILE_SZ / PSZ)

#define TAG_FILE	0x22
#define TAG_SHMEM	0x44
#define TAG_NEW		0x55

enum { NR_SWITCHES = 3 };
static const char *const switch_names[NR_SWITCHES] = {
	"referenced_batch", "unmap_batch", "mglru_young_batch",
};

FIXTURE(rb) {
	struct lab_knob sw[NR_SWITCHES];
	struct lab_knob lru_gen;
	struct lab_knob shmem_64k;
};

FIXTURE_VARIANT(rb) {
	/* LAB_FLAVOUR this variant runs on. */
	const char *flavour;
	/* Values for switch_names[]; NULL on stock. */
	const char *sw[NR_SWITCHES];
	/* Run with MGLRU enabled. */
	bool mglru;
};

FIXTURE_VARIANT_ADD(rb, stock) {
	.flavour = "stock",
};

FIXTURE_VARIANT_ADD(rb, off) {
	.flavour = "patched", .sw = { "0", "0", "0" },
};

FIXTURE_VARIANT_ADD(rb, referenced) {
	.flavour = "patched", .sw = { "1", "0", "0" },
};

FIXTURE_VARIANT_ADD(rb, unmap) {
	.flavour = "patched", .sw = { "0", "1", "0" },
};

FIXTURE_VARIANT_ADD(rb, on) {
	.flavour = "patched", .sw = { "1", "1", "1" },
};

FIXTURE_VARIANT_ADD(rb, stock_mglru) {
	.flavour = "stock", .mglru = true,
};

FIXTURE_VARIANT_ADD(rb, mglru_off) {
	.flavour = "patched", .sw = { "0", "0", "0" }, .mglru = true,
};

FIXTURE_VARIANT_ADD(rb, mglru_on) {
	.flavour = "patched", .sw = { "1", "1", "1" }, .mglru = true,
};

/*
 * Skips variants of the other flavour, checks that the switches exist
 * exactly on patched, sets them and the LRU kind, and creates the cgroup.
 */
FIXTURE_SETUP(rb)
{
	const char *env = getenv("LAB_FLAVOUR");
	const char *fl = env ? env : "(unset)";
	char path[256];
	int i, ret;

	for (i = 0; i < NR_SWITCHES; i++)
		self->sw[i].valid = false;
	self->lru_gen.valid = false;
	self->shmem_64k.valid = false;
	ASSERT_TRUE(!strcmp(fl, "stock") || !strcmp(fl, "patched"))
		TH_LOG("LAB_FLAVOUR is %s: set it to stock or patched", fl);
	if (strcmp(fl, variant->flavour))
		SKIP(return, "variant for the %s kernel", variant->flavour);
	ASSERT_EQ(PSZ, (unsigned long)getpagesize());
	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_LE(0, ret);
	if (!ret)
		SKIP(return, "%s is not an XFS mount point", XFS_DIR);

	for (i = 0; i < NR_SWITCHES; i++) {
		snprintf(path, sizeof(path), FB_DIR "/%s", switch_names[i]);
		if (!variant->sw[i]) {
			ASSERT_FALSE(lab_path_exists(path))
				TH_LOG("the stock kernel has %s", path);
			continue;
		}
		ASSERT_EQ(0, lab_knob_save(&self->sw[i], path))
			TH_LOG("cannot read %s", path);
		ASSERT_EQ(0, lab_write_file(path, variant->sw[i]))
			TH_LOG("cannot write %s", path);
	}
	ASSERT_EQ(0, lab_knob_save(&self->lru_gen, LRU_GEN))
		TH_LOG("no %s: the lab's kernels have CONFIG_LRU_GEN", LRU_GEN);
	ASSERT_EQ(0, lab_write_file(LRU_GEN, variant->mglru ? "y" : "n"));
	if (lab_path_exists(SHMEM_64K))
		ASSERT_EQ(0, lab_knob_save(&self->shmem_64k, SHMEM_64K));
	ASSERT_EQ(0, lab_cg_enable_memory());
	ASSERT_EQ(0, lab_cg_create(CG));
}

FIXTURE_TEARDOWN_PARENT(rb)
{
	int i;

	unlink(XFS_FILE);
	EXPECT_EQ(0, lab_cg_remove(CG));
	for (i = 0; i < NR_SWITCHES; i++)
		EXPECT_EQ(0, lab_knob_restore(&self->sw[i]));
	EXPECT_EQ(0, lab_knob_restore(&self->lru_gen));
	EXPECT_EQ(0, lab_knob_restore(&self->shmem_64k));
}

/* The word @word of page @page of a range filled with tag @tag. */
static inline uint64_t pat(unsigned int tag, size_t page, size_t word)
{
	return (uint64_t)tag << 40 | (uint64_t)page << 12 | word;
}

static void fill_page(char *p, unsigned int tag, size_t page)
{
	uint64_t *w = (uint64_t *)p;
	size_t i;

	for (i = 0; i < WORDS; i++)
		w[i] = pat(tag, page, i);
}

/*
 * Reads @nr pages at @p, page i expected to hold pattern @tag of page
 * @first + i.  Returns the index of the first page that does not, or -1.
 */
static long bad_page(const char *p, size_t first, size_t nr, unsigned int tag)
{
	const volatile uint64_t *w;
	size_t pg, i;

	for (pg = 0; pg < nr; pg++) {
		w = (const volatile uint64_t *)(p + pg * PSZ);
		for (i = 0; i < WORDS; i++)
			if (w[i] != (tag ? pat(tag, first + pg, i) : 0))
				return pg;
	}
	return -1;
}

/*
 * Writes FILE_PAGES pages of pattern TAG_FILE to XFS_FILE, syncs it and
 * drops the page cache, then reads it back with read(2) so that the page
 * cache holds it, in large folios, charged to the caller's cgroup.
 * Returns the open file or -errno.
 */
static int make_cached_file(void)
{
	static char buf[PMD_SZ];
	size_t pg, r;
	int fd, err;

	fd = open(XFS_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	for (r = 0; r < FILE_REGIONS; r++) {
		for (pg = 0; pg < PMD_PAGES; pg++)
			fill_page(buf + pg * PSZ, TAG_FILE, r * PMD_PAGES + pg);
		if (write(fd, buf, PMD_SZ) != (ssize_t)PMD_SZ)
			goto fail;
	}
	if (fsync(fd))
		goto fail;
	err = lab_write_file("/proc/sys/vm/drop_caches", "3");
	if (err) {
		close(fd);
		return err;
	}
	if (lseek(fd, 0, SEEK_SET))
		goto fail;
	for (r = 0; r < FILE_REGIONS; r++)
		if (read(fd, buf, PMD_SZ) != (ssize_t)PMD_SZ)
			goto fail;
	return fd;
fail:
	err = errno ? -errno : -EIO;
	close(fd);
	return err;
}

/*
 * Maps @len bytes of @fd from @off, shared, at a 2 MB-aligned address plus
 * @shift bytes, MADV_NOHUGEPAGE.  Returns MAP_FAILED on failure.
 */
static char *map_file(int fd, off_t off, size_t len, size_t shift, int prot)
{
	size_t total = len + 2 * PMD_SZ;
	char *res, *p;

	res = mmap(NULL, total, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)res + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	p += shift;
	if (mmap(p, len, prot, MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED)
		return MAP_FAILED;
	if (madvise(p, len, MADV_NOHUGEPAGE))
		return MAP_FAILED;
	return p;
}

/* Pages of [@p, @p + @nr pages) in the page cache (mincore), or -errno. */
static long resident(char *p, size_t nr)
{
	unsigned char vec[PMD_PAGES];
	size_t done, n, i;
	long count = 0;

	for (done = 0; done < nr; done += n) {
		n = nr - done < PMD_PAGES ? nr - done : PMD_PAGES;
		if (mincore(p + done * PSZ, n * PSZ, vec))
			return -errno;
		for (i = 0; i < n; i++)
			count += vec[i] & 1;
	}
	return count;
}

/* Pages of [@p, @p + @nr pages) mapped in this process (pagemap). */
static long mapped(char *p, size_t nr)
{
	uint64_t pm[PMD_PAGES];
	size_t done, n, i;
	long count = 0;
	int fd, err;

	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -errno;
	for (done = 0; done < nr; done += n) {
		n = nr - done < PMD_PAGES ? nr - done : PMD_PAGES;
		err = lab_pagemap_read(fd, p + done * PSZ, n, pm);
		if (err) {
			close(fd);
			return err;
		}
		for (i = 0; i < n; i++)
			count += !!(pm[i] & LAB_PM_PRESENT);
	}
	close(fd);
	return count;
}

/*
 * Reclaims the cgroup, @amount per memory.reclaim write, until its charge is
 * at most @target bytes or @rounds writes were made.  Returns the final
 * charge, or -errno.
 */
static long reclaim_to(const char *amount, unsigned long target, int rounds)
{
	unsigned long cur = 0;
	int ret;

	while (rounds--) {
		ret = lab_cg_reclaim(CG, amount);
		if (ret && ret != -EAGAIN)
			return ret;
		ret = lab_cg_memory_current(CG, &cur);
		if (ret)
			return ret;
		if (cur <= target)
			break;
	}
	return cur;
}

/*
 * Finds the folios of the 2 MB region at @p (file offset @off of @fd) with
 * lab_folio_mapped_size(), then, for each, reads its first byte with
 * pread(2), which sets PG_referenced, and its last page through the
 * mapping, which makes that PTE alone young.  Every page of the region must
 * be mapped.  Returns the number of folios, or -errno; adds to *@single how
 * many of them are a single page.
 */
static long touch_folio_ends(int fd, off_t off, char *p, long *single)
{
	size_t first, size;
	volatile char sink;
	int pm_fd, kpf_fd;
	long folios = 0;
	char byte;
	int err = 0;

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	if (pm_fd < 0)
		return -errno;
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (kpf_fd < 0) {
		err = -errno;
		close(pm_fd);
		return err;
	}
	for (first = 0; first < PMD_PAGES; first += size / PSZ) {
		err = lab_folio_mapped_size(pm_fd, kpf_fd, p + first * PSZ,
					    (PMD_PAGES - first) * PSZ, &size);
		if (!err && !size)
			err = -EINVAL;	/* a folio begun before the region */
		if (err)
			break;
		if (pread(fd, &byte, 1, off + first * PSZ) != 1) {
			err = -EIO;
			break;
		}
		sink = p[first * PSZ + size - PSZ];
		folios++;
		*single += size == PSZ;
	}
	(void)sink;
	close(kpf_fd);
	close(pm_fd);
	return err ? err : folios;
}

/*
 * Proves reclaim keeps a large folio whose only young PTE is its last: the
 * file is in the page cache (read(2) once); its even 2 MB regions are
 * mapped and read in full, then MADV_COLD clears their PTEs' young bits and
 * PG_referenced; then each folio of them gets PG_referenced back (pread(2)
 * of its first byte) and its last page is read through the mapping, which
 * sets the access flag of that PTE only (the table walk sets it on x86 and
 * on arm64 with FEAT_HAFDBS; without it, as on the cortex-a72 boot, an
 * access flag fault sets the flags of its whole contpte block).  The odd
 * regions are never mapped.  Reclaiming 5 MB (less than the 8 MB of odd
 * regions) must leave every page of the even regions in the page cache,
 * and still mapped (RssFile unchanged), while at least 4 MB of the odd
 * regions go.  With the classic LRU, a batch that skipped a folio's last
 * PTE (say, one that tested only the first) would find the folios it
 * reaches old and reclaim would drop them: without the read of the last
 * pages, 2048 pages of the even regions fall to 1280 on both arches.  A
 * batch that missed only PTEs in the middle of a folio is not caught.
 * With MGLRU the folios survive without that read too, so there the test
 * shows only that batching keeps them.
 */
TEST_F_TIMEOUT(rb, referenced_survive, 300)
{
	long even0 = 0, even1 = 0, odd1 = 0, folios = 0, single = 0;
	long rss0, rss1, cur, n;
	size_t r, pg;
	volatile char sink;
	char *p;
	int fd;

	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_file(fd, 0, FILE_SZ, 0, PROT_READ);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));

	for (r = 0; r < FILE_REGIONS; r += 2) {
		for (pg = 0; pg < PMD_PAGES; pg++)
			sink = p[(r * PMD_PAGES + pg) * PSZ];
		ASSERT_EQ(0, madvise(p + r * PMD_SZ, PMD_SZ, MADV_COLD))
			TH_LOG("MADV_COLD: %s", strerror(errno));
	}
	(void)sink;
	for (r = 0; r < FILE_REGIONS; r += 2) {
		n = touch_folio_ends(fd, r * PMD_SZ, p + r * PMD_SZ, &single);
		ASSERT_LE(0, n) TH_LOG("region %zu: %s", r, strerror(-n));
		folios += n;
	}
	rss0 = lab_status_kb("RssFile");
	ASSERT_LE(0, rss0);
	for (r = 0; r < FILE_REGIONS; r += 2) {
		n = resident(p + r * PMD_SZ, PMD_PAGES);
		ASSERT_LE(0, n);
		even0 += n;
	}
	ASSERT_EQ((long)(FILE_PAGES / 2), even0)
		TH_LOG("the mapped regions are not all in the page cache");
	ksft_print_msg("referenced regions: %ld folios, %ld of them one page\n",
		       folios, single);
	ASSERT_GE((long)(FILE_PAGES / 2) - single, (long)(FILE_PAGES / 4))
		TH_LOG("less than half the pages are in large folios");

	cur = reclaim_to("5M", 0, 1);
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));

	for (r = 0; r < FILE_REGIONS; r++) {
		n = resident(p + r * PMD_SZ, PMD_PAGES);
		ASSERT_LE(0, n);
		if (r % 2)
			odd1 += n;
		else
			even1 += n;
	}
	rss1 = lab_status_kb("RssFile");
	ASSERT_LE(0, rss1);
	ksft_print_msg("resident pages: referenced %ld -> %ld, unreferenced %ld -> %ld; RssFile %ld -> %ld kB\n",
		       even0, even1, (long)(FILE_PAGES / 2), odd1, rss0, rss1);
	ASSERT_EQ(even0, even1) TH_LOG("reclaim dropped referenced folios");
	ASSERT_EQ(rss0, rss1) TH_LOG("reclaim unmapped referenced folios");
	ASSERT_GE((long)(FILE_PAGES / 2) - odd1, (long)(4 * LAB_SZ_1M / PSZ))
		TH_LOG("less than 4 MB of unreferenced folios reclaimed");
	close(fd);
}

/*
 * Proves mapped file folios are unmapped and reclaimed without losing data
 * or miscounting, including folios that a mapping cuts or that cross a page
 * table: the file is mapped three times, at offset 0 (A), at offset 4 kB
 * with the address still 2 MB-aligned so that folios cross PMD boundaries
 * (B), and its first 2 MB + 36 kB (C, whose end cuts a folio), and a child
 * process maps it at offset 4 kB too.  All are read in full, then the cgroup
 * is reclaimed until at most 2 MB is left.  Then, in each mapping, RssFile
 * has fallen by exactly the number of pages pagemap no longer shows mapped,
 * and every page, read again, holds the file's bytes; the child checks the
 * same in its own mapping.
 */
TEST_F_TIMEOUT(rb, unmap_data_and_rss, 600)
{
	const size_t c_len = PMD_SZ + 9 * PSZ;
	long rss0, rss1, map0, map1, cur;
	char *a, *b, *c, *cb;
	int fd, go[2], ready[2], st;
	pid_t child;
	char ok;

	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	a = map_file(fd, 0, FILE_SZ, 0, PROT_READ);
	b = map_file(fd, PSZ, FILE_SZ - PSZ, 0, PROT_READ);
	c = map_file(fd, 0, c_len, 0, PROT_READ);
	ASSERT_TRUE(a != MAP_FAILED && b != MAP_FAILED && c != MAP_FAILED)
		TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(-1, bad_page(a, 0, FILE_PAGES, TAG_FILE));
	ASSERT_EQ(-1, bad_page(b, 1, FILE_PAGES - 1, TAG_FILE));
	ASSERT_EQ(-1, bad_page(c, 0, c_len / PSZ, TAG_FILE));

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		long r0, r1, m0, m1;

		close(go[1]);
		close(ready[0]);
		cb = map_file(fd, PSZ, FILE_SZ - PSZ, 0, PROT_READ);
		if (cb == MAP_FAILED || bad_page(cb, 1, FILE_PAGES - 1,
						 TAG_FILE) != -1)
			_exit(10);
		r0 = lab_status_kb("RssFile");
		m0 = mapped(cb, FILE_PAGES - 1);
		/* Tell the parent, wait until it has reclaimed. */
		if (write(ready[1], "r", 1) != 1 || read(go[0], &ok, 1) != 1)
			_exit(11);
		r1 = lab_status_kb("RssFile");
		m1 = mapped(cb, FILE_PAGES - 1);
		if (m1 >= m0)
			_exit(12);
		if (r0 - r1 != (m0 - m1) * (long)(PSZ / 1024))
			_exit(13);
		if (bad_page(cb, 1, FILE_PAGES - 1, TAG_FILE) != -1)
			_exit(14);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &ok, 1)) TH_LOG("child failed to map");
	close(ready[0]);

	rss0 = lab_status_kb("RssFile");
	map0 = mapped(a, FILE_PAGES) + mapped(b, FILE_PAGES - 1) +
	       mapped(c, c_len / PSZ);
	cur = reclaim_to("32M", PMD_SZ, 12);
	rss1 = lab_status_kb("RssFile");
	map1 = mapped(a, FILE_PAGES) + mapped(b, FILE_PAGES - 1) +
	       mapped(c, c_len / PSZ);
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	ASSERT_EQ(child, waitpid(child, &st, 0));

	ksft_print_msg("memory.current after reclaim %ld kB; mapped pages %ld -> %ld; RssFile %ld -> %ld kB\n",
		       cur / 1024, map0, map1, rss0, rss1);
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));
	ASSERT_LT(map1, map0 / 2) TH_LOG("reclaim unmapped less than half");
	ASSERT_EQ(rss0 - rss1, (map0 - map1) * (long)(PSZ / 1024))
		TH_LOG("RssFile did not fall by the pages unmapped");
	ASSERT_EQ(-1, bad_page(a, 0, FILE_PAGES, TAG_FILE));
	ASSERT_EQ(-1, bad_page(b, 1, FILE_PAGES - 1, TAG_FILE));
	ASSERT_EQ(-1, bad_page(c, 0, c_len / PSZ, TAG_FILE));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("child: status %#x (10 setup, 11 pipe, 12 nothing unmapped, 13 RssFile, 14 data)",
		       st);
	close(fd);
}

static sigjmp_buf wp_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(wp_jmp, 1);
}

/* Writes to @p; returns 1 if the write faulted with SIGBUS, else 0. */
static int write_faults(volatile char *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int faulted = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(wp_jmp, 1))
		faulted = 1;
	else
		*p = 1;
	sigaction(SIGBUS, &old, NULL);
	return faulted;
}

/*
 * Proves write protection survives reclaim of shmem large folios, which
 * take the file path: 4 MB of shared anonymous memory in 64 kB shmem mTHP,
 * registered for uffd-wp (SIGBUS mode) and write-protected, is reclaimed to
 * swap.  Every page that left the page table must have left a uffd-wp
 * marker (pagemap), the data reads back, and a write to any page of every
 * folio faults.  Batched unmapping would install the marker for the first
 * PTE of a batch only, so it must not batch here.
 */
TEST_F_TIMEOUT(rb, uffd_wp_shmem_survives, 600)
{
	const size_t len = 2 * PMD_SZ, nr = len / PSZ;
	struct uffdio_writeprotect wp = { 0 };
	struct uffdio_register reg = { 0 };
	uint64_t pm[PMD_PAGES];
	long swapped = 0, cur;
	size_t i, pg;
	int uffd, pm_fd;
	char *p;

	if (!self->shmem_64k.valid)
		SKIP(return, "no 64 kB shmem mTHP");
	if (!lab_have_swap())
		SKIP(return, "no swap device");
	uffd = lab_uffd_open_features(UFFD_FEATURE_PAGEFAULT_FLAG_WP |
				      UFFD_FEATURE_WP_HUGETLBFS_SHMEM |
				      UFFD_FEATURE_SIGBUS);
	if (uffd == -ENOSYS || uffd == -EOPNOTSUPP)
		SKIP(return, "no uffd-wp for shmem: %s", strerror(-uffd));
	ASSERT_LE(0, uffd) TH_LOG("userfaultfd: %s", strerror(-uffd));
	ASSERT_EQ(0, lab_write_file(SHMEM_64K, "always"));
	ASSERT_EQ(0, lab_cg_move(CG, 0));

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (pg = 0; pg < nr; pg++)
		fill_page(p + pg * PSZ, TAG_SHMEM, pg);
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
	wp.range = reg.range;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		TH_LOG("UFFDIO_WRITEPROTECT: %s", strerror(errno));

	cur = reclaim_to("8M", PMD_SZ / 2, 12);
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pm_fd);
	for (i = 0; i < nr; i += PMD_PAGES) {
		ASSERT_EQ(0, lab_pagemap_read(pm_fd, p + i * PSZ, PMD_PAGES,
					      pm));
		for (pg = 0; pg < PMD_PAGES; pg++) {
			if (pm[pg] & LAB_PM_PRESENT)
				continue;
			swapped++;
			ASSERT_TRUE(!!(pm[pg] & LAB_PM_UFFD_WP))
				TH_LOG("page %zu left the page table without its uffd-wp marker (pagemap %#llx)",
				       i + pg, (unsigned long long)pm[pg]);
		}
	}
	close(pm_fd);
	ksft_print_msg("%ld of %zu pages unmapped by reclaim\n", swapped, nr);
	ASSERT_LT((long)nr / 2, swapped) TH_LOG("reclaim unmapped too little");
	ASSERT_EQ(-1, bad_page(p, 0, nr, TAG_SHMEM));
	/* One write in each 64 kB folio, at a different page every time. */
	for (i = 0; i < nr; i += 16) {
		pg = i + (i / 16) % 16;
		ASSERT_EQ(1, write_faults(p + pg * PSZ))
			TH_LOG("page %zu is writable after reclaim", pg);
	}
	ASSERT_EQ(-1, bad_page(p, 0, nr, TAG_SHMEM));
	close(uffd);
	munmap(p, len);
}

/*
 * Proves lazyfree large folios are reclaimed whole and correctly: 4 MB of
 * anonymous memory in 64 kB mTHP is filled and MADV_FREE'd, then one page of
 * every fourth folio is written again.  After reclaim RssAnon has fallen by
 * at least 2 MB, every page of an untouched folio reads either its old data
 * or zero and the whole folio agrees (it was dropped whole or kept whole),
 * and the pages written after MADV_FREE keep what was written.
 */
TEST_F_TIMEOUT(rb, lazyfree_anon, 300)
{
	const size_t len = 2 * PMD_SZ, nr = len / PSZ;
	struct lab_thp thp;
	long rss0, rss1, cur, zero;
	size_t f, pg;
	char *p;
	int ret;

	ASSERT_EQ(0, lab_thp_save(&thp));
	ret = lab_thp_only(&thp, 64);
	if (ret == -ENOENT) {
		lab_thp_restore(&thp);
		SKIP(return, "no 64 kB mTHP");
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	p = mmap(NULL, len + PMD_SZ, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	p = (char *)(((uintptr_t)p + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	for (pg = 0; pg < nr; pg++)
		fill_page(p + pg * PSZ, TAG_FILE, pg);
	ASSERT_EQ(0, madvise(p, len, MADV_FREE));
	for (f = 0; f < nr / 16; f += 4)
		fill_page(p + (f * 16 + 5) * PSZ, TAG_NEW, f * 16 + 5);
	rss0 = lab_status_kb("RssAnon");

	cur = reclaim_to("8M", 0, 8);
	rss1 = lab_status_kb("RssAnon");
	EXPECT_EQ(0, lab_thp_restore(&thp));
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));

	zero = 0;
	for (f = 0; f < nr / 16; f++) {
		char *fp = p + f * 16 * PSZ;
		bool z;

		if (f % 4 == 0) {
			ASSERT_EQ(-1, bad_page(fp + 5 * PSZ, f * 16 + 5, 1,
					       TAG_NEW))
				TH_LOG("folio %zu lost a write made after MADV_FREE",
				       f);
			continue;
		}
		z = bad_page(fp, 0, 1, 0) == -1;
		zero += z;
		ASSERT_EQ(-1, bad_page(fp, z ? 0 : f * 16, 16,
				       z ? 0 : TAG_FILE))
			TH_LOG("folio %zu is neither all old data nor all zero",
			       f);
	}
	ksft_print_msg("RssAnon %ld -> %ld kB; %ld of %zu lazyfree folios dropped\n",
		       rss0, rss1, zero, nr / 16 - nr / 64);
	ASSERT_LE(rss1 + 2048, rss0) TH_LOG("RssAnon fell by less than 2 MB");
	ASSERT_LT(0, zero) TH_LOG("no lazyfree folio was dropped");
}

/*
 * Proves dirty mapped file folios are written back, not dropped: the file
 * is mapped shared and writable and a new pattern written through the
 * mapping; the cgroup is reclaimed, the mapping removed and the page cache
 * dropped; read(2) then returns what was written through the mapping.
 */
TEST_F_TIMEOUT(rb, dirty_written_back, 600)
{
	static char buf[PMD_SZ];
	long cur, bad;
	size_t pg, r;
	char *p;
	int fd;

	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_file(fd, 0, FILE_SZ, 0, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	for (pg = 0; pg < FILE_PAGES; pg++)
		fill_page(p + pg * PSZ, TAG_NEW, pg);

	cur = reclaim_to("32M", PMD_SZ, 12);
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));
	ASSERT_EQ(0, munmap(p, FILE_SZ));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, lab_write_file("/proc/sys/vm/drop_caches", "3"));
	ASSERT_EQ(0, lseek(fd, 0, SEEK_SET));
	for (r = 0; r < FILE_REGIONS; r++) {
		ASSERT_EQ((ssize_t)PMD_SZ, read(fd, buf, PMD_SZ));
		bad = bad_page(buf, r * PMD_PAGES, PMD_PAGES, TAG_NEW);
		ASSERT_EQ(-1, bad)
			TH_LOG("page %zu does not hold what was written through the mapping",
			       r * PMD_PAGES + bad);
	}
	ksft_print_msg("memory.current after reclaim %ld kB\n", cur / 1024);
	close(fd);
}

TEST_HARNESS_MAIN
