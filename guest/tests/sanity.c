// SPDX-License-Identifier: GPL-2.0
/*
 * sanity.c - checks that the guest offers what the lab's benchmarks and
 * feature tests rely on: the right kernel, mTHP, large folios in the XFS
 * page cache, memcg proactive reclaim, and the stock cost of empty PTE
 * pages that pt_reclaim is meant to remove.
 *
 * Needs root, a 4 KiB base page size, cgroup2 on /sys/fs/cgroup and XFS on
 * /mnt/xfs.  The lab's guest provides both (guest/init mounts cgroup2 and
 * its labxfs disk), so the XFS tests fail without it rather than skip.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"

#define THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define MTHP_64K	THP_DIR "/hugepages-64kB"
#define XFS_DIR		"/mnt/xfs"
#define PT_RECLAIM	"/sys/kernel/mm/foliobatch/pt_reclaim"
#define CG_NAME		"lab-sanity"
#define MTHP_MAX_SIZES	16

/* Proves the guest booted a 6.12 kernel, i.e. the tree the lab built. */
TEST(boot_release)
{
	struct utsname u;

	ASSERT_EQ(0, uname(&u));
	ksft_print_msg("kernel release %s (%s)\n", u.release, u.machine);
	ASSERT_EQ(0, strncmp(u.release, "6.12.", 5))
		TH_LOG("release %s is not 6.12.x", u.release);
}

FIXTURE(mthp) {
	struct lab_knob enabled[MTHP_MAX_SIZES];
	int nr;
};

/* Saves hugepages-<size>kB/enabled of every mTHP size that has one. */
FIXTURE_SETUP(mthp)
{
	char path[512];
	struct dirent *de;
	DIR *dir;

	self->nr = 0;
	dir = opendir(THP_DIR);
	ASSERT_NE(NULL, dir) TH_LOG("%s: %s", THP_DIR, strerror(errno));
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), THP_DIR "/%s/enabled",
			 de->d_name);
		/* Sizes only the page cache can use have no 'enabled'. */
		if (!lab_path_exists(path))
			continue;
		ASSERT_LT(self->nr, MTHP_MAX_SIZES);
		ASSERT_EQ(0, lab_knob_save(&self->enabled[self->nr], path))
			TH_LOG("cannot save %s", path);
		self->nr++;
	}
	closedir(dir);
}

FIXTURE_TEARDOWN(mthp)
{
	int i;

	for (i = 0; i < self->nr; i++)
		EXPECT_EQ(0, lab_knob_restore(&self->enabled[i]))
			TH_LOG("cannot restore %s to %s",
			       self->enabled[i].path, self->enabled[i].saved);
}

/*
 * Proves mTHP sysfs exists for 16 kB, 64 kB and 2 MB, and that with only
 * 64 kB set to "always" an anonymous fault allocates 64 kB folios (the
 * per-size anon_fault_alloc counter grows).  The top-level 'enabled' is left
 * alone: in 6.12 thp_vma_allowable_orders() takes huge_anon_orders_always
 * unconditionally and only "inherit" sizes depend on the top-level mode.
 */
TEST_F(mthp, mthp_knobs)
{
	const size_t len = LAB_SZ_2M, align = 64 * LAB_SZ_1K;
	unsigned long before, after;
	const char *val;
	char *map, *p;
	size_t off;
	int i;

	ASSERT_TRUE(lab_path_exists(THP_DIR "/hugepages-16kB"));
	ASSERT_TRUE(lab_path_exists(MTHP_64K));
	ASSERT_TRUE(lab_path_exists(THP_DIR "/hugepages-2048kB"));

	for (i = 0; i < self->nr; i++) {
		val = strcmp(self->enabled[i].path, MTHP_64K "/enabled") ?
		      "never" : "always";
		ASSERT_EQ(0, lab_write_file(self->enabled[i].path, val))
			TH_LOG("cannot write %s to %s", val,
			       self->enabled[i].path);
	}

	ASSERT_EQ(0, lab_read_ulong(MTHP_64K "/stats/anon_fault_alloc",
				    &before));
	map = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p = (char *)(((uintptr_t)map + align - 1) & ~(uintptr_t)(align - 1));
	for (off = 0; off < len; off += getpagesize())
		p[off] = 1;
	ASSERT_EQ(0, lab_read_ulong(MTHP_64K "/stats/anon_fault_alloc",
				    &after));
	munmap(map, len + align);

	ksft_print_msg("64kB anon_fault_alloc %lu -> %lu\n", before, after);
	ASSERT_GT(after, before)
		TH_LOG("touching 2 MB allocated no 64 kB folio");
}

/*
 * Proves that XFS builds large folios in the page cache: after a cold
 * mmap read of a 16 MB file some of its pages are compound tail pages in
 * /proc/kpageflags.  No WILLNEED: in 6.12 that goes through
 * force_page_cache_ra(), which reads ahead with order-0 folios.
 */
