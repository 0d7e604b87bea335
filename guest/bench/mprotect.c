// SPDX-License-Identifier: GPL-2.0
/*
 * mprotect - the upstream mprotect() batching benchmark's loop: map SIZE of
 * anonymous memory (2 MB aligned), write every page, then ITERS times
 * mprotect(PROT_READ) and mprotect(PROT_READ | PROT_WRITE) over all of it,
 * writing one word of every page after each round.
 *
 *   mprotect SIZE_KB ITERS private|shared|pte2m
 *
 * private: MAP_PRIVATE; the folio size comes from the mTHP knobs the caller
 * sets (64 KB mTHP, or 4 KB pages).  shared: MAP_SHARED anonymous (shmem)
 * with its default 4 KB folios, dirty, as in the 4 KB shared-dirty
 * regression report against 6.12.  pte2m: MAP_PRIVATE 2 MB THP, each
 * mapped by PTEs before the loop (an mprotect() of one page in each splits
 * its PMD), where x86 has no contiguous-PTE hint to find a batch by.
 *
 * Prints the time in the mprotect() calls as METRIC mprotect_ns, the whole
 * loop's as METRIC time_ns; exits 1 if the data changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lab.h"

#define PSZ	4096UL
#define SZ_2M	(2UL << 20)

int main(int argc, char **argv)
{
	size_t size, off, i;
	long long t0, t1, m0, in_mprotect = 0;
	long iters, it;
	int flags, pte2m;
	char *map, *p;

	if (argc != 4 || (strcmp(argv[3], "private") && strcmp(argv[3], "shared") &&
			  strcmp(argv[3], "pte2m"))) {
		fprintf(stderr, "usage: mprotect SIZE_KB ITERS private|shared|pte2m\n");
		return 1;
	}
	size = (size_t)atol(argv[1]) << 10;
	iters = atol(argv[2]);
	pte2m = !strcmp(argv[3], "pte2m");
	flags = !strcmp(argv[3], "shared") ? MAP_SHARED : MAP_PRIVATE;
	if (!size || size % SZ_2M || iters < 1) {
		fprintf(stderr, "mprotect: SIZE_KB must be a multiple of 2048, ITERS at least 1\n");
		return 1;
	}

	map = mmap(NULL, size + SZ_2M, PROT_READ | PROT_WRITE,
		   flags | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	p = (char *)(((unsigned long)map + SZ_2M - 1) & ~(SZ_2M - 1));
	if (flags == MAP_PRIVATE && madvise(p, size, MADV_HUGEPAGE)) {
		perror("madvise");
		return 1;
	}
	for (i = 0; i < size; i += PSZ)
		memset(p + i, (int)(i / PSZ), PSZ);
	if (pte2m) {
		for (off = 0; off < size; off += SZ_2M) {
			if (mprotect(p + off + SZ_2M / 2, PSZ, PROT_READ) ||
			    mprotect(p + off + SZ_2M / 2, PSZ,
				     PROT_READ | PROT_WRITE)) {
				perror("mprotect (split)");
				return 1;
			}
		}
	}

	t0 = lab_now_ns();
	for (it = 0; it < iters; it++) {
		m0 = lab_now_ns();
		if (mprotect(p, size, PROT_READ) ||
		    mprotect(p, size, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			return 1;
		}
		in_mprotect += lab_now_ns() - m0;
		for (i = 0; i < size; i += PSZ)
			p[i + it % PSZ] = (char)(i / PSZ);
	}
	t1 = lab_now_ns();

	for (i = 0; i < size; i++) {
		if (p[i] != (char)(i / PSZ)) {
			fprintf(stderr, "mprotect: byte %zu is %d, expected %d\n",
				i, p[i], (char)(i / PSZ));
			return 1;
		}
	}
	printf("METRIC time_ns %lld\n", t1 - t0);
	printf("METRIC mprotect_ns %lld\n", in_mprotect);
	printf("METRIC iterations %ld\n", iters);
	return 0;
}
