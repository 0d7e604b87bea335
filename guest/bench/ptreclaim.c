// SPDX-License-Identifier: GPL-2.0
/*
 * ptreclaim - the seed 004 loop: touch 2 MB, MADV_DONTNEED 2 MB, next 2 MB.
 *
 *   ptreclaim [ROUNDS]     (default 1024)
 *
 * Each round uses a fresh 2 MB-aligned region, so without PTE-page reclaim
 * every round leaves one empty PTE page behind.  THP is off for the range
 * (MADV_NOHUGEPAGE) so the memory is mapped by PTEs.  Prints METRIC lines
 * for benchrun: the loop's time and VmPTE before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lab.h"

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1024;
	size_t len = (rounds + 1) * LAB_SZ_2M;
	long before, after;
	long long t0, t1;
	char *map, *p;

	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	p = (char *)(((unsigned long)map + LAB_SZ_2M - 1) & ~(LAB_SZ_2M - 1));
	if (madvise(map, len, MADV_NOHUGEPAGE)) {
		perror("madvise(MADV_NOHUGEPAGE)");
		return 1;
	}
	before = lab_status_kb("VmPTE");
	t0 = lab_now_ns();
	for (long i = 0; i < rounds; i++, p += LAB_SZ_2M) {
		memset(p, 1, LAB_SZ_2M);
		if (madvise(p, LAB_SZ_2M, MADV_DONTNEED)) {
			perror("madvise(MADV_DONTNEED)");
			return 1;
		}
	}
	t1 = lab_now_ns();
	after = lab_status_kb("VmPTE");
	printf("METRIC time_ns %lld\n", t1 - t0);
	printf("METRIC rounds %ld\n", rounds);
	printf("METRIC vmpte_before_kb %ld\n", before);
	printf("METRIC vmpte_after_kb %ld\n", after);
	return before < 0 || after < 0;
}
