// SPDX-License-Identifier: GPL-2.0
/*
 * stamp - the data-integrity check of 'lab harden'.
 *
 *   stamp SECONDS [MB] [FILE]        (default 32 MB, /mnt/xfs/harden-stamp)
 *
 * One writer thread per CPU owns a slice of a private anonymous region and
 * of a shared mapping of FILE (half of MB each).  Each pass, a writer first
 * checks that every page of its slice still holds what it last wrote, then
 * writes a new stamp (pass number and page index, at both ends of the page).
 * Between passes it pushes part of its slice out with MADV_PAGEOUT and
 * zaps a 2 MB-aligned part of its anonymous slice with MADV_DONTNEED (the
 * next check then expects zeroes), so reclaim, swap, writeback and page
 * table freeing all run under the writers while the switches flip.  After
 * the last pass the file is unmapped, synced and read back with pread(2).
 *
 * Prints "stamp: P passes, C page checks, M mismatches" and exits 1 on any
 * mismatch (the first few are described), 2 on a setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif

#define PMD_SIZE	(2UL << 20)

struct writer {
	pthread_t thread;
	unsigned int id;
	char *anon, *file;		/* this writer's slices */
	unsigned long pages;		/* pages per slice */
	uint64_t *expect_anon;		/* last stamp per anon page, 0 if zapped */
	uint64_t passes, checks, mismatches;
};

static long page_size;
static double deadline;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t stamp_of(unsigned int id, uint64_t pass, unsigned long page)
{
	return (uint64_t)id << 56 | pass << 24 | page;
}

static void put(char *page, uint64_t v)
{
	((volatile uint64_t *)page)[0] = v;
	((volatile uint64_t *)(page + page_size))[-1] = v;
}

static int check(struct writer *w, const char *what, unsigned long i,
		 const char *page, uint64_t want)
{
	uint64_t head = ((volatile const uint64_t *)page)[0];
	uint64_t tail = ((volatile const uint64_t *)(page + page_size))[-1];

	w->checks++;
	if (head == want && tail == want)
		return 0;
	if (w->mismatches++ < 4)
		printf("stamp: MISMATCH writer %u %s page %lu: want %#llx, have %#llx/%#llx\n",
		       w->id, what, i, (unsigned long long)want,
		       (unsigned long long)head, (unsigned long long)tail);
	return 1;
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	unsigned long slice = w->pages * page_size, i, off;
	uint64_t pass;

	for (pass = 1; now() < deadline; pass++) {
		for (i = 0; i < w->pages; i++) {
			char *a = w->anon + i * page_size;
			char *f = w->file + i * page_size;

			check(w, "anon", i, a, w->expect_anon[i]);
			if (pass > 1)
				check(w, "file", i, f, stamp_of(w->id, pass - 1, i));
			w->expect_anon[i] = stamp_of(w->id, pass, i);
			put(a, w->expect_anon[i]);
			put(f, stamp_of(w->id, pass, i));
		}
		w->passes = pass;
		/* a quarter of each slice to reclaim, rotating */
		off = (pass % 4) * (slice / 4);
		madvise(w->anon + off, slice / 4, MADV_PAGEOUT);
		madvise(w->file + off, slice / 4, MADV_PAGEOUT);
		/* every third pass, zap one 2 MB-aligned block of anon */
		if (pass % 3 == 0 && slice >= 2 * PMD_SIZE) {
			unsigned long blocks = slice / PMD_SIZE - 1;
			unsigned long b = (pass / 3) % blocks;
			char *start = (char *)(((uintptr_t)w->anon + PMD_SIZE - 1) &
					       ~(PMD_SIZE - 1)) + b * PMD_SIZE;

			if (!madvise(start, PMD_SIZE, MADV_DONTNEED))
				memset(w->expect_anon + (start - w->anon) / page_size, 0,
				       PMD_SIZE / page_size * sizeof(uint64_t));
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	unsigned long mb = argc > 2 ? strtoul(argv[2], NULL, 0) : 32;
	const char *path = argc > 3 ? argv[3] : "/mnt/xfs/harden-stamp";
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long half, pages, i, n;
	uint64_t passes = 0, checks = 0, bad = 0, v;
	struct writer *w;
	char *anon, *file;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	if (ncpu < 1)
		ncpu = 1;
	half = (mb << 20) / 2;
	pages = half / page_size / ncpu;
	if (!pages) {
		fprintf(stderr, "stamp: %lu MB is too small\n", mb);
		return 2;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, half)) {
		fprintf(stderr, "stamp: %s: %s\n", path, strerror(errno));
		return 2;
	}
	anon = mmap(NULL, half, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	file = mmap(NULL, half, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	w = calloc(ncpu, sizeof(*w));
	if (anon == MAP_FAILED || file == MAP_FAILED || !w) {
		fprintf(stderr, "stamp: mmap: %s\n", strerror(errno));
		return 2;
	}
	deadline = now() + seconds;
	for (n = 0; n < (unsigned long)ncpu; n++) {
		w[n].id = n;
		w[n].pages = pages;
		w[n].anon = anon + n * pages * page_size;
		w[n].file = file + n * pages * page_size;
		w[n].expect_anon = calloc(pages, sizeof(uint64_t));
		if (!w[n].expect_anon ||
		    pthread_create(&w[n].thread, NULL, writer_fn, &w[n])) {
			fprintf(stderr, "stamp: cannot start writer %lu\n", n);
			return 2;
		}
	}
	for (n = 0; n < (unsigned long)ncpu; n++) {
		pthread_join(w[n].thread, NULL);
		passes += w[n].passes;
		checks += w[n].checks;
		bad += w[n].mismatches;
	}
	/* the file's last stamps must have reached the page cache or disk */
	if (munmap(file, half) || fsync(fd)) {
		fprintf(stderr, "stamp: munmap/fsync: %s\n", strerror(errno));
		return 2;
	}
	for (n = 0; n < (unsigned long)ncpu && w[n].passes; n++) {
		for (i = 0; i < pages; i++) {
			off_t off = (n * pages + i) * page_size;
			uint64_t want = stamp_of(n, w[n].passes, i);

			checks++;
			if (pread(fd, &v, sizeof(v), off) != sizeof(v) || v != want) {
				if (bad++ < 4)
					printf("stamp: MISMATCH file read-back writer %lu page %lu: want %#llx, have %#llx\n",
					       n, i, (unsigned long long)want,
					       (unsigned long long)v);
			}
		}
	}
	close(fd);
	unlink(path);
	printf("stamp: %llu passes, %llu page checks, %llu mismatches\n",
	       (unsigned long long)passes, (unsigned long long)checks,
	       (unsigned long long)bad);
	return bad ? 1 : 0;
}