TEST(xfs_large_folios)
{
	const size_t len = 16 * LAB_SZ_1M;
	unsigned long npages, tails = 0, large = 0, absent = 0, sum = 0;
	int fd, pm_fd, kpf_fd, ret;
	uint64_t pfn, flags;
	char *buf, *map;
	size_t off, i;

	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_LE(0, ret) TH_LOG("/proc/mounts: %s", strerror(-ret));
	ASSERT_EQ(1, ret)
		TH_LOG("%s is not an XFS mount point: the lab's guest mounts its labxfs disk there (guest/init)",
		       XFS_DIR);

	/* Unlinked at once, so nothing is left behind on failure. */
	fd = open(XFS_DIR "/lab-sanity-folios", O_RDWR | O_CREAT | O_TRUNC,
		  0600);
	ASSERT_LE(0, fd) TH_LOG("create in %s: %s", XFS_DIR, strerror(errno));
	ASSERT_EQ(0, unlink(XFS_DIR "/lab-sanity-folios"));
	buf = malloc(LAB_SZ_1M);
	ASSERT_NE(NULL, buf);
	memset(buf, 1, LAB_SZ_1M);
	for (off = 0; off < len; off += LAB_SZ_1M)
		ASSERT_EQ((ssize_t)LAB_SZ_1M, write(fd, buf, LAB_SZ_1M));
	free(buf);
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, lab_write_file("/proc/sys/vm/drop_caches", "3"));

	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, posix_madvise(map, len, POSIX_MADV_SEQUENTIAL));
	npages = len / getpagesize();
	for (i = 0; i < npages; i++)
		sum += ((volatile char *)map)[i * getpagesize()];
	ASSERT_EQ(npages, sum) TH_LOG("file data read back wrong");

	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, pm_fd);
	kpf_fd = open("/proc/kpageflags", O_RDONLY);
	ASSERT_LE(0, kpf_fd) TH_LOG("/proc/kpageflags: %s", strerror(errno));
	for (i = 0; i < npages; i++) {
		ret = lab_pagemap_pfn(pm_fd, map + i * getpagesize(), &pfn);
		if (ret == -ENOENT) {
			absent++;
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("pagemap: %s", strerror(-ret));
		ASSERT_EQ(0, lab_kpageflags(kpf_fd, pfn, &flags));
		if (flags & (1ULL << LAB_KPF_COMPOUND_TAIL))
			tails++;
		if (flags & ((1ULL << LAB_KPF_COMPOUND_HEAD) |
			     (1ULL << LAB_KPF_COMPOUND_TAIL)))
			large++;
	}
	close(kpf_fd);
	close(pm_fd);
	munmap(map, len);
	close(fd);

	ksft_print_msg("xfs: %lu of %lu pages in large folios\n",
		       large, npages);
	ksft_print_msg("xfs: %lu compound tails, %lu pages not mapped\n",
		       tails, absent);
	ASSERT_LT(0UL, tails) TH_LOG("no large folio in the XFS page cache");
}

FIXTURE(memcg) {
	pid_t child;
	bool made;
};

/* What the child reports: step 0 is success, else where it failed. */
struct memcg_report {
	int step;
	int err;
};

FIXTURE_SETUP(memcg)
{
	int ret;

	self->child = -1;
	self->made = false;
	ret = lab_is_mounted(XFS_DIR, "xfs");
	ASSERT_EQ(1, ret)
		TH_LOG("%s is not an XFS mount point: the lab's guest mounts its labxfs disk there (guest/init)",
		       XFS_DIR);
	ASSERT_EQ(1, lab_is_mounted(LAB_CGROUP_ROOT, "cgroup2"))
		TH_LOG("no cgroup2 on %s: the guest init must mount it",
		       LAB_CGROUP_ROOT);
	ret = lab_cg_enable_memory();
	ASSERT_EQ(0, ret) TH_LOG("+memory: %s", strerror(-ret));
	ret = lab_cg_create(CG_NAME);
	ASSERT_EQ(0, ret) TH_LOG("mkdir %s: %s", CG_NAME, strerror(-ret));
	self->made = true;
}

FIXTURE_TEARDOWN(memcg)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	if (self->made)
		EXPECT_EQ(0, lab_cg_remove(CG_NAME));
}

/*
 * Child: join the cgroup, fill 64 MB of page cache from a file on XFS, map
 * and read it all, report, and wait to be killed.  Must not use ASSERT.
 */
