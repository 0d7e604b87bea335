// SPDX-License-Identifier: GPL-2.0
/*
 * mprotect() of a large folio must not mark soft-clean pages soft-dirty.
 *
 * Since v6.17, mprotect() changes the PTEs of a large folio as one batch,
 * and the generic modify_prot_start_ptes() collects the batch's dirty bits
 * with pte_mkdirty(), which on x86 also sets the soft-dirty bit.  After
 * "echo 4 > /proc/PID/clear_refs", mprotect(PROT_READ) and back then makes
 * every page of a dirty folio soft-dirty although none was written.
 *
 * Needs x86_64 (4 KB pages), CONFIG_MEM_SOFT_DIRTY=y and 64 KB anonymous
 * mTHP, for example:
 *
 *   echo always > /sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled
 *
 * Build: gcc -O2 -Wall -Wextra -o soft-dirty-mprotect soft-dirty-mprotect.c
 *
 * Exit status: 0 PASS, 1 FAIL (the bug), 2 SKIP (the test could not run).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FOLIO_SIZE	(64UL << 10)
#define NR_FOLIOS	16UL
#define REGION_SIZE	(FOLIO_SIZE * NR_FOLIOS)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_PRESENT	(1ULL << 63)

#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define MTHP_DIR	THP_DIR "/hugepages-64kB"

static unsigned long page_size;
static int pagemap_fd = -1;

static int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 2;
}

static int read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Whether 64 KB folios may back an anonymous VMA with MADV_HUGEPAGE. */
static int mthp_enabled(void)
{
	char buf[256];

	if (read_file(MTHP_DIR "/enabled", buf, sizeof(buf)))
		return 0;
	if (strstr(buf, "[always]") || strstr(buf, "[madvise]"))
		return 1;
	if (!strstr(buf, "[inherit]"))
		return 0;
	if (read_file(THP_DIR "/enabled", buf, sizeof(buf)))
		return 0;
	return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

static long anon_fault_alloc(void)
{
	char buf[64];

	if (read_file(MTHP_DIR "/stats/anon_fault_alloc", buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * Maps @size bytes read-write at a FOLIO_SIZE-aligned address, between
 * PROT_NONE guards so that mprotect() neither splits nor merges the VMA.
 */
static char *map_region(size_t size, int advice)
{
	size_t resv_size = size + 3 * FOLIO_SIZE;
	char *resv, *p;

	resv = mmap(NULL, resv_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (resv == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)resv + 2 * FOLIO_SIZE - 1) &
		     ~(FOLIO_SIZE - 1));
	if (mmap(p, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return NULL;
	if (madvise(p, size, advice))
		return NULL;
	return p;
}

static void touch(char *p, size_t size)
{
	for (size_t off = 0; off < size; off += page_size)
		p[off] = 1;
}

/* Counts the pages of [p, p + size) that pagemap reports soft-dirty. */
static long count_soft_dirty(char *p, size_t size, long *not_present)
{
	long dirty = 0;

	*not_present = 0;
	for (size_t off = 0; off < size; off += page_size) {
		uint64_t ent;
		off_t pos = (off_t)((uintptr_t)(p + off) / page_size) * 8;

		if (pread(pagemap_fd, &ent, sizeof(ent), pos) != sizeof(ent))
			return -1;
		if (!(ent & PM_PRESENT))
			(*not_present)++;
		if (ent & PM_SOFT_DIRTY)
			dirty++;
	}
	return dirty;
}

static int clear_soft_dirty(void)
{
	int fd, ret = 0;

	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, "4", 1) != 1)
		ret = -1;
	close(fd);
	return ret;
}

static int mprotect_ro_rw(char *p, size_t size)
{
	if (mprotect(p, size, PROT_READ))
		return -1;
	return mprotect(p, size, PROT_READ | PROT_WRITE);
}

int main(void)
{
	long before, after, dirty, ctrl_dirty, absent, ctrl_absent;
	size_t npages;
	char *thp, *ctrl;

	page_size = sysconf(_SC_PAGESIZE);
	if (page_size != 4096)
		return skip("needs 4 KB pages");
	npages = REGION_SIZE / page_size;
	if (!mthp_enabled())
		return skip("64 KB mTHP is off: echo always > " MTHP_DIR "/enabled");
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	if (pagemap_fd < 0)
		return skip("cannot open /proc/self/pagemap");

	thp = map_region(REGION_SIZE, MADV_HUGEPAGE);
	ctrl = map_region(REGION_SIZE, MADV_NOHUGEPAGE);
	if (!thp || !ctrl)
		return skip("mmap() or madvise() failed");

	before = anon_fault_alloc();
	touch(thp, REGION_SIZE);
	after = anon_fault_alloc();
	if (before < 0 || after < 0)
		return skip("no " MTHP_DIR "/stats/anon_fault_alloc");
	if (after - before < (long)NR_FOLIOS)
		return skip("the region did not get 64 KB folios");
	touch(ctrl, REGION_SIZE);

	if (clear_soft_dirty())
		return skip("writing 4 to /proc/self/clear_refs failed");
	if (count_soft_dirty(thp, REGION_SIZE, &absent) != 0 || absent ||
	    count_soft_dirty(ctrl, REGION_SIZE, &ctrl_absent) != 0 ||
	    ctrl_absent)
		return skip("pages not present or still soft-dirty after clear_refs");

	if (mprotect_ro_rw(thp, REGION_SIZE) || mprotect_ro_rw(ctrl, REGION_SIZE))
		return skip("mprotect() failed");

	dirty = count_soft_dirty(thp, REGION_SIZE, &absent);
	ctrl_dirty = count_soft_dirty(ctrl, REGION_SIZE, &ctrl_absent);
	if (dirty < 0 || ctrl_dirty < 0)
		return skip("reading /proc/self/pagemap failed");
	if (ctrl_dirty)
		return skip("small folios came back soft-dirty too: inconclusive");

	/* A write after clear_refs must be reported, or nothing is tracked. */
	ctrl[0] = 2;
	if (count_soft_dirty(ctrl, page_size, &ctrl_absent) != 1)
		return skip("soft-dirty tracking does not work (CONFIG_MEM_SOFT_DIRTY?)");

	if (dirty) {
		printf("FAIL: %ld of %zu pages of 64 KB folios are soft-dirty after mprotect(), none was written since clear_refs\n",
		       dirty, npages);
		return 1;
	}
	printf("PASS: no page of %lu 64 KB folios became soft-dirty\n",
	       NR_FOLIOS);
	return 0;
}
