// SPDX-License-Identifier: GPL-2.0
/*
 * filereclaim - the seed 000/003 workload, scaled: map SIZE_MB of clean
 * file folios on XFS from a memory cgroup and reclaim PERCENT of them with
 * memory.reclaim.
 *
 *   filereclaim [SIZE_MB] [PERCENT] [pte2m]     (default 256 MB, 80 %)
 *
 * The file is written, synced and dropped from the page cache, read back
 * with read(2) so that XFS readahead fills the page cache with large
 * folios, then mapped shared read-only (with default advice: a
 * MADV_SEQUENTIAL or MADV_RANDOM mapping has no recency, and reclaim would
 * skip its young bits altogether) and read page by page, so its folios are
 * clean, large and mapped with young PTEs when reclaim starts.
 *
 * With "pte2m" the page cache is filled by faults on a 2 MB-aligned
 * MADV_HUGEPAGE mapping instead (the fault reads ahead whole PMD-sized
 * folios), which is then unmapped; the measured mapping is 2 MB-aligned
 * too, and MADV_NOHUGEPAGE, so that every 2 MB folio is mapped by the 512
 * PTEs of one page table and a young or unmap
 * batch covers a whole page table.  METRIC file_thp_kb (FileHugePages)
 * and file_pmd_mapped_kb (FilePmdMapped) show the shape.
 * Only the memory.reclaim write is timed (METRIC time_ns).
 *
 * The file is bench-filereclaim in the XFS mounted on $LAB_XFS (/mnt/xfs,
 * the lab's disk, when unset; run-here.sh sets it on other machines).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

#define CG	"bench-filereclaim"
#define FILE_NAME "bench-filereclaim"

static char file_path[4096];

static int make_file(size_t size)
{
	static char buf[1 << 20];
	int fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -1;
	memset(buf, 0x5a, sizeof(buf));
	for (size_t done = 0; done < size; done += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			return -1;
	if (fsync(fd))
		return -1;
	return fd;
}

static int read_all(int fd, size_t size)
{
	static char buf[1 << 20];

	if (lseek(fd, 0, SEEK_SET))
		return -1;
	for (size_t done = 0; done < size; done += sizeof(buf))
		if (read(fd, buf, sizeof(buf)) != sizeof(buf))
			return -1;
	return 0;
}

/*
 * Maps @size bytes of @fd shared and read-only at a 2 MB-aligned address,
 * so that each 2 MB folio of the file lies in one page table.  Returns
 * MAP_FAILED on failure.
 */
static char *map_2m_aligned(int fd, size_t size)
{
	size_t total = size + LAB_SZ_2M;
	char *res, *p;

	res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)res + LAB_SZ_2M - 1) & ~(LAB_SZ_2M - 1));
	if (mmap(p, size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != p) {
		munmap(res, total);
		return MAP_FAILED;
	}
	/* the rest of the reservation, before and after */
	if (p > res)
		munmap(res, p - res);
	if (res + total > p + size)
		munmap(p + size, res + total - (p + size));
	return p;
}

/*
 * Fills the page cache with PMD-sized folios of the file: faults on a
 * 2 MB-aligned MADV_HUGEPAGE mapping read ahead whole 2 MB folios.
 */
static int fault_in_2m(int fd, size_t size)
{
	volatile char sum = 0;
	char *p = map_2m_aligned(fd, size);

	if (p == MAP_FAILED)
		return -1;
	if (madvise(p, size, MADV_HUGEPAGE)) {
		munmap(p, size);
		return -1;
	}
	for (size_t off = 0; off < size; off += 4096)
		sum += p[off];
	munmap(p, size);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = (argc > 1 ? atol(argv[1]) : 256) << 20;
	long percent = argc > 2 ? atol(argv[2]) : 80;
	int pte2m = argc > 3 && !strcmp(argv[3], "pte2m");
	unsigned long cur0, cur1;
	long rss0, rss1, thp_kb, pmd_kb;
	long long t0, t1;
	char amount[32];
	volatile char sum = 0;
	const char *xfs = getenv("LAB_XFS");
	char *map;
	int fd, err;

	if (argc > 4 || (argc > 3 && !pte2m)) {
		fprintf(stderr, "usage: filereclaim [SIZE_MB] [PERCENT] [pte2m]\n");
		return 1;
	}
	if (!xfs)
		xfs = "/mnt/xfs";
	if (!lab_is_mounted(xfs, "xfs")) {
		fprintf(stderr, "filereclaim: %s is not an XFS mount point\n", xfs);
		return 1;
	}
	snprintf(file_path, sizeof(file_path), "%s/" FILE_NAME, xfs);
	if (lab_cg_enable_memory() || lab_cg_create(CG) || lab_cg_move(CG, 0)) {
		fprintf(stderr, "filereclaim: cannot set up cgroup %s\n", CG);
		return 1;
	}
	fd = make_file(size);
	if (fd < 0) {
		fprintf(stderr, "filereclaim: write %s: %s\n", file_path, strerror(errno));
		return 1;
	}
	lab_write_file("/proc/sys/vm/drop_caches", "3");
	if (pte2m ? fault_in_2m(fd, size) : read_all(fd, size)) {
		fprintf(stderr, "filereclaim: read %s: %s\n", file_path, strerror(errno));
		return 1;
	}
	map = pte2m ? map_2m_aligned(fd, size) :
		mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (pte2m && madvise(map, size, MADV_NOHUGEPAGE)) {
		perror("madvise");
		return 1;
	}
	for (size_t off = 0; off < size; off += 4096)
		sum += map[off];

	lab_cg_memory_current(CG, &cur0);
	rss0 = lab_status_kb("RssFile");
	thp_kb = lab_meminfo_kb("FileHugePages");
	pmd_kb = lab_meminfo_kb("FilePmdMapped");
	snprintf(amount, sizeof(amount), "%zuM", (size >> 20) * percent / 100);
	t0 = lab_now_ns();
	err = lab_cg_reclaim(CG, amount);
	t1 = lab_now_ns();
	lab_cg_memory_current(CG, &cur1);
	rss1 = lab_status_kb("RssFile");
	if (err && err != -EAGAIN)
		fprintf(stderr, "filereclaim: memory.reclaim: %s\n", strerror(-err));

	printf("METRIC time_ns %lld\n", t1 - t0);
	printf("METRIC size_mb %zu\n", size >> 20);
	printf("METRIC reclaim_complete %d\n", err == 0);
	printf("METRIC charged_before_kb %lu\n", cur0 >> 10);
	printf("METRIC charged_after_kb %lu\n", cur1 >> 10);
	printf("METRIC rssfile_before_kb %ld\n", rss0);
	printf("METRIC rssfile_after_kb %ld\n", rss1);
	printf("METRIC file_thp_kb %ld\n", thp_kb);
	printf("METRIC file_pmd_mapped_kb %ld\n", pmd_kb);

	munmap(map, size);
	close(fd);
	unlink(file_path);
	lab_write_file(LAB_CGROUP_ROOT "/cgroup.procs", "0");
	lab_cg_remove(CG);
	return err && err != -EAGAIN;
}
