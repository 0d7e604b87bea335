// SPDX-License-Identifier: GPL-2.0
/*
 * mprotect - the upstream mprotect() batching benchmark's loop: map SIZE of
 * anonymous memory (2 MB aligned), write every page, then ITERS times
 * mprotect(PROT_READ) and mprotect(PROT_READ | PROT_WRITE) over all of it,
 * writing one word of every page after each round.
 *
 *   mprotect SIZE_KB ITERS private|shared|pte2m|mixed|midfolio|filedirty|none
 *
 * private: MAP_PRIVATE; the folio size comes from the mTHP knobs the caller
 * sets (64 KB mTHP, or 4 KB pages).  shared: MAP_SHARED anonymous (shmem)
 * with its default 4 KB folios, dirty, as in the 4 KB shared-dirty
 * regression report against 6.12.  pte2m: MAP_PRIVATE 2 MB THP, each
 * mapped by PTEs before the loop (an mprotect() of one page in each splits
 * its PMD), where x86 has no contiguous-PTE hint to find a batch by.
 *
 * The last three are the cases where the batching of the mprotect_batch
 * switch is refused or partial.  Each checks before the loop, in
 * /proc/self/pagemap and /proc/kpageflags (root), that every 64 KB of the
 * region is the folio or folios it claims, and fails with a message if not.
 *
 * mixed: MAP_PRIVATE, 64 KB mTHP (hugepages-64kB/enabled always), but in
 * every 2 MB region the 64 KB pieces alternate between one 64 KB folio and
 * 16 small folios, starting with a 64 KB folio.  The small pieces are made
 * in the one VMA: before any write, the last page of each is read, which
 * maps the zero page there (do_anonymous_page() of 6.12 maps the zero page
 * for a read fault before it looks at mTHP).  alloc_anon_folio() then takes
 * an order only where its whole aligned range is pte_none(), so the writes
 * to the other 15 pages each fault in an order-0 folio, and the write to
 * the zero page's copy is order 0 too (wp_page_copy() ->
 * folio_prealloc()).  MADV_NOHUGEPAGE would also give small folios
 * (vma_thp_disabled() makes __thp_vma_allowable_orders() return no order),
 * but it sets VM_NOHUGEPAGE on each 64 KB, which splits the VMA into one
 * VMA per 64 KB: every change_pte_range() call would then see one kind of
 * folio, and the page-table heuristics this kind is for would never meet a
 * mix, while the per-VMA work of 8192 VMAs (256 MB) would swamp the rest.
 * In one page table the batched copy then meets: a 64 KB folio (a batch),
 * 16 small folios (two lookups find no batch, MPROTECT_BATCH_TRIES, and
 * stop the lookups), then on x86 the 15 further 64 KB folios of the page
 * table changed one PTE at a time, on arm64 each 64 KB folio found again by
 * its contiguous block (pte_batch_hint()).
 *
 * midfolio: MAP_PRIVATE, 64 KB mTHP, every mprotect() call starting and
 * ending in the middle of a folio: the range [32 KB, SIZE - 32 KB) in
 * calls of 2 MB each, so one call covers the last 2 MB - 32 KB of a page
 * table and the first 32 KB of the next.  One call over that range would
 * split only its first and last folio; calls per 2 MB with gaps between
 * them would leave a VMA per call behind.  Consecutive calls merge each
 * new read-only piece into the one before it, so the VMAs stay three, and
 * every page table is changed in two walks: 8 PTEs that end in the middle
 * of a folio, and 504 that start in the middle of one (a batch of 8, then
 * whole folios); on arm64 the change of the first half of each such folio
 * unfolds its contiguous block.  The 32 KB at either end stay writable.  Each round makes the same calls
 * with PROT_READ, then with PROT_READ | PROT_WRITE.
 *
 * filedirty: MAP_SHARED anonymous memory, a shmem file, of 64 KB folios
 * (hugepages-64kB/shmem_enabled always), half of each folio's PTEs dirty
 * and half clean, so that a batch stops at the dirty/clean boundary
 * (folio_pte_batch() without FPB_IGNORE_DIRTY): two batches of 8 per
 * folio.  In 6.12 a memfd_create() file or a tmpfs file cannot have 64 KB
 * folios: shmem_allowable_huge_orders() applies the per-size shmem_enabled
 * knobs only to vma_is_anon_shmem() mappings (MAP_SHARED | MAP_ANONYMOUS)
 * and gives any other shmem mapping, and write(2) (no VMA), the PMD order
 * of the mount's huge= option at most.  So the file is the one behind a
 * MAP_SHARED anonymous mapping, and its content starts as zeroes.  The
 * mapping is placed 2 MB aligned with pgoff 0, as shmem's
 * thp_vma_suitable_order() wants for a 64 KB folio, and each page is read:
 * shmem_fault() allocates a 64 KB folio and finish_fault() maps all of it
 * at once (vma_is_anon_shmem()), through set_pte_range(), which makes PTEs
 * dirty only for a write fault (pte_mkdirty() under "if (write)").  The
 * mapping wants no write notification (vma_wants_writenotify(): shmem has
 * no page_mkwrite, soft-dirty tracking is off on a new VMA, and shmem's
 * backing device does no writeback), so its vm_page_prot is writable and
 * the read fault maps each page writable and clean.  A write to the first half of each folio then
 * makes those PTEs dirty one by one: the CPU sets the dirty bit (x86, arm64
 * with hardware DBM), or handle_pte_fault() does, for that PTE only.
 * mprotect() keeps the dirty bit (pte_modify()), and no write of the loop
 * touches the clean halves: the words written after each round go to the
 * first halves only, and the data check only reads.  The shmem folio is
 * not marked dirty by a fault (no folio_mark_dirty() on that path), so
 * smaps' Shared_Dirty and Private_Dirty count the dirty PTEs; the program
 * checks that they are half of the mapping before the loop and after it.
 *
 * arm64 needs one step more: a contiguous (contpte) block has one dirty
 * bit for all 16 entries (contpte_ptep_get() gathers it, and
 * contpte_convert() writes the gathered bit to all 16 when it unfolds or
 * folds the block), and set_ptes() maps a 64 KB folio at a 64 KB aligned
 * address as a block.  So, after the read faults and before the writes,
 * the mapping is moved with mremap() to an address 32 KB past a 2 MB
 * boundary: every 64 KB aligned range of PTEs then maps the halves of two
 * folios, and contpte_try_fold() never folds (the PFN of the last entry of
 * a range is not the last of a 64 KB aligned run).  x86 has no blocks; the
 * move is made there too, so that both arches change the same layout.
 *
 * none: as private, but each round makes the region PROT_NONE, not
 * PROT_READ, and back: on arm64 the batched commit then writes invalid
 * entries over contiguous blocks, which the series flushes before it
 * drops the page table lock (a flush the NUMA scan needs and mprotect(),
 * under mmap_lock for writing, does not); this kind measures that cost.
 *
 * Prints the time in the mprotect() calls as METRIC mprotect_ns, the whole
 * loop's as METRIC time_ns; exits 1 if the data or the layout changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

#define PSZ	4096UL
#define SZ_32K	(32UL << 10)
#define SZ_64K	(64UL << 10)
#define SZ_2M	(2UL << 20)
#define FOLIO_NR	(SZ_64K / PSZ)

enum kind { PRIVATE, SHARED, PTE2M, MIXED, MIDFOLIO, FILEDIRTY, PROTNONE };

static const char *const kinds[] = {
	[PRIVATE] = "private", [SHARED] = "shared", [PTE2M] = "pte2m",
	[MIXED] = "mixed", [MIDFOLIO] = "midfolio", [FILEDIRTY] = "filedirty",
	[PROTNONE] = "none",
};

/* filedirty: whether the byte at offset @i lies in the dirty half of a folio */
static int dirty_half(size_t i)
{
	return i % SZ_64K < SZ_64K / 2;
}

