// SPDX-License-Identifier: GPL-2.0
/*
 * readside - the read side of large folios: calls that read the PTEs of
 * written anonymous memory without changing them, timed in the guest.
 *
 *   readside SIZE_KB ITERS mlock|smaps|smaps-old|mincore|mbind|mbind-pte2m|
 *            mbind-stay
 *
 * Maps SIZE_KB of private anonymous memory (2 MB aligned, MADV_HUGEPAGE;
 * the folio size comes from the mTHP knobs the caller sets) and writes
 * every page, then ITERS times:
 *
 *   mlock        mlock() and munlock() of all of it (each reads every PTE,
 *                on arm64 every contiguous block's 16 entries per PTE in
 *                6.12: the case upstream's early exit was measured on);
 *   smaps        a read of /proc/self/smaps (every PTE, ptep_get());
 *   smaps-old    the same after clear_refs, untimed, made every entry old:
 *                the early exit cannot fire (a control);
 *   mincore      mincore() of all of it;
 *   mbind        mbind(MPOL_MF_MOVE) of all of it to node 1, then back to
 *                node 0 (two NUMA nodes needed);
 *   mbind-pte2m  the same over 2 MB THP each mapped by PTEs (an mprotect()
 *                of one page of each splits its PMD before the loop);
 *   mbind-stay   mbind(MPOL_MF_MOVE | MPOL_MF_STRICT) of all of it to node
 *                0, where it is: nothing moves, the time is the walk that
 *                queues the folios (one node is enough).
 *
 * Prints "METRIC time_ns" (the timed calls alone, CLOCK_MONOTONIC, which
 * under -icount is instruction-time) and what the calls gave: the bytes of
 * smaps, the resident pages of mincore(), the pages on node 1 after the
 * last move to it, so that a mode that reads less shows it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lab.h"

#define PSZ	4096UL

static int die(const char *what)
{
	fprintf(stderr, "readside: %s: %s\n", what, strerror(errno));
	return 1;
}

static long read_smaps(void)
{
	static char buf[65536];
	long total = 0;
	ssize_t n;
	int fd;

	fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return n < 0 ? -1 : total;
}

/* The pages of @nr at @p on node 1, by move_pages() without nodes. */
static long on_node1(char *p, size_t nr)
{
	int *status = calloc(nr, sizeof(int));
	void **pages = calloc(nr, sizeof(void *));
	long n = 0;
	size_t i;

	if (!status || !pages)
		return -1;
	for (i = 0; i < nr; i++)
		pages[i] = p + i * PSZ;
	if (syscall(SYS_move_pages, 0, nr, pages, NULL, status, 0))
		n = -1;
	for (i = 0; n >= 0 && i < nr; i++)
		n += status[i] == 1;
	free(status);
	free(pages);
	return n;
}

int main(int argc, char **argv)
{
	unsigned long n0 = 1, n1 = 2;
	long long t0, spent = 0;
	long iters, i, got = 0;
	size_t size, nr, k;
	const char *mode;
	unsigned char *vec;
	bool pte2m;
	char *p;

	if (argc != 4) {
		fprintf(stderr, "usage: readside SIZE_KB ITERS "
			"mlock|smaps|smaps-old|mincore|mbind|mbind-pte2m|mbind-stay\n");
		return 2;
	}
	size = strtoul(argv[1], NULL, 0) * LAB_SZ_1K;
	iters = atol(argv[2]);
	mode = argv[3];
	pte2m = !strcmp(mode, "mbind-pte2m");
	if (!size || size % LAB_SZ_2M || iters < 1) {
		fprintf(stderr, "readside: SIZE_KB must be a multiple of 2048, ITERS at least 1\n");
		return 2;
	}
	nr = size / PSZ;
	if (!strncmp(mode, "mbind", 5) &&
	    syscall(SYS_set_mempolicy, MPOL_BIND, &n0, 64))
		return die("set_mempolicy(node 0)");
	p = lab_map_aligned(size, LAB_SZ_2M, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (!p)
		return die("mmap");
	if (madvise(p, size, MADV_HUGEPAGE))
		return die("madvise");
	lab_fill_pat(p, 0, nr, 1);
	if (!strncmp(mode, "mbind", 5) &&
	    syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0))
		return die("set_mempolicy(default)");
	if (pte2m) {
		for (k = 0; k < size; k += LAB_SZ_2M)
			if (mprotect(p + k, PSZ, PROT_READ) ||
			    mprotect(p + k, PSZ, PROT_READ | PROT_WRITE))
				return die("mprotect");
	}
	vec = malloc(nr);
	if (!vec)
		return die("malloc");

	for (i = 0; i < iters; i++) {
		if (!strcmp(mode, "smaps-old") &&
		    lab_write_file("/proc/self/clear_refs", "1"))
			return die("clear_refs");
		t0 = lab_now_ns();
		if (!strcmp(mode, "mlock")) {
			if (mlock(p, size) || munlock(p, size))
				return die("mlock");
		} else if (!strncmp(mode, "smaps", 5)) {
			got = read_smaps();
			if (got < 0)
				return die("smaps");
		} else if (!strcmp(mode, "mincore")) {
			if (mincore(p, size, vec))
				return die("mincore");
		} else if (!strcmp(mode, "mbind-stay")) {
			if (syscall(SYS_mbind, p, size, MPOL_BIND, &n0, 64,
				    MPOL_MF_MOVE | MPOL_MF_STRICT))
				return die("mbind(node 0)");
		} else if (!strncmp(mode, "mbind", 5)) {
			if (syscall(SYS_mbind, p, size, MPOL_BIND, &n1, 64,
				    MPOL_MF_MOVE))
				return die("mbind(node 1)");
			spent += lab_now_ns() - t0;
			got = on_node1(p, nr);
			t0 = lab_now_ns();
			if (syscall(SYS_mbind, p, size, MPOL_BIND, &n0, 64,
				    MPOL_MF_MOVE))
				return die("mbind(node 0)");
		} else {
			fprintf(stderr, "readside: unknown mode %s\n", mode);
			return 2;
		}
		spent += lab_now_ns() - t0;
	}
	if (!strcmp(mode, "mincore"))
		for (k = 0, got = 0; k < nr; k++)
			got += vec[k] & 1;
	if (lab_check_pat(p, 0, nr, 1) != nr * (PSZ / 8)) {
		fprintf(stderr, "readside: the data changed\n");
		return 1;
	}
	printf("METRIC time_ns %lld\n", spent);
	printf("METRIC iterations %ld\n", iters);
	if (!strncmp(mode, "smaps", 5))
		printf("METRIC smaps_bytes %ld\n", got);
	else if (!strcmp(mode, "mincore"))
		printf("METRIC resident_pages %ld\n", got);
	else if (!strcmp(mode, "mbind-stay"))
		printf("METRIC node1_pages %ld\n", on_node1(p, nr));
	else if (!strncmp(mode, "mbind", 5))
		printf("METRIC moved_pages %ld\n", got);
	return 0;
}
