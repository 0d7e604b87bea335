// SPDX-License-Identifier: GPL-2.0
/*
 * mremap - the seed 001 program: map SIZE of private anonymous memory,
 * memset it, mremap it to its own end (MREMAP_FIXED), unmap; ITERS times.
 * Both places are in one range of twice SIZE, 2 MB-aligned, that the
 * program reserves first, so that the move never lands on another mapping
 * of the process.  (Seed 001's program maps at a 1 GB hint; on arm64,
 * whose brk is randomized over 1 GB, the heap or the mapping the kernel
 * chose instead can lie there, and MREMAP_FIXED would unmap it.)
 *
 *   mremap [SIZE_KB] [ITERS]     (default 1024 KB, 10000 times)
 *
 * The folio size comes from the THP/mTHP knobs the caller sets: 64 KB mTHP,
 * 4 KB pages (all off) or 2 MB THP (with SIZE_KB 2048).  Prints the loop's
 * time as METRIC time_ns and the time spent in the mremap() calls alone as
 * METRIC mremap_ns: the loop also faults, fills and unmaps, which the series
 * does not change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lab.h"

int main(int argc, char **argv)
{
	size_t size = (argc > 1 ? atol(argv[1]) : 1024) << 10;
	long iters = argc > 2 ? atol(argv[2]) : 10000;
	long long t0, t1, in_mremap = 0;
	char *base;

	base = lab_map_aligned(2 * size, LAB_SZ_2M, 0, PROT_NONE, MAP_PRIVATE);
	if (!base) {
		perror("mmap (the reservation)");
		return 1;
	}
	t0 = lab_now_ns();
	for (long i = 0; i < iters; i++) {
		char *addr, *new_addr;
		long long m0;

		addr = mmap(base, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (addr != base) {
			perror("mmap");
			return 1;
		}
		memset(addr, 0xaa, size);
		m0 = lab_now_ns();
		new_addr = mremap(addr, size, size, MREMAP_MAYMOVE | MREMAP_FIXED,
				  addr + size);
		in_mremap += lab_now_ns() - m0;
		if (new_addr != addr + size) {
			perror("mremap");
			return 1;
		}
		if (new_addr[size - 1] != (char)0xaa) {
			fprintf(stderr, "mremap: data lost in the move\n");
			return 1;
		}
		munmap(new_addr, size);
	}
	t1 = lab_now_ns();
	printf("METRIC time_ns %lld\n", t1 - t0);
	printf("METRIC mremap_ns %lld\n", in_mremap);
	printf("METRIC iterations %ld\n", iters);
	return 0;
}