/* whether the loop writes to the page at offset @i */
static int written(enum kind kind, size_t i)
{
	return kind != FILEDIRTY || dirty_half(i);
}

/* the byte at offset @i: the page's index, zero in filedirty's clean halves */
static char expected(enum kind kind, size_t i)
{
	return written(kind, i) ? (char)(i / PSZ) : 0;
}

/* what chunk_layout() finds */
enum { SMALL, FOLIO, OTHER };

/*
 * What maps the 64 KB at @addr: FOLIO for one 64 KB folio whose head @addr
 * maps, SMALL for 16 small folios, OTHER for anything else; -errno if
 * pagemap or kpageflags could not be read (-EPERM: the PFNs are hidden, the
 * caller is not root).  lab_folio_mapped_size() measures the folio mapped
 * from each address on: 64 KB and no more at @addr, or one page at each of
 * the 16 (a head would measure two, its tail after it).
 */
static int chunk_layout(int pm_fd, int kpf_fd, const char *addr)
{
	size_t size, i;
	int err;

	err = lab_folio_mapped_size(pm_fd, kpf_fd, addr, SZ_64K + PSZ, &size);
	if (err)
		return err == -ENOENT ? OTHER : err;
	if (size == SZ_64K)
		return FOLIO;
	for (i = 0; i < FOLIO_NR; i++) {
		err = lab_folio_mapped_size(pm_fd, kpf_fd, addr + i * PSZ,
					    2 * PSZ, &size);
		if (err)
			return err == -ENOENT ? OTHER : err;
		if (size != PSZ)
			return OTHER;
	}
	return SMALL;
}

