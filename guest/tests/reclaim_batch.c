// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim_batch.c - tests of referenced_batch, unmap_batch and
 * mglru_young_batch: reclaim of large folios keeps what it must keep and
 * loses nothing when it checks young bits and unmaps a whole run of PTEs
 * at once, and it does take the batched paths exactly when their switch is
 * on.
 *
 * Every test runs as variants that set the switches on the patched kernel
 * (the teardown, run in the parent, writes the saved values back) or run
 * on the stock kernel, with the classic LRU and with MGLRU
 * (/sys/kernel/mm/lru_gen/enabled).  LAB_FLAVOUR picks the variants that
 * run, the others skip.  The behaviour tests assert the same outcome for
 * every variant: batching must not change what reclaim keeps or loses.
 * lazyfree_extra_ref is the exception: it tests a fix the series carries
 * outside any switch, and asserts 6.12's outcome on the stock variants.
 * The *_calls tests count kernel function calls with kprobes (never times)
 * and assert, from the value of their switch in the variant, the counts of
 * the batched path or of the 6.12 one: on the stock kernel and with the
 * switch off, the 6.12 counts.
 *
 * File tests use a file on XFS, whose page cache holds large folios, mapped
 * MADV_NOHUGEPAGE so that 2 MB folios are mapped by PTEs too.  Each test
 * moves itself into the cgroup "lab-reclaim-batch" and reclaims it with
 * memory.reclaim.
 *
 * Needs root, 4 KiB pages, cgroup2, XFS on /mnt/xfs, swap, 64 kB anonymous
 * and shmem mTHP, userfaultfd write-protect for shmem, kprobe events and
 * debugfs: the lab's guests have all of them, so a missing one fails.
 * Only the programs of guest/bench/ run outside the lab's guests
 * (run-here.sh); these tests do not.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <setjmp.h>
#include <sched.h>
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
#include "lab_test.h"

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
	int i, ret;

	for (i = 0; i < NR_SWITCHES; i++)
		self->sw[i].valid = false;
	self->lru_gen.valid = false;
	self->shmem_64k.valid = false;
	LAB_REQUIRE_FLAVOUR(variant->flavour, "variant for the %s kernel",
			    variant->flavour);
	ASSERT_EQ(PSZ, (unsigned long)getpagesize());
	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_EQ(1, ret)
		TH_LOG("%s is not an XFS mount point: the lab mounts one there",
		       XFS_DIR);

	lab_switches_set(_metadata, self->sw, switch_names, variant->sw,
			 NR_SWITCHES);
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
	unlink(XFS_FILE);
	EXPECT_EQ(0, lab_cg_remove(CG));
	lab_switches_restore(_metadata, self->sw, NR_SWITCHES);
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
 * Reads the field @field of the cgroup's memory.stat into *@val.
 * Returns 0, -ENOENT without such a field, or -errno.
 */
