// SPDX-License-Identifier: GPL-2.0
/*
 * anonpageout - swap out anonymous memory with MADV_PAGEOUT, the measure
 * of the anonymous swap-out batching (anon_unmap_batch).
 *
 *   anonpageout MB ROUNDS [zero]
 *
 * Each round maps MB of private anonymous memory (64 kB-aligned; the
 * folio size is what the lab's setup allows: lab_thp_only), fills every
 * 4 kB page with one 64-bit value repeated, its own (so that zram stores
 * it as a same-filled page, without compressing it, and the swap-out is
 * the kernel's unmap and swap bookkeeping rather than compression), pages
 * the whole mapping out with one madvise(MADV_PAGEOUT), reads every page
 * back (swap-in) checking its value, and unmaps it.  Only the madvise()
 * calls are timed.  Prints METRIC time_ns (the madvise() calls), rounds,
 * swapped_pages (pages pagemap showed as swap entries after the madvise,
 * summed) and lost_pages (pages read back wrong, summed); exits 2 when a
 * page came back wrong, 1 on another failure.
 *
 * With "zero" every page holds zeros, as in upstream's benchmark for the
 * series (memset(0) of the mapping, then MADV_PAGEOUT): 6.12 records a
 * zero-filled folio in the swap device's zero bitmap and writes nothing
 * (vmstat swpout_zero, not pswpout), so the time is the unmap and the
 * swap bookkeeping alone.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lab.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#define PSZ	4096UL
#define FOLIO	(64 * LAB_SZ_1K)

static int zero;

/* The value every word of page @pg holds in round @round. */
static uint64_t value(long round, size_t pg)
{
	return zero ? 0 : (uint64_t)(round + 1) << 40 | pg;
}

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 64;
	long rounds = argc > 2 ? atol(argv[2]) : 3;
	size_t len = mb * LAB_SZ_1M, nr = len / PSZ, pg, w;
	long long t0, timed = 0, swapped = 0, lost = 0;
	uint64_t *pm, *q;
	int pm_fd;
	char *p;

	zero = argc > 3 && !strcmp(argv[3], "zero");
	if (mb <= 0 || rounds <= 0 || (argc > 3 && !zero)) {
		fprintf(stderr, "usage: anonpageout MB ROUNDS [zero]\n");
		return 1;
	}
	pm = malloc(nr * sizeof(*pm));
	pm_fd = open("/proc/self/pagemap", O_RDONLY);
	if (!pm || pm_fd < 0) {
		perror("pagemap");
		return 1;
	}
	for (long r = 0; r < rounds; r++) {
		p = lab_map_aligned(len, FOLIO, 0, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS);
		if (!p) {
			perror("mmap");
			return 1;
		}
		for (pg = 0; pg < nr; pg++) {
			q = (uint64_t *)(p + pg * PSZ);
			for (w = 0; w < PSZ / 8; w++)
				q[w] = value(r, pg);
		}
		t0 = lab_now_ns();
		if (madvise(p, len, MADV_PAGEOUT)) {
			perror("madvise(MADV_PAGEOUT)");
			return 1;
		}
		timed += lab_now_ns() - t0;
		if (lab_pagemap_read(pm_fd, p, nr, pm)) {
			perror("pagemap");
			return 1;
		}
		for (pg = 0; pg < nr; pg++) {
			swapped += !!(pm[pg] & LAB_PM_SWAP);
			q = (uint64_t *)(p + pg * PSZ);
			for (w = 0; w < PSZ / 8; w++) {
				if (q[w] != value(r, pg)) {
					lost++;
					break;
				}
			}
		}
		munmap(p, len);
	}
	printf("METRIC time_ns %lld\n", timed);
	printf("METRIC rounds %ld\n", rounds);
	printf("METRIC swapped_pages %lld\n", swapped);
	printf("METRIC lost_pages %lld\n", lost);
	return lost ? 2 : 0;
}