/*
 * Check that every 64 KB of [p, p + size) is one 64 KB folio, or for mixed
 * every other one (the second of each pair) 16 small folios; 0 if so.
 */
static int check_folios(enum kind kind, const char *p, size_t size)
{
	int pm_fd, kpf_fd, got, want, bad = 0;
	size_t off;

	pm_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	kpf_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (pm_fd < 0 || kpf_fd < 0) {
		perror("mprotect: /proc/self/pagemap or /proc/kpageflags");
		return -1;
	}
	for (off = 0; off < size && !bad; off += SZ_64K) {
		want = kind == MIXED && off / SZ_64K % 2 ? SMALL : FOLIO;
		got = chunk_layout(pm_fd, kpf_fd, p + off);
		if (got == -EPERM) {
			fprintf(stderr, "mprotect: %s: pagemap hides the PFNs: needs root\n",
				kinds[kind]);
			bad = 1;
		} else if (got < 0) {
			fprintf(stderr, "mprotect: %s: pagemap or kpageflags: %s\n",
				kinds[kind], strerror(-got));
			bad = 1;
		} else if (got != want) {
			fprintf(stderr, "mprotect: %s: the 64 KB at offset %zu should be "
				"%s, but is %s (is %s always?)\n", kinds[kind], off,
				want == FOLIO ? "one 64 KB folio" : "16 small folios",
				got == FOLIO ? "one 64 KB folio" : got == SMALL ?
				"16 small folios" : "neither that nor 16 small folios",
				kind == FILEDIRTY ? "hugepages-64kB/shmem_enabled" :
				"hugepages-64kB/enabled");
			bad = 1;
		}
	}
	close(pm_fd);
	close(kpf_fd);
	return bad ? -1 : 0;
}

/*
 * The dirty and the clean kB (Shared_ and Private_) that /proc/self/smaps
 * gives for the VMA starting at @start; 0, or -1 if there is no such VMA.
 */