static int cg_stat(const char *field, unsigned long *val)
{
	size_t flen = strlen(field);
	char buf[8192], *line;
	ssize_t n;

	n = lab_read_file(LAB_CGROUP_ROOT "/" CG "/memory.stat", buf,
			  sizeof(buf));
	if (n < 0)
		return n;
	for (line = buf; line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, field, flen) && line[flen] == ' ') {
			*val = strtoul(line + flen + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Counts the 64 kB blocks of [@p, @p + @nr pages), @p 64 kB-aligned, that
 * map one whole folio of exactly 64 kB (lab_folio_mapped_size()).
 * Returns the count or -errno.
 */
static long whole_64k_folios(char *p, size_t nr)
{
	size_t blk, size;
	int pm_fd, kpf_fd, err = 0;
	long count = 0;

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	if (pm_fd < 0)
		return -errno;
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (kpf_fd < 0) {
		err = -errno;
		close(pm_fd);
		return err;
	}
	for (blk = 0; blk < nr / 16; blk++) {
		/* Looking at 128 kB tells a 64 kB folio from a larger one. */
		err = lab_folio_mapped_size(pm_fd, kpf_fd, p + blk * 16 * PSZ,
					    32 * PSZ, &size);
		if (err)
			break;
		count += size == 16 * PSZ;
	}
	close(kpf_fd);
	close(pm_fd);
	return err ? err : count;
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
 * folio faults.  unmap_batch alone does not batch such a VMA, and
 * anon_unmap_batch, which does, stays at its default (off) here: its
 * batched markers are anon_unmap_batch.c's uffd_wp_shmem_markers.  That
 * the memory was in 64 kB folios, and that reclaim unmapped more than half
 * of it, is checked: without either the test would prove nothing.
 */
TEST_F_TIMEOUT(rb, uffd_wp_shmem_survives, 600)
{
	const size_t len = 2 * PMD_SZ, nr = len / PSZ;
	struct uffdio_writeprotect wp = { 0 };
	struct uffdio_register reg = { 0 };
	uint64_t pm[PMD_PAGES];
	long swapped = 0, cur, n;
	size_t i, pg;
	int uffd, pm_fd;
	char *p;

	ASSERT_TRUE(self->shmem_64k.valid)
		TH_LOG("no %s: the lab's kernels have 64 kB shmem mTHP",
		       SHMEM_64K);
	ASSERT_TRUE(lab_have_swap())
		TH_LOG("no swap device: the lab's guests swap to a disk");
	uffd = lab_uffd_open_features(UFFD_FEATURE_PAGEFAULT_FLAG_WP |
				      UFFD_FEATURE_WP_HUGETLBFS_SHMEM |
				      UFFD_FEATURE_SIGBUS);
	ASSERT_LE(0, uffd)
		TH_LOG("userfaultfd with write-protect of shmem: %s (both arches have it in 6.12)",
		       strerror(-uffd));
	ASSERT_EQ(0, lab_write_file(SHMEM_64K, "always"));
	ASSERT_EQ(0, lab_cg_move(CG, 0));

	/* 2 MB-aligned, so that every 64 kB of the object can be a folio. */
	p = mmap(NULL, len + PMD_SZ, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	p = (char *)(((uintptr_t)p + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	ASSERT_EQ(p, mmap(p, len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	for (pg = 0; pg < nr; pg++)
		fill_page(p + pg * PSZ, TAG_SHMEM, pg);
	n = whole_64k_folios(p, nr);
	ASSERT_EQ((long)nr / 16, n)
		TH_LOG("%ld of %zu 64 kB blocks are one 64 kB shmem folio (%s)",
		       n, nr / 16, n < 0 ? strerror(-n) : "mTHP not used");
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
 * Sets 64 kB anonymous mTHP alone (@thp saves the settings; restored here
 * on failure), maps @len bytes at a 2 MB boundary and fills every page with
 * pattern TAG_FILE.  Returns the mapping.
 */
static char *map_64k_filled(struct __test_metadata *_metadata,
			    struct lab_thp *thp, size_t len)
{
	size_t pg;
	char *p;
	int ret;

	ASSERT_EQ(0, lab_thp_save(thp));
	ret = lab_thp_only(thp, 64);
	if (ret)
		lab_thp_restore(thp);
	ASSERT_EQ(0, ret)
		TH_LOG("64 kB anonymous mTHP: %s (the lab's kernels have it)",
		       strerror(-ret));
	p = mmap(NULL, len + PMD_SZ, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	p = (char *)(((uintptr_t)p + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	for (pg = 0; pg < len / PSZ; pg++)
		fill_page(p + pg * PSZ, TAG_FILE, pg);
	return p;
}

/*
 * Proves lazyfree large folios are reclaimed whole and correctly: 4 MB of
 * anonymous memory in 64 kB mTHP is filled and MADV_FREE'd, then one page of
 * every fourth folio is written again; every 64 kB of it must then still be
 * one 64 kB folio (kpageflags), or the test would only see small pages
 * reclaimed.  After reclaim RssAnon has fallen by
 * at least 2 MB, every page of an untouched folio reads either its old data
 * or zero and the whole folio agrees (it was dropped whole or kept whole),
 * and the pages written after MADV_FREE keep what was written.
 */
TEST_F_TIMEOUT(rb, lazyfree_anon, 300)
{
	const size_t len = 2 * PMD_SZ, nr = len / PSZ;
	struct lab_thp thp;
	long rss0, rss1, cur, zero, large;
	size_t f;
	char *p;

	ASSERT_EQ(0, lab_cg_move(CG, 0));
	p = map_64k_filled(_metadata, &thp, len);
	ASSERT_EQ(0, madvise(p, len, MADV_FREE));
	for (f = 0; f < nr / 16; f += 4)
		fill_page(p + (f * 16 + 5) * PSZ, TAG_NEW, f * 16 + 5);
	large = whole_64k_folios(p, nr);
	if (large != (long)nr / 16)
		lab_thp_restore(&thp);
	ASSERT_EQ((long)nr / 16, large)
		TH_LOG("%ld of %zu 64 kB blocks are one 64 kB folio (%s)",
		       large, nr / 16,
		       large < 0 ? strerror(-large) : "mTHP not used");
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
 * mapping, which leaves at least half of it dirty (memory.stat file_dirty);
 * the cgroup is reclaimed, which must unmap more than half of the pages
 * (pagemap) and take the cgroup's page cache (memory.stat file) below half
 * the file.  A dirty page leaves the page cache only once written back, so
 * reclaim wrote those pages, before the mapping is removed, the file
 * synced and the page cache dropped; read(2) then returns what was written
 * through the mapping.  Without the reclaim, munmap() and fsync() alone
 * would write the data, and the test would prove nothing about reclaim.
 */
TEST_F_TIMEOUT(rb, dirty_written_back, 600)
{
	static char buf[PMD_SZ];
	unsigned long dirty0, file0, file1;
	long cur, bad, map0, map1;
	size_t pg, r;
	char *p;
	int fd;

	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_file(fd, 0, FILE_SZ, 0, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	/*
	 * The flusher or dirty throttling may write the pages back before
	 * memory.stat is read (seen once: 0 kB dirty); writing them again
	 * dirties them again, so the state the test needs is made up to
	 * three times, and a page cache that never stays dirty fails.
	 */
	for (r = 0; r < 3; r++) {
		for (pg = 0; pg < FILE_PAGES; pg++)
			fill_page(p + pg * PSZ, TAG_NEW, pg);
		ASSERT_EQ(0, cg_stat("file_dirty", &dirty0));
		if (dirty0 >= FILE_SZ / 2)
			break;
		ksft_print_msg("attempt %zu: only %lu kB of the cgroup's page cache dirty\n",
			       r + 1, dirty0 / 1024);
	}
	map0 = mapped(p, FILE_PAGES);
	ASSERT_EQ(0, cg_stat("file", &file0));
	ASSERT_EQ((long)FILE_PAGES, map0);
	ASSERT_LE(FILE_SZ / 2, dirty0)
		TH_LOG("only %lu kB of the cgroup's page cache is dirty",
		       dirty0 / 1024);

	cur = reclaim_to("32M", PMD_SZ, 12);
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));
	map1 = mapped(p, FILE_PAGES);
	ASSERT_EQ(0, cg_stat("file", &file1));
	ksft_print_msg("dirty %lu kB; page cache %lu -> %lu kB; mapped pages %ld -> %ld\n",
		       dirty0 / 1024, file0 / 1024, file1 / 1024, map0, map1);
	ASSERT_LT(map1, map0 / 2) TH_LOG("reclaim unmapped less than half");
	ASSERT_LT(file1, FILE_SZ / 2)
		TH_LOG("reclaim wrote back and freed less than half of the file");
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

/*
 * The tests below count calls of kernel functions with kprobe events
 * (lab_kprobe_add()), around one reclaim step of a workload whose folios
 * are known, and compare the counts with what that workload implies for
 * the batched path (switch on) and for the 6.12 one (switch off, stock).
 * Only counts are asserted, never times.  Each bound has a margin that the
 * other path misses by far: a path that is not taken when it should be, or
 * taken when it should not be, fails.  SLACK allows for calls from
 * anything else the kernel does meanwhile.
 */
#define SLACK		8
/* Pages of an arm64 contpte block (64 kB of 4 kB pages). */
#define CONT_PAGES	16
#define TRACING		"/sys/kernel/tracing"
#define LRU_GEN_DEBUG	"/sys/kernel/debug/lru_gen"
/* Bits of /sys/kernel/mm/lru_gen/enabled. */
#define LRU_GEN_CORE	0x1
#define LRU_GEN_MM_WALK	0x2

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

enum { SW_REFERENCED, SW_UNMAP, SW_MGLRU };

/* Whether the variant turns switch @sw (SW_*) on; never on stock. */
static bool switch_on(const FIXTURE_VARIANT(rb) *variant, int sw)
{
	return variant->sw[sw] && !strcmp(variant->sw[sw], "1");
}

/**
 * struct rb_probe - a kprobe event counting the calls of one function
 * @event: event name, lab/@event; NULL for an unused slot
 * @func: kernel function
 * @series: the series adds @func, so the stock kernel does not have it
 * @absent: @func is not there (stock only), it counts as never called
 * @base: hits when probes_start() ran
 * @calls: hits between probes_start() and probes_stop()
 */
struct rb_probe {
	const char *event;
	const char *func;
	bool series;
	bool absent;
	long long base;
	long long calls;
};

/*
 * Creates the events of @pr (@n entries).  A function the series adds may
 * be missing on the stock kernel (@stock) only; any other missing function
 * is an error.  Returns 0 or -errno, with the function in *@bad.
 */
static int probes_add(struct rb_probe *pr, int n, bool stock,
		      const char **bad)
{
	int i, err;

	for (i = 0; i < n; i++) {
		if (!pr[i].event)
			continue;
		err = lab_kprobe_add(pr[i].event, pr[i].func);
		pr[i].absent = err == -ENOENT && pr[i].series && stock;
		if (err && !pr[i].absent) {
			*bad = pr[i].func;
			return err;
		}
	}
	return 0;
}

/* Writes @val to the enable file of the event of @pr. */
static int probe_enable(const struct rb_probe *pr, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACING "/events/lab/%s/enable",
		 pr->event);
	return lab_write_file(path, val);
}

/*
 * Enables the events of @pr and notes their hits.  They are disabled again
 * by probes_stop(), so that they cost nothing in the rest of the boot.
 * Every event is enabled before any hit is noted: arming a kprobe patches
 * kernel text, and each text_poke() on x86 flushes its own mm with
 * flush_tlb_mm_range() (three times per site where ftrace patches the
 * entry, as on Debian's config), which an event armed earlier would count.
 * Returns 0 or -errno.
 */
static int probes_start(struct rb_probe *pr, int n)
{
	int i, err;

	for (i = 0; i < n; i++) {
		pr[i].calls = 0;
		if (!pr[i].event || pr[i].absent)
			continue;
		err = probe_enable(&pr[i], "1");
		if (err)
			return err;
	}
	for (i = 0; i < n; i++) {
		if (!pr[i].event || pr[i].absent)
			continue;
		pr[i].base = lab_kprobe_hits(pr[i].event);
		if (pr[i].base < 0)
			return pr[i].base;
	}
	return 0;
}

/*
 * Sets the calls of @pr since probes_start(), every count read before any
 * event is disabled (see probes_start()).  Returns 0 or -errno.
 */
static int probes_stop(struct rb_probe *pr, int n)
{
	long long hits;
	int i, err = 0;

	for (i = 0; i < n; i++) {
		if (!pr[i].event || pr[i].absent)
			continue;
		hits = lab_kprobe_hits(pr[i].event);
		if (hits < 0 && !err)
			err = hits;
		pr[i].calls = hits - pr[i].base;
	}
	for (i = 0; i < n; i++)
		if (pr[i].event && !pr[i].absent)
			probe_enable(&pr[i], "0");
	return err;
}

/* Prints "func calls" for each probe of @pr. */
static void probes_print(const char *what, const struct rb_probe *pr, int n)
{
	char line[1024];
	size_t len = 0;
	int i;

	line[0] = '\0';
	for (i = 0; i < n && len < sizeof(line); i++) {
		if (!pr[i].event)
			continue;
		len += snprintf(line + len, sizeof(line) - len, " %s %lld%s;",
				pr[i].func, pr[i].calls,
				pr[i].absent ? " (absent)" : "");
	}
	ksft_print_msg("%s:%s\n", what, line);
}

/**
 * struct rb_layout - the folios that map a range, in order
 * @folios: number of folios
 * @singles: of them a single page
 * @pages: pages in the range
 * @cont_pages: pages in folios of 64 kB or more, which arm64 maps with
 *              contpte blocks (the folios are naturally aligned)
 * @cont_folios: folios of 64 kB or more
 * @first: first page of each folio, from the start of the range
 * @nr: pages of each folio
 */
struct rb_layout {
	long folios;
	long singles;
	long pages;
	long cont_pages;
	long cont_folios;
	unsigned int *first;
	unsigned int *nr;
};

static void layout_free(struct rb_layout *lay)
{
	free(lay->first);
	free(lay->nr);
	lay->first = lay->nr = NULL;
}

/*
 * Fills @lay with the folios mapped at [@p, @p + @nr pages), every page of
 * it mapped and the first the start of a folio.  Returns 0 or -errno.
 */
static int layout_measure(char *p, size_t nr, struct rb_layout *lay)
{
	size_t pg, size;
	int pm_fd, kpf_fd, err = 0;

	memset(lay, 0, sizeof(*lay));
	lay->first = calloc(nr, sizeof(*lay->first));
	lay->nr = calloc(nr, sizeof(*lay->nr));
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	if (!lay->first || !lay->nr || pm_fd < 0 || kpf_fd < 0) {
		err = pm_fd < 0 || kpf_fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (pg = 0; pg < nr; pg += size / PSZ) {
		err = lab_folio_mapped_size(pm_fd, kpf_fd, p + pg * PSZ,
					    (nr - pg) * PSZ, &size);
		if (!err && !size)
			err = -EINVAL;	/* a folio begun before @p */
		if (err)
			break;
		lay->first[lay->folios] = pg;
		lay->nr[lay->folios] = size / PSZ;
		lay->folios++;
		lay->singles += size == PSZ;
		if (size >= CONT_PAGES * PSZ) {
			lay->cont_pages += size / PSZ;
			lay->cont_folios++;
		}
	}
	lay->pages = pg;
out:
	if (pm_fd >= 0)
		close(pm_fd);
	if (kpf_fd >= 0)
		close(kpf_fd);
	if (err)
		layout_free(lay);
	return err;
}

/* Reads one byte of every page of [@p, @p + @nr pages). */
static void read_pages(const char *p, size_t nr)
{
	volatile char sink;
	size_t pg;

	for (pg = 0; pg < nr; pg++)
		sink = p[pg * PSZ];
	(void)sink;
}

/*
 * The cached test file, mapped: FILE_SZ / 2 from offset 0, every page read
 * (so mapped and young), and its folios measured.  Returns the mapping or
 * MAP_FAILED with errno set.
 */
static char *map_cached_half(int fd, struct rb_layout *lay)
{
	char *p;
	int err;

	p = map_file(fd, 0, FILE_SZ / 2, 0, PROT_READ);
	if (p == MAP_FAILED)
		return p;
	read_pages(p, FILE_PAGES / 2);
	err = layout_measure(p, FILE_PAGES / 2, lay);
	if (err) {
		errno = -err;
		return MAP_FAILED;
	}
	return p;
}

/* Pins the caller to the CPU it runs on.  Returns the CPU or -errno. */
static int pin_here(void)
{
	cpu_set_t set;
	int cpu;

	cpu = sched_getcpu();
	if (cpu < 0)
		return -errno;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : cpu;
}

/* Writes @caps (LRU_GEN_*) to lru_gen/enabled, then reads them back. */
static int lru_gen_caps(unsigned int caps, unsigned long *now)
{
	char buf[16];
	int err;

	snprintf(buf, sizeof(buf), "%#x", caps);
	err = lab_write_file(LRU_GEN, buf);
	if (err)
		return err;
	if (lab_read_file(LRU_GEN, buf, sizeof(buf)) < 0)
		return -EIO;
	*now = strtoul(buf, NULL, 0);
	return 0;
}

/**
 * struct rb_lrugen - what /sys/kernel/debug/lru_gen_full says of a cgroup
 * @id: memcg ID, for commands written to /sys/kernel/debug/lru_gen
 * @nid: the first node listed
 * @max_seq: the youngest generation on that node
 * @total: PTEs the page table walks of its aging looked at, since boot
 *         (MM_LEAF_TOTAL, the "T" column of max_seq)
 * @young: of them found young (MM_LEAF_YOUNG, the "Y" column)
 */
struct rb_lrugen {
	int id;
	int nid;
	unsigned long max_seq;
	unsigned long total;
	unsigned long young;
};

/*
 * Reads struct rb_lrugen of cgroup "/" CG from lru_gen_full: a "memcg ID
 * PATH" line, " node NID", then per generation a line of four numbers
 * (seq, age, anon, file), its tier lines, and after that of max_seq the
 * stats line "...T ...Y ...F ...A".  A cgroup of the same path removed
 * earlier can still be listed (offline, while pages are charged to it);
 * the live one was created last, so it is the last listed.  Returns 0,
 * -ENOENT if the cgroup or its stats are not listed, or -errno.
 */
static int lrugen_read(struct rb_lrugen *lg)
{
	unsigned long seq, t, y, f, a;
	char line[512], path[256], ct, cy, cf, ca, *c;
	bool in = false, stats = false;
	int id, nid, node = -1;
	unsigned int age;
	long anon, file;
	FILE *fp;

	fp = fopen(LRU_GEN_DEBUG "_full", "r");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "memcg %d %255s", &id, path) == 2) {
			in = !strcmp(path, "/" CG);
			if (in) {
				lg->id = id;
				node = -1;
				stats = false;
			}
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, " node %d", &nid) == 1) {
			if (node >= 0) {
				in = false;	/* the first node only */
				continue;
			}
			node = lg->nid = nid;
			continue;
		}
		if (sscanf(line, " %lu%c %lu%c %lu%c %lu%c", &t, &ct, &y, &cy,
			   &f, &cf, &a, &ca) == 8 && ct == 'T' && cy == 'Y' &&
		    cf == 'F' && ca == 'A') {
			lg->total = t;
			lg->young = y;
			stats = true;
			continue;
		}
		for (c = line; *c && !isalpha((unsigned char)*c); c++)
			;
		if (!*c && sscanf(line, " %lu %u %ld %ld", &seq, &age, &anon,
				  &file) == 4)
			lg->max_seq = seq;
	}
	fclose(fp);
	return stats && node >= 0 ? 0 : -ENOENT;
}

/*
 * Proves folio_referenced_one() tests the young bits of a large folio in
 * one batch when referenced_batch is on, and one PTE at a time when it is
 * off and on stock.  8 MB of the cached test file is mapped and read in
 * full, so every PTE is young; the other 8 MB is page cache only and
 * younger on the LRU.  Reclaiming 4 MB with swappiness=0 (so that the
 * process's anonymous pages, charged to the cgroup too, are neither
 * tested nor swapped) checks every mapped folio (they are the oldest) and
 * keeps it, since it is young, then frees unmapped ones; RssFile must not
 * change and try_to_unmap_one() is never called, so every
 * page_vma_mapped_walk() step belongs to a folio_referenced_one() call.
 *
 * With the classic LRU a call steps once per PTE and once more to find
 * the end in 6.12, and once per batch, here once per call, with the batch;
 * there are at least as many calls as mapped folios, so "on" asserts
 * steps <= calls + SLACK and "off" steps >= calls + half the mapped pages
 * (all of them when every folio was tested once).  On arm64 the young bits of a contpte block
 * are tested per PTE by contpte_ptep_clear_flush_young() in 6.12, at least
 * once for every page of a folio of 64 kB or more; the batch calls
 * contpte_clear_flush_young_ptes() instead, at most once per call and never
 * with the switch off.  With MGLRU (run without its page table walk, whose
 * batching is mglru_young_batch's) the rmap walk hands the look-around
 * one PTE per step in 6.12 and one batch with the switch on:
 * lru_gen_look_around() is called once per call with the switch on, and,
 * with folios of 4 pages or more on average, at least twice per call
 * without.
 */
TEST_F_TIMEOUT(rb, referenced_batch_calls, 300)
{
	enum { WALK, REF_ONE, UNMAP_ONE, LOOK, YOUNG_PTES, YOUNG_PTE, NR };
	struct rb_probe pr[NR] = {
		[WALK] = { "rb_pvmw", "page_vma_mapped_walk" },
		[REF_ONE] = { "rb_referenced_one", "folio_referenced_one" },
		[UNMAP_ONE] = { "rb_unmap_one", "try_to_unmap_one" },
		[LOOK] = { "rb_look_around", "lru_gen_look_around" },
#ifdef __aarch64__
		[YOUNG_PTES] = { "rb_cfy_ptes", "contpte_clear_flush_young_ptes",
				 true },
		[YOUNG_PTE] = { "rb_cfy_pte", "contpte_ptep_clear_flush_young" },
#endif
	};
	bool on = switch_on(variant, SW_REFERENCED);
	long long walk, calls, look;
	struct rb_layout lay;
	unsigned long caps;
	const char *bad = "";
	long rss0, rss1, cur;
	char *p;
	int fd, err;

	err = probes_add(pr, NR, !variant->sw[0], &bad);
	ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", bad, strerror(-err));
	if (variant->mglru) {
		ASSERT_EQ(0, lru_gen_caps(LRU_GEN_CORE, &caps));
		ASSERT_EQ((unsigned long)LRU_GEN_CORE, caps);
	}
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_cached_half(fd, &lay);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	ksft_print_msg("mapped: %ld pages in %ld folios, %ld of them one page, %ld pages in folios of 64 kB or more\n",
		       lay.pages, lay.folios, lay.singles, lay.cont_pages);
	ASSERT_LE(4 * lay.folios, lay.pages)
		TH_LOG("the folios average less than 16 kB");

	rss0 = lab_status_kb("RssFile");
	ASSERT_EQ(0, probes_start(pr, NR));
	cur = reclaim_to("4M swappiness=0", 0, 1);
	ASSERT_EQ(0, probes_stop(pr, NR));
	rss1 = lab_status_kb("RssFile");
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));
	probes_print(on ? "calls, batched" : "calls, per PTE", pr, NR);
	walk = pr[WALK].calls;
	calls = pr[REF_ONE].calls;
	look = pr[LOOK].calls;

	if (variant->mglru) {
		/* Every call hands at least one PTE to the look-around. */
		ASSERT_LE(1, calls) TH_LOG("reclaim tested no mapped folio");
		ASSERT_LE(calls, look)
			TH_LOG("fewer look-arounds than folio_referenced_one() calls");
		if (on) {
			EXPECT_LE(look, calls + SLACK)
				TH_LOG("more than one look-around per call: the rmap walk did not batch");
		} else {
			EXPECT_LE(2 * calls, look)
				TH_LOG("less than two look-arounds per call: the rmap walk batched");
		}
		goto out;
	}

	ASSERT_EQ(rss0, rss1) TH_LOG("reclaim unmapped young folios");
	ASSERT_EQ(0, pr[UNMAP_ONE].calls)
		TH_LOG("try_to_unmap_one() ran: the walk steps are not all folio_referenced_one()'s");
	ASSERT_LE(lay.folios, calls)
		TH_LOG("reclaim tested fewer folios than are mapped");
	if (on) {
		EXPECT_LE(walk, calls + SLACK)
			TH_LOG("more than one walk step per call: the young bits were not tested in one batch");
	} else {
		EXPECT_LE(calls + lay.pages / 2, walk)
			TH_LOG("fewer walk steps than calls plus half the mapped pages: the young bits were batched");
	}
#ifdef __aarch64__
	if (on) {
		EXPECT_LE(lay.folios - lay.singles, pr[YOUNG_PTES].calls)
			TH_LOG("contpte_clear_flush_young_ptes() not called for every large folio");
		EXPECT_LE(pr[YOUNG_PTES].calls, calls)
			TH_LOG("more than one batch per folio_referenced_one() call");
		EXPECT_LE(pr[YOUNG_PTE].calls, SLACK)
			TH_LOG("contpte blocks were still tested one PTE at a time");
	} else {
		EXPECT_EQ(0, pr[YOUNG_PTES].calls)
			TH_LOG("contpte_clear_flush_young_ptes() called with the switch off");
		EXPECT_LE(lay.cont_pages, pr[YOUNG_PTE].calls)
			TH_LOG("fewer per-PTE contpte tests than contpte-mapped pages");
	}
#endif
out:
	layout_free(&lay);
	close(fd);
}

/* What the child of unmap_batch_calls reports. */
struct unmap_report {
	int err;		/* 0 or -errno */
	int step;		/* the step that failed */
	long mapped0;		/* pages mapped before MADV_PAGEOUT */
	long mapped1;		/* and after */
	long folios;		/* folios mapped */
	long singles;		/* of them one page */
	long gone;		/* folios no longer mapped at all */
	long gone_pages;	/* pages of those */
	long gone_singles;	/* of them one page */
	long gone_blocks;	/* their contpte blocks (64 kB each) */
	long long calls[8];	/* struct rb_probe .calls */
};

/*
 * The child of unmap_batch_calls: maps and reads FILE_SZ / 2 of @fd, pages
 * it out with MADV_PAGEOUT between probes_start() and probes_stop() of
 * @pr, and writes a struct unmap_report to @out.  Never returns.
 */
static void unmap_child(int fd, struct rb_probe *pr, int n, int out)
{
	const size_t nr = FILE_PAGES / 2;
	struct unmap_report rep = { 0 };
	struct rb_layout lay;
	uint64_t *pm = NULL;
	long f, pg, present;
	int pm_fd = -1;
	char *p;

	rep.step = 1;
	p = map_cached_half(fd, &lay);
	if (p == MAP_FAILED) {
		rep.err = -errno;
		goto out;
	}
	rep.folios = lay.folios;
	rep.singles = lay.singles;
	rep.step = 2;
	rep.mapped0 = mapped(p, nr);
	rep.err = probes_start(pr, n);
	if (rep.err)
		goto out;
	rep.step = 3;
	if (madvise(p, nr * PSZ, MADV_PAGEOUT))
		rep.err = -errno;
	probes_stop(pr, n);
	if (rep.err)
		goto out;
	for (f = 0; f < n && f < 8; f++)
		rep.calls[f] = pr[f].calls;
	rep.step = 4;
	rep.mapped1 = mapped(p, nr);
	pm = malloc(nr * sizeof(*pm));
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	if (!pm || pm_fd < 0) {
		rep.err = -ENOMEM;
		goto out;
	}
	rep.err = lab_pagemap_read(pm_fd, p, nr, pm);
	if (rep.err)
		goto out;
	for (f = 0; f < lay.folios; f++) {
		present = 0;
		for (pg = 0; pg < lay.nr[f]; pg++)
			present += !!(pm[lay.first[f] + pg] & LAB_PM_PRESENT);
		if (present)
			continue;
		rep.gone++;
		rep.gone_pages += lay.nr[f];
		rep.gone_singles += lay.nr[f] == 1;
		if (lay.nr[f] >= CONT_PAGES)
			rep.gone_blocks += lay.nr[f] / CONT_PAGES;
	}
	rep.step = 0;
out:
	if (write(out, &rep, sizeof(rep)) != sizeof(rep))
		_exit(2);
	_exit(0);
}

/*
 * How many times unmap_batch_calls measures the batched path before its
 * bounds fail.  The probes count the calls of the whole kernel, so what
 * else runs meanwhile only adds to the workload's own: 11 lab runs had 3
 * flush_tlb_mm_range() calls more than folios, one beside two other
 * boots on a 2-core host 13, over SLACK.  A kernel that does not batch is
 * over by hundreds in every attempt, so the bounds are measured again
 * rather than widened.
 */
#define UNMAP_ATTEMPTS	3

/*
 * One measurement of unmap_batch_calls: caches the test file afresh (the
 * pages out of the last attempt are gone), forks unmap_child() and reads
 * its report into @rep.  Returns 0, or -errno with the child's status in
 * *@st.
 */
static int unmap_attempt(struct rb_probe *pr, int n, struct unmap_report *rep,
			 int *st)
{
	int fd, out[2], err;
	pid_t child;

	fd = make_cached_file();
	if (fd < 0)
		return fd;
	if (pipe(out)) {
		err = -errno;
		close(fd);
		return err;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		close(fd);
		close(out[0]);
		close(out[1]);
		return err;
	}
	if (!child) {
		close(out[0]);
		unmap_child(fd, pr, n, out[1]);
	}
	close(out[1]);
	err = read(out[0], rep, sizeof(*rep)) == sizeof(*rep) ? 0 : -EIO;
	close(out[0]);
	close(fd);
	if (waitpid(child, st, 0) != child && !err)
		err = -errno;
	return err;
}

/*
 * Proves try_to_unmap_one() unmaps a file large folio in one batch, with
 * one TLB flush, when unmap_batch is on, and one PTE at a time when it is
 * off and on stock.  A child process maps 8 MB of the cached test file,
 * reads it and pages it out with MADV_PAGEOUT, which reclaims the folios
 * (shrink_folio_list(), try_to_unmap() with TTU_BATCH_FLUSH) without
 * testing their young bits, so every page_vma_mapped_walk() step is an
 * unmap's.  pagemap then tells which folios left the mapping.
 *
 * 6.12 takes a walk step per PTE and one more to find the end: steps >=
 * calls + pages unmapped.  The batch takes one step for a whole folio, two
 * for a single page: steps <= calls + single pages + SLACK.  On x86 the
 * child runs on one CPU only, so the flushes are not deferred (asserted:
 * no arch_tlbbatch_flush()), and 6.12 calls flush_tlb_mm_range() once per
 * PTE, the batch once per folio: flushes >= pages unmapped, against <=
 * calls + SLACK.  On arm64 6.12 unfolds every contpte block it unmaps
 * (__contpte_try_unfold() once per block), the batch clears whole blocks
 * and unfolds none.  The batched path's upper bounds get up to
 * UNMAP_ATTEMPTS measurements, each printed; the 6.12 path's lower bounds
 * one.
 */
TEST_F_TIMEOUT(rb, unmap_batch_calls, 300)
{
	enum { WALK, UNMAP_ONE, FLUSH, DEFERRED, UNFOLD, NR };
	struct rb_probe pr[NR] = {
		[WALK] = { "rb_pvmw", "page_vma_mapped_walk" },
		[UNMAP_ONE] = { "rb_unmap_one", "try_to_unmap_one" },
#ifdef __x86_64__
		[FLUSH] = { "rb_flush", "flush_tlb_mm_range" },
		[DEFERRED] = { "rb_tlbbatch_flush", "arch_tlbbatch_flush" },
#endif
#ifdef __aarch64__
		[UNFOLD] = { "rb_unfold", "__contpte_try_unfold" },
#endif
	};
	bool on = switch_on(variant, SW_UNMAP);
	struct unmap_report rep;
	const char *bad = "";
	long long steps, calls;
	int attempt, err, i, st = 0;

	err = probes_add(pr, NR, !variant->sw[0], &bad);
	ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", bad, strerror(-err));
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	/* The child's mm is new and runs on this CPU only. */
	ASSERT_LE(0, pin_here());
	for (attempt = 1; ; attempt++) {
		err = unmap_attempt(pr, NR, &rep, &st);
		ASSERT_EQ(0, err)
			TH_LOG("no report from the child (status %#x): %s", st,
			       strerror(-err));
		ASSERT_EQ(0, rep.err)
			TH_LOG("child, step %d: %s", rep.step, strerror(-rep.err));
		for (i = 0; i < NR; i++)
			pr[i].calls = rep.calls[i];
		ksft_print_msg("attempt %d: mapped pages %ld -> %ld; %ld of %ld folios unmapped: %ld pages, %ld single pages, %ld contpte blocks\n",
			       attempt, rep.mapped0, rep.mapped1, rep.gone,
			       rep.folios, rep.gone_pages, rep.gone_singles,
			       rep.gone_blocks);
		probes_print(on ? "calls, batched" : "calls, per PTE", pr, NR);
		steps = pr[WALK].calls;
		calls = pr[UNMAP_ONE].calls;
		/* only the batched path's upper bounds can be met again */
		if (!on || attempt == UNMAP_ATTEMPTS)
			break;
		if (steps <= calls + rep.gone_singles + SLACK
#ifdef __x86_64__
		    && pr[FLUSH].calls <= calls + SLACK
#endif
#ifdef __aarch64__
		    && pr[UNFOLD].calls <= 2
#endif
		    )
			break;
	}

	ASSERT_LE(rep.mapped0 * 3 / 4, rep.gone_pages)
		TH_LOG("MADV_PAGEOUT unmapped less than 3/4 of the mapping");
	ASSERT_LE(4 * rep.folios, rep.mapped0)
		TH_LOG("the folios average less than 16 kB");
	ASSERT_LE(rep.gone, calls)
		TH_LOG("fewer try_to_unmap_one() calls than folios unmapped");
	if (on) {
		EXPECT_LE(steps, calls + rep.gone_singles + SLACK)
			TH_LOG("more than one walk step per large folio: it was not unmapped in one batch");
	} else {
		EXPECT_LE(calls + rep.gone_pages, steps)
			TH_LOG("fewer walk steps than PTEs unmapped: the folios were batched");
	}
#ifdef __x86_64__
	ASSERT_EQ(0, pr[DEFERRED].calls)
		TH_LOG("the TLB flushes were deferred: the child's mm ran on another CPU");
	if (on) {
		EXPECT_LE(pr[FLUSH].calls, calls + SLACK)
			TH_LOG("more than one TLB flush per folio");
	} else {
		EXPECT_LE(rep.gone_pages, pr[FLUSH].calls)
			TH_LOG("fewer TLB flushes than PTEs unmapped: the folios were batched");
	}
#endif
#ifdef __aarch64__
	ASSERT_LE(1, rep.gone_blocks) TH_LOG("no contpte block was unmapped");
	if (on) {
		EXPECT_LE(pr[UNFOLD].calls, 2)
			TH_LOG("contpte blocks were unfolded to unmap them");
	} else {
		EXPECT_LE(rep.gone_blocks, pr[UNFOLD].calls)
			TH_LOG("fewer unfolds than contpte blocks unmapped: they were batched");
	}
#endif
}

/*
 * Leaves the first PTE of every folio of @lay at @p young and the others
 * old: MADV_COLD clears every young bit of the mapping (and flushes the
 * TLB, so that a read sets the young bit again), then the first page of
 * every folio is read.  Returns 0 or -errno.
 */
static int young_first_pages(char *p, const struct rb_layout *lay)
{
	volatile char sink;
	long f;

	if (madvise(p, lay->pages * PSZ, MADV_COLD))
		return -errno;
	for (f = 0; f < lay->folios; f++)
		sink = p[lay->first[f] * PSZ];
	(void)sink;
	return 0;
}

/*
 * Proves MGLRU's page table walk tests the young bits of a large folio in
 * one batch when mglru_young_batch is on, one PTE at a time when it is off
 * and on stock.  8 MB of the cached test file is mapped and read, MADV_COLD
 * clears its young bits, then the first page of every folio is read, so
 * that every folio has one young PTE, its first.  One aging of the cgroup
 * with force_scan (the "+" command of /sys/kernel/debug/lru_gen, can_swap
 * off so that only file VMAs are walked) walks every PTE of the mapping
 * (MM_LEAF_TOTAL, asserted to grow by at least its pages).
 *
 * The walk skips old PTEs and tests a young one.  6.12 tests it alone;
 * the batch tests the run from it to the end of its folio and counts the
 * run as young PTEs (MM_LEAF_YOUNG) when any of them was.  So 6.12 counts
 * one young PTE per folio and the batch all the pages: "off" asserts
 * young <= folios + SLACK, "on" young >= pages / 2 (folios average at
 * least 4 pages).  The calls show the same: on x86 the batch tests every
 * PTE of a run with ptep_test_and_clear_young() (the generic
 * test_and_clear_young_ptes() loop), 6.12 only the young one, so "on"
 * asserts calls >= pages / 2 and "off" calls <= folios + SLACK.  On arm64
 * 6.12 tests the young contpte block of each folio of 64 kB or more with
 * contpte_ptep_test_and_clear_young() (once: it clears the whole block),
 * the batch calls contpte_test_and_clear_young_ptes() once per folio of
 * more than one page and never with the switch off.  A CPU without a
 * hardware access flag (arm64 cortex-a72) has no page table walk in MGLRU
 * (lru_gen/enabled lacks 0x0002): the test skips there, see
 * mglru_look_around_calls.
 */
TEST_F_TIMEOUT(rb, mglru_walk_calls, 300)
{
	enum { YOUNG_PTES, YOUNG_PTE, NR };
	struct rb_probe pr[NR] = {
#ifdef __aarch64__
		[YOUNG_PTES] = { "rb_tacy_ptes",
				 "contpte_test_and_clear_young_ptes", true },
		[YOUNG_PTE] = { "rb_tacy_pte",
				"contpte_ptep_test_and_clear_young" },
#endif
#ifdef __x86_64__
		[YOUNG_PTE] = { "rb_tacy", "ptep_test_and_clear_young" },
#endif
	};
	bool on = switch_on(variant, SW_MGLRU);
	struct rb_lrugen lg0, lg1;
	unsigned long caps, total, young;
	struct rb_layout lay;
	const char *bad = "";
	char cmd[96];
	char *p;
	int fd, err;

	err = probes_add(pr, NR, !variant->sw[0], &bad);
	ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", bad, strerror(-err));
	ASSERT_EQ(0, lru_gen_caps(-1U, &caps));
	if (!(caps & LRU_GEN_MM_WALK))
		SKIP(return, "no hardware access flag on this CPU: MGLRU does not walk page tables (lru_gen/enabled %#lx)",
		     caps);
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_cached_half(fd, &lay);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	ksft_print_msg("mapped: %ld pages in %ld folios, %ld of them one page, %ld pages in folios of 64 kB or more\n",
		       lay.pages, lay.folios, lay.singles, lay.cont_pages);
	ASSERT_LE(4 * lay.folios, lay.pages)
		TH_LOG("the folios average less than 16 kB");
	ASSERT_EQ(0, young_first_pages(p, &lay));

	err = lrugen_read(&lg0);
	ASSERT_EQ(0, err) TH_LOG("%s_full: %s", LRU_GEN_DEBUG, strerror(-err));
	snprintf(cmd, sizeof(cmd), "+ %d %d %lu 0 1", lg0.id, lg0.nid,
		 lg0.max_seq);
	ASSERT_EQ(0, probes_start(pr, NR));
	err = lab_write_file(LRU_GEN_DEBUG, cmd);
	ASSERT_EQ(0, probes_stop(pr, NR));
	ASSERT_EQ(0, err) TH_LOG("'%s' > %s: %s", cmd, LRU_GEN_DEBUG,
				 strerror(-err));
	err = lrugen_read(&lg1);
	ASSERT_EQ(0, err);
	total = lg1.total - lg0.total;
	young = lg1.young - lg0.young;
	ksft_print_msg("aging walk: max_seq %lu -> %lu, PTEs %lu, young %lu\n",
		       lg0.max_seq, lg1.max_seq, total, young);
	probes_print(on ? "calls, batched" : "calls, per PTE", pr, NR);

	ASSERT_LE((unsigned long)lay.pages, total)
		TH_LOG("the aging walk did not look at every PTE of the mapping");
	if (on) {
		EXPECT_LE((unsigned long)lay.pages / 2, young)
			TH_LOG("young runs were not counted whole: the walk did not batch");
	} else {
		EXPECT_LE(young, (unsigned long)lay.folios + SLACK)
			TH_LOG("more young PTEs than were touched: the walk batched");
	}
#ifdef __x86_64__
	if (on) {
		EXPECT_LE(lay.pages / 2, pr[YOUNG_PTE].calls)
			TH_LOG("the young runs were not tested whole: the walk did not batch");
	} else {
		EXPECT_LE(pr[YOUNG_PTE].calls, lay.folios + SLACK)
			TH_LOG("old PTEs were tested: the walk batched");
	}
#endif
#ifdef __aarch64__
	if (on) {
		EXPECT_LE(lay.folios - lay.singles, pr[YOUNG_PTES].calls)
			TH_LOG("contpte_test_and_clear_young_ptes() not called for every large folio");
		EXPECT_LE(pr[YOUNG_PTES].calls, lay.folios + SLACK)
			TH_LOG("more than one batch per folio");
		EXPECT_LE(pr[YOUNG_PTE].calls, SLACK)
			TH_LOG("contpte blocks were still tested one PTE at a time");
	} else {
		EXPECT_EQ(0, pr[YOUNG_PTES].calls)
			TH_LOG("contpte_test_and_clear_young_ptes() called with the switch off");
		EXPECT_LE(lay.cont_folios, pr[YOUNG_PTE].calls)
			TH_LOG("fewer per-PTE contpte tests than young contpte blocks");
	}
#endif
	layout_free(&lay);
	close(fd);
}

/*
 * Proves MGLRU's look-around tests the young bits around a young PTE in
 * batches when mglru_young_batch is on, one PTE at a time when it is off
 * and on stock; the look-around is MGLRU's only young-bit path on a CPU
 * without a hardware access flag.  MGLRU runs without its page table walk
 * (lru_gen/enabled 0x0001) and referenced_batch is off, so the rmap walk
 * hands the look-around one PTE per step and never a batch; 8 MB of the
 * cached test file is mapped and read in full (every PTE young) and 4 MB
 * of the cgroup's file pages are reclaimed (swappiness=0).
 *
 * arm64 only.  The look-around tests the PTE it was handed with
 * contpte_ptep_test_and_clear_young() (for a contpte block) in both cases,
 * then, when it was young, every young PTE of a window of up to 64 around
 * it: 6.12 one PTE at a time (one contpte_ptep_test_and_clear_young() per
 * young block, which clears the block), the batch once per run of a
 * folio, with contpte_test_and_clear_young_ptes().  Nothing else calls
 * that function here, so "off" asserts it is never called and "on" that
 * it is.  The per-PTE calls are printed, not asserted: the handed PTEs
 * make most of them in both cases.
 *
 * x86 measures, prints and skips: its young test is the generic
 * ptep_test_and_clear_young(), which the batch calls for every PTE of a
 * run where 6.12 calls it for every young PTE; in this workload, where
 * every PTE is young, the counts are the same (2026-11-25: 1588
 * look-arounds and 3576 ptep_test_and_clear_young() calls, off and on
 * alike).  They differ only by the old PTEs of runs that start young
 * inside a window, which the order in which reclaim reaches the folios
 * decides, so no bound has a margin.  The batch's only other out-of-line
 * call is gcc's local copy of folio_pte_batch(), whose name
 * ("folio_pte_batch.constprop.0") three files of the x86 kernel share, so
 * that a kprobe cannot name it, and the look-around keeps no count of its
 * own.  mglru_walk_calls counts the same switch on x86 in MGLRU's page
 * table walk.
 */
TEST_F_TIMEOUT(rb, mglru_look_around_calls, 300)
{
	enum { LOOK, REF_ONE, YOUNG_PTES, YOUNG_PTE, NR };
	struct rb_probe pr[NR] = {
		[LOOK] = { "rb_look_around", "lru_gen_look_around" },
		[REF_ONE] = { "rb_referenced_one", "folio_referenced_one" },
#ifdef __aarch64__
		[YOUNG_PTES] = { "rb_tacy_ptes",
				 "contpte_test_and_clear_young_ptes", true },
		[YOUNG_PTE] = { "rb_tacy_pte",
				"contpte_ptep_test_and_clear_young" },
#endif
#ifdef __x86_64__
		[YOUNG_PTE] = { "rb_tacy", "ptep_test_and_clear_young" },
#endif
	};
	bool on = switch_on(variant, SW_MGLRU);
	struct rb_layout lay;
	unsigned long caps;
	const char *bad = "";
	long cur;
	char *p;
	int fd, err;

	err = probes_add(pr, NR, !variant->sw[0], &bad);
	ASSERT_EQ(0, err) TH_LOG("kprobe on %s: %s", bad, strerror(-err));
	ASSERT_EQ(0, lru_gen_caps(LRU_GEN_CORE, &caps));
	ASSERT_EQ((unsigned long)LRU_GEN_CORE, caps);
	if (variant->sw[SW_REFERENCED])
		ASSERT_EQ(0, lab_write_file(LAB_FB_DIR "/referenced_batch", "0"));
	ASSERT_EQ(0, lab_cg_move(CG, 0));
	fd = make_cached_file();
	ASSERT_LE(0, fd) TH_LOG("%s: %s", XFS_FILE, strerror(-fd));
	p = map_cached_half(fd, &lay);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	ksft_print_msg("mapped: %ld pages in %ld folios, %ld of them one page, %ld pages in folios of 64 kB or more\n",
		       lay.pages, lay.folios, lay.singles, lay.cont_pages);
	ASSERT_LE(4 * lay.folios, lay.pages)
		TH_LOG("the folios average less than 16 kB");

	ASSERT_EQ(0, probes_start(pr, NR));
	cur = reclaim_to("4M swappiness=0", 0, 1);
	ASSERT_EQ(0, probes_stop(pr, NR));
	ASSERT_LE(0, cur) TH_LOG("memory.reclaim: %s", strerror(-cur));
	probes_print(on ? "calls, batched" : "calls, per PTE", pr, NR);

	ASSERT_LE(1, pr[REF_ONE].calls) TH_LOG("reclaim tested no mapped folio");
	ASSERT_LE(pr[REF_ONE].calls, pr[LOOK].calls)
		TH_LOG("fewer look-arounds than folio_referenced_one() calls");
#ifndef __aarch64__
	layout_free(&lay);
	close(fd);
	SKIP(return, "x86: no count with a margin tells the look-around's batch from single PTEs (see the comment); mglru_walk_calls counts this switch");
#endif
	if (on) {
		EXPECT_LE(1, pr[YOUNG_PTES].calls)
			TH_LOG("no contpte_test_and_clear_young_ptes() call: the window did not batch");
	} else {
		EXPECT_EQ(0, pr[YOUNG_PTES].calls)
			TH_LOG("contpte_test_and_clear_young_ptes() called with the switch off");
	}
	layout_free(&lay);
	close(fd);
}



/*
 * The KPF_SWAPBACKED bit of the folio mapping @p, 1 or 0, or -errno (also
 * when @p is not mapped or not anonymous).
 */
static int swapbacked(int pm_fd, int kpf_fd, const void *p)
{
	uint64_t pfn, flags;
	int err;

	err = lab_pagemap_pfn(pm_fd, p, &pfn);
	if (err)
		return err;
	err = lab_kpageflags(kpf_fd, pfn, &flags);
	if (err)
		return err;
	if (!(flags & (1ULL << LAB_KPF_ANON)))
		return -EINVAL;
	return !!(flags & (1ULL << LAB_KPF_SWAPBACKED));
}

#define XREF_FOLIOS	4

/*
 * Proves a clean lazyfree large folio that reclaim cannot free, for want
 * of a reference it does not own, stays lazyfree (upstream faeb2831b517,
 * which 6.12 lacks): four 64 kB folios are filled, MADV_FREE'd, and the
 * sixth page of each is spliced into a pipe (vmsplice(): a reference on
 * the folio until the pipe lets go).  MADV_PAGEOUT cannot free them then;
 * it must reach try_to_unmap_one() (kprobe, at least once per folio), or
 * the test would prove nothing.  On the patched kernel, unmap_batch on or
 * off, each folio must still be mapped, anonymous and not swap-backed
 * (kpageflags), and once the pipe is closed a second MADV_PAGEOUT must
 * free it: every page reads zero.  The stock
 * variants assert 6.12's outcome instead, each folio swap-backed after the
 * first MADV_PAGEOUT and its data kept by the second, so the same steps
 * tell a kernel with the change from one without it.
 */
TEST_F_TIMEOUT(rb, lazyfree_extra_ref, 300)
{
	const size_t len = XREF_FOLIOS * 16 * PSZ, nr = len / PSZ;
	const bool stock = !strcmp(variant->flavour, "stock");
	struct rb_probe pr[1] = {
		{ .event = "rb_xref_unmap_one", .func = "try_to_unmap_one" },
	};
	struct iovec iov[XREF_FOLIOS];
	int pm_fd, kpf_fd, pipefd[2];
	const char *bad_fn = NULL;
	struct lab_thp thp;
	long large, bad;
	size_t f;
	char *p;
	int ret;

	p = map_64k_filled(_metadata, &thp, len);
	large = whole_64k_folios(p, nr);
	if (large != (long)XREF_FOLIOS)
		lab_thp_restore(&thp);
	ASSERT_EQ((long)XREF_FOLIOS, large)
		TH_LOG("%ld of %d 64 kB blocks are one 64 kB folio (%s)",
		       large, XREF_FOLIOS,
		       large < 0 ? strerror(-large) : "mTHP not used");
	ASSERT_EQ(0, madvise(p, len, MADV_FREE));
	pm_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pm_fd);
	kpf_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, kpf_fd);
	for (f = 0; f < XREF_FOLIOS; f++)
		ASSERT_EQ(0, swapbacked(pm_fd, kpf_fd, p + f * 16 * PSZ))
			TH_LOG("folio %zu is not lazyfree after MADV_FREE", f);

	ASSERT_EQ(0, pipe(pipefd));
	for (f = 0; f < XREF_FOLIOS; f++) {
		iov[f].iov_base = p + (f * 16 + 5) * PSZ;
		iov[f].iov_len = PSZ;
	}
	ASSERT_EQ((ssize_t)(XREF_FOLIOS * PSZ),
		  vmsplice(pipefd[1], iov, XREF_FOLIOS, 0))
		TH_LOG("vmsplice: %s", strerror(errno));

	ret = probes_add(pr, 1, stock, &bad_fn);
	ASSERT_EQ(0, ret) TH_LOG("kprobe on %s: %s", bad_fn, strerror(-ret));
	ASSERT_EQ(0, probes_start(pr, 1));
	ret = madvise(p, len, MADV_PAGEOUT);
	ASSERT_EQ(0, probes_stop(pr, 1));
	ASSERT_EQ(0, ret) TH_LOG("MADV_PAGEOUT: %s", strerror(errno));
	ksft_print_msg("MADV_PAGEOUT with the pipe: %lld try_to_unmap_one() calls\n",
		       pr[0].calls);
	ASSERT_LE((long long)XREF_FOLIOS, pr[0].calls)
		TH_LOG("%lld try_to_unmap_one() calls for %d folios: reclaim never tried them",
		       pr[0].calls, XREF_FOLIOS);
	for (f = 0; f < XREF_FOLIOS; f++) {
		ret = swapbacked(pm_fd, kpf_fd, p + f * 16 * PSZ);
		ASSERT_LE(0, ret)
			TH_LOG("folio %zu is gone with the pipe holding it: %s",
			       f, strerror(-ret));
		ksft_print_msg("folio %zu after MADV_PAGEOUT: %s\n", f,
			       ret ? "swap-backed" : "lazyfree");
		ASSERT_EQ(stock ? 1 : 0, ret)
			TH_LOG("folio %zu is %s; a clean lazyfree folio with "
			       "another reference stays lazyfree on patched, "
			       "becomes swap-backed on 6.12", f,
			       ret ? "swap-backed" : "lazyfree");
	}

	close(pipefd[0]);
	close(pipefd[1]);
	ASSERT_EQ(0, madvise(p, len, MADV_PAGEOUT))
		TH_LOG("MADV_PAGEOUT: %s", strerror(errno));
	bad = bad_page(p, 0, nr, stock ? TAG_FILE : 0);
	ASSERT_EQ(-1, bad)
		TH_LOG("page %ld does not read %s", bad,
		       stock ? "its data (6.12 keeps a swap-backed folio)" :
		       "zero (a freed lazyfree folio)");
	EXPECT_EQ(0, lab_thp_restore(&thp));
	close(kpf_fd);
	close(pm_fd);
	munmap(p, len);
}

TEST_HARNESS_MAIN