static void __attribute__((noreturn)) memcg_child(int wfd, size_t len)
{
	struct memcg_report rep = { 0, 0 };
	const char *path = XFS_DIR "/lab-sanity-memcg";
	unsigned long sum = 0;
	char *buf = NULL, *map;
	size_t off;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	rep.err = -lab_cg_move(CG_NAME, 0);
	if (rep.err) {
		rep.step = 1;
		goto out;
	}
	rep.step = 2;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || unlink(path))
		goto out_errno;
	rep.step = 3;
	buf = malloc(LAB_SZ_1M);
	if (!buf)
		goto out_errno;
	memset(buf, 1, LAB_SZ_1M);
	for (off = 0; off < len; off += LAB_SZ_1M)
		if (write(fd, buf, LAB_SZ_1M) != (ssize_t)LAB_SZ_1M)
			goto out_errno;
	rep.step = 4;
	/* Clean pages, so reclaim does not depend on writeback. */
	if (fsync(fd))
		goto out_errno;
	rep.step = 5;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out_errno;
	for (off = 0; off < len; off += getpagesize())
		sum += ((volatile char *)map)[off];
	rep.step = sum == len / getpagesize() ? 0 : 6;
	goto out;
out_errno:
	rep.err = errno;
out:
	if (write(wfd, &rep, sizeof(rep)) != sizeof(rep) || rep.step)
		_exit(1);
	for (;;)
		pause();
}

/*
 * Proves memcg proactive reclaim works on page cache: 64 MB of mapped file
 * pages charged to a cgroup, "32M" written to memory.reclaim, and
 * memory.current drops by at least 16 MB.
 */
TEST_F_TIMEOUT(memcg, memcg_reclaim, 120)
{
	const size_t len = 64 * LAB_SZ_1M;
	struct memcg_report rep;
	unsigned long before, after;
	int pfd[2], ret;

	ASSERT_EQ(0, pipe(pfd));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(pfd[0]);
		memcg_child(pfd[1], len);
	}
	close(pfd[1]);
	ASSERT_EQ((ssize_t)sizeof(rep), read(pfd[0], &rep, sizeof(rep)))
		TH_LOG("child died before reporting");
	close(pfd[0]);
	ASSERT_EQ(0, rep.step)
		TH_LOG("child failed at step %d: %s", rep.step,
		       strerror(rep.err));

	ASSERT_EQ(0, lab_cg_memory_current(CG_NAME, &before));
	ASSERT_LE(48 * LAB_SZ_1M, before)
		TH_LOG("only %lu bytes charged: page cache not in the cgroup",
		       before);
	ret = lab_cg_reclaim(CG_NAME, "32M");
	ASSERT_TRUE(!ret || ret == -EAGAIN)
		TH_LOG("memory.reclaim: %s", strerror(-ret));
	ASSERT_EQ(0, lab_cg_memory_current(CG_NAME, &after));
	ksft_print_msg("memory.current %lu kB -> %lu kB (reclaim %s)\n",
		       before / 1024, after / 1024,
		       ret ? "stopped early" : "complete");
	ASSERT_LE(after + 16 * LAB_SZ_1M, before)
		TH_LOG("memory.current fell by less than 16 MB");
}

FIXTURE(vmpte) {
	struct lab_knob pt_reclaim;
};

FIXTURE_SETUP(vmpte)
{
	self->pt_reclaim.valid = false;
	if (lab_path_exists(PT_RECLAIM))
		ASSERT_EQ(0, lab_knob_save(&self->pt_reclaim, PT_RECLAIM));
}

FIXTURE_TEARDOWN(vmpte)
{
	EXPECT_EQ(0, lab_knob_restore(&self->pt_reclaim));
}

/*
 * Proves the stock cost pt_reclaim targets: MADV_DONTNEED of a populated
 * 2 MB region leaves its (now empty) 4 kB PTE page allocated, so 1024 such
 * regions add at least 4 MB to VmPTE.  pt_reclaim is turned off if present.
 */
TEST_F_TIMEOUT(vmpte, vmpte_probe, 300)
{
	const size_t rounds = 1024, len = rounds * LAB_SZ_2M;
	long before, after;
	char *map, *p;
	size_t i;

	if (self->pt_reclaim.valid)
		ASSERT_EQ(0, lab_write_file(PT_RECLAIM, "0"));

	map = mmap(NULL, len + LAB_SZ_2M, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p = (char *)(((uintptr_t)map + LAB_SZ_2M - 1) &
		     ~(uintptr_t)(LAB_SZ_2M - 1));
	ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));

	before = lab_status_kb("VmPTE");
	ASSERT_LE(0, before);
	for (i = 0; i < rounds; i++) {
		memset(p + i * LAB_SZ_2M, 1, LAB_SZ_2M);
		ASSERT_EQ(0, madvise(p + i * LAB_SZ_2M, LAB_SZ_2M,
				     MADV_DONTNEED));
	}
	after = lab_status_kb("VmPTE");
	ASSERT_LE(0, after);
	munmap(map, len + LAB_SZ_2M);

	ksft_print_msg("VmPTE before %ld kB after %ld kB\n", before, after);
	ASSERT_LE((long)rounds * 4 - 64, after - before)
		TH_LOG("DONTNEED left fewer empty PTE pages than expected");
}

TEST_HARNESS_MAIN