static int vma_dirty_kb(const char *start, long *dirty, long *clean)
{
	unsigned long s, e;
	char line[512];
	int in = 0, found = 0;
	FILE *f;
	long v;

	*dirty = *clean = 0;
	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = s == (unsigned long)start;
			found |= in;
		} else if (!in) {
			continue;
		} else if (sscanf(line, "Shared_Dirty: %ld kB", &v) == 1 ||
			   sscanf(line, "Private_Dirty: %ld kB", &v) == 1) {
			*dirty += v;
		} else if (sscanf(line, "Shared_Clean: %ld kB", &v) == 1 ||
			   sscanf(line, "Private_Clean: %ld kB", &v) == 1) {
			*clean += v;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* filedirty: check that half of the mapping's PTEs are dirty; 0 if so */
static int check_dirty_half(const char *p, size_t size, const char *when)
{
	long dirty, clean, half = (long)(size / 2 >> 10);

	if (vma_dirty_kb(p, &dirty, &clean)) {
		fprintf(stderr, "mprotect: filedirty: no VMA at %p in smaps\n", (void *)p);
		return -1;
	}
	if (dirty != half || clean != half) {
		fprintf(stderr, "mprotect: filedirty: %s, %ld kB dirty and %ld kB clean, "
			"not %ld kB each (a contiguous block gathers the dirty bit)\n",
			when, dirty, clean, half);
		return -1;
	}
	return 0;
}

/*
 * filedirty: map @size of MAP_SHARED anonymous memory (shmem) 2 MB aligned
 * with pgoff 0, read every page (64 KB folios, mapped clean) and move the
 * mapping to 32 KB past a 2 MB boundary; NULL on error.
 */
static char *map_filedirty(size_t size)
{
	char *res, *p, *q;
	size_t i;

	/* room for the mapping and, beyond it, where it moves to */
	res = mmap(NULL, 2 * size + 2 * SZ_2M, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap (reserve)");
		return NULL;
	}
	p = (char *)(((unsigned long)res + SZ_2M - 1) & ~(SZ_2M - 1));
	if (mmap(p, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p) {
		perror("mmap (shared)");
		return NULL;
	}
	for (i = 0; i < size; i += PSZ)
		(void)*(volatile char *)(p + i);
	q = p + size + SZ_32K;
	if (mremap(p, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, q) != q) {
		perror("mremap");
		return NULL;
	}
	return q;
}

/*
 * midfolio: mprotect() [p + 32 KB, p + size - 32 KB) to @prot in calls of
 * at most 2 MB, each starting and ending in the middle of a folio.
 */
static int mprotect_midfolio(char *p, size_t size, int prot)
{
	size_t off, len;

	for (off = SZ_32K; off < size - SZ_32K; off += len) {
		len = size - SZ_32K - off < SZ_2M ? size - SZ_32K - off : SZ_2M;
		if (mprotect(p + off, len, prot))
			return -1;
	}
	return 0;
}

static int mprotect_all(enum kind kind, char *p, size_t size, int prot)
{
	if (kind == MIDFOLIO)
		return mprotect_midfolio(p, size, prot);
	return mprotect(p, size, prot);
}

int main(int argc, char **argv)
{
	size_t size, off, i;
	long long t0, t1, m0, in_mprotect = 0;
	long iters, it;
	enum kind kind = PRIVATE;
	char *map, *p;
	int k = -1;

	if (argc == 4)
		for (k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++)
			if (!strcmp(argv[3], kinds[k]))
				break;
	if (k < 0 || k == (int)(sizeof(kinds) / sizeof(kinds[0]))) {
		fprintf(stderr, "usage: mprotect SIZE_KB ITERS "
			"private|shared|pte2m|mixed|midfolio|filedirty|none\n");
		return 1;
	}
	kind = k;
	size = (size_t)atol(argv[1]) << 10;
	iters = atol(argv[2]);
	if (!size || size % SZ_2M || iters < 1) {
		fprintf(stderr, "mprotect: SIZE_KB must be a multiple of 2048, ITERS at least 1\n");
		return 1;
	}

	if (kind == FILEDIRTY) {
		p = map_filedirty(size);
		if (!p)
			return 1;
	} else {
		map = mmap(NULL, size + SZ_2M, PROT_READ | PROT_WRITE,
			   (kind == SHARED ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS,
			   -1, 0);
		if (map == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		p = (char *)(((unsigned long)map + SZ_2M - 1) & ~(SZ_2M - 1));
		if (kind != SHARED && madvise(p, size, MADV_HUGEPAGE)) {
			perror("madvise");
			return 1;
		}
	}
	if (kind == MIXED) {
		/* the zero page in the last page of every second 64 KB */
		for (off = SZ_64K; off < size; off += 2 * SZ_64K)
			(void)*(volatile char *)(p + off + SZ_64K - PSZ);
	}
	for (i = 0; i < size; i += PSZ)
		if (written(kind, i))
			memset(p + i, (int)(i / PSZ), PSZ);
	if (kind == PTE2M) {
		for (off = 0; off < size; off += SZ_2M) {
			if (mprotect(p + off + SZ_2M / 2, PSZ, PROT_READ) ||
			    mprotect(p + off + SZ_2M / 2, PSZ,
				     PROT_READ | PROT_WRITE)) {
				perror("mprotect (split)");
				return 1;
			}
		}
	}
	if ((kind == MIXED || kind == MIDFOLIO || kind == FILEDIRTY) &&
	    check_folios(kind, p, size))
		return 1;
	if (kind == FILEDIRTY && check_dirty_half(p, size, "before the loop"))
		return 1;

	t0 = lab_now_ns();
	for (it = 0; it < iters; it++) {
		m0 = lab_now_ns();
		if (mprotect_all(kind, p, size,
				 kind == PROTNONE ? PROT_NONE : PROT_READ) ||
		    mprotect_all(kind, p, size, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			return 1;
		}
		in_mprotect += lab_now_ns() - m0;
		for (i = 0; i < size; i += PSZ)
			if (written(kind, i))
				p[i + it % PSZ] = (char)(i / PSZ);
	}
	t1 = lab_now_ns();

	for (i = 0; i < size; i++) {
		if (p[i] != expected(kind, i)) {
			fprintf(stderr, "mprotect: byte %zu is %d, expected %d\n",
				i, p[i], expected(kind, i));
			return 1;
		}
	}
	if (kind == FILEDIRTY && check_dirty_half(p, size, "after the loop"))
		return 1;
	printf("METRIC time_ns %lld\n", t1 - t0);
	printf("METRIC mprotect_ns %lld\n", in_mprotect);
	printf("METRIC iterations %ld\n", iters);
	return 0;
}
