/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lab.h - helpers shared by the foliobatch lab's guest tests and benchmarks.
 *
 * Every function returns 0 (or a non-negative value) on success and a
 * negative errno on failure; none of them prints or exits, so callers decide
 * how to report.  The implementations are in lib/lab.c.
 */
#ifndef LAB_H
#define LAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define LAB_SZ_1K		(1UL << 10)
#define LAB_SZ_1M		(1UL << 20)
#define LAB_SZ_2M		(2UL << 20)

/* Bits of /proc/kpageflags, see include/uapi/linux/kernel-page-flags.h. */
#define LAB_KPF_DIRTY		4
#define LAB_KPF_ANON		12
#define LAB_KPF_SWAPBACKED	14
#define LAB_KPF_COMPOUND_HEAD	15
#define LAB_KPF_COMPOUND_TAIL	16
#define LAB_KPF_THP		22

#define LAB_CGROUP_ROOT		"/sys/fs/cgroup"

/* Bits of a /proc/self/pagemap entry, see Documentation/admin-guide/mm. */
#define LAB_PM_PFN_MASK		((1ULL << 55) - 1)
#define LAB_PM_SOFT_DIRTY	(1ULL << 55)
#define LAB_PM_MMAP_EXCLUSIVE	(1ULL << 56)
#define LAB_PM_UFFD_WP		(1ULL << 57)
#define LAB_PM_FILE		(1ULL << 61)
#define LAB_PM_SWAP		(1ULL << 62)
#define LAB_PM_PRESENT		(1ULL << 63)

#define LAB_THP_DIR		"/sys/kernel/mm/transparent_hugepage"
#define LAB_THP_MAX_SIZES	16

/**
 * lab_read_file() - read a small sysfs or procfs file into a string
 * @path: file to read
 * @buf: destination, always NUL-terminated on success
 * @size: size of @buf; at most @size - 1 bytes are read
 *
 * Return: number of bytes read, or -errno.
 */
ssize_t lab_read_file(const char *path, char *buf, size_t size);

/**
 * lab_write_file() - write a string to a sysfs or procfs file
 * @path: file to write
 * @val: string written with a single write(2), without its NUL
 *
 * Return: 0 when all of @val was accepted, -EIO on a short write, or -errno
 * (for example -EINVAL when a sysfs store rejected the value).
 */
int lab_write_file(const char *path, const char *val);

/**
 * lab_read_ulong() - read a file holding one decimal number
 * @path: file to read, e.g. memory.current or an mTHP stats counter
 * @val: the number read
 *
 * Return: 0, -EINVAL if the file does not start with a number, or -errno.
 */
int lab_read_ulong(const char *path, unsigned long *val);

/**
 * lab_status_kb() - read a "Name:   N kB" field of /proc/self/status
 * @field: field name without the colon, e.g. "VmPTE" or "VmRSS"
 *
 * Return: the value in kB, -ENOENT if the field is missing, or -errno.
 */
long lab_status_kb(const char *field);

/**
 * lab_meminfo_kb() - read a "Name:   N kB" field of /proc/meminfo
 * @field: field name without the colon, e.g. "FileHugePages"
 *
 * Return: the value in kB, -ENOENT if the field is missing, or -errno.
 */
long lab_meminfo_kb(const char *field);

/**
 * lab_vmstat() - read one counter of /proc/vmstat
 * @name: the counter, e.g. "pswpout" or "numa_pte_updates"
 *
 * Return: its value, -ENOENT if this kernel has no such counter, -E2BIG if
 * /proc/vmstat did not fit the buffer, or -errno.
 */
long long lab_vmstat(const char *name);

/**
 * lab_path_exists() - tell whether a file or directory exists
 * @path: the path, e.g. a sysfs knob that only some kernels have
 *
 * Return: true if stat(2) succeeds on @path.
 */
bool lab_path_exists(const char *path);

/**
 * lab_have_swap() - tell whether a swap device or file is active
 *
 * Return: true if /proc/swaps lists at least one entry below its header.
 */
bool lab_have_swap(void);

/**
 * lab_is_mounted() - tell whether a directory is a mount point of a type
 * @dir: mount point as it appears in /proc/mounts, e.g. "/mnt/xfs"
 * @fstype: file system type, e.g. "xfs" or "cgroup2"
 *
 * Return: 1 if @dir is mounted with type @fstype, 0 if not, or -errno if
 * /proc/mounts cannot be read.
 */
int lab_is_mounted(const char *dir, const char *fstype);

/**
 * lab_pagemap_pfn() - look up the PFN that maps a virtual address
 * @pagemap_fd: open file descriptor of /proc/self/pagemap
 * @addr: any address in the page of interest
 * @pfn: the page frame number
 *
 * Return: 0, -ENOENT if the page is not present, -EPERM if the kernel hid
 * the PFN (the caller lacks CAP_SYS_ADMIN), or -errno.
 */
int lab_pagemap_pfn(int pagemap_fd, const void *addr, uint64_t *pfn);

/**
 * lab_kpageflags() - read the /proc/kpageflags word of a PFN
 * @kpageflags_fd: open file descriptor of /proc/kpageflags
 * @pfn: page frame number
 * @flags: bitmask of KPF_* bits (see LAB_KPF_*)
 *
 * Return: 0 or -errno.
 */
int lab_kpageflags(int kpageflags_fd, uint64_t pfn, uint64_t *flags);

/**
 * lab_pagemap_read() - read the pagemap entries of consecutive pages
 * @pagemap_fd: open file descriptor of /proc/self/pagemap
 * @addr: any address in the first page
 * @nr: number of pages
 * @entries: @nr raw entries, see LAB_PM_*; the PFN field reads as 0 when
 *           the caller lacks CAP_SYS_ADMIN
 *
 * Return: 0, -EIO on a short read, or -errno.
 */
int lab_pagemap_read(int pagemap_fd, const void *addr, size_t nr,
		     uint64_t *entries);

/**
 * lab_folio_mapped_size() - measure the large folio mapped at an address
 * @pagemap_fd: open file descriptor of /proc/self/pagemap
 * @kpageflags_fd: open file descriptor of /proc/kpageflags
 * @addr: page-aligned address
 * @max: bytes to look at from @addr, at most
 * @size: how many bytes from @addr, up to @max, map consecutive pages of the
 *        large folio whose head page @addr maps: the head, then compound
 *        tails with consecutive PFNs.  The page size when @addr maps a small
 *        page, 0 when it maps a compound tail (not the start of a folio).
 *
 * The scan stops at the first page that is not a compound tail with the
 * next PFN, so a folio of S bytes whose head @addr maps gives *@size == S
 * for any @max > S.
 *
 * Return: 0, -EINVAL if @max is less than a page, -ENOENT if @addr is not
 * present, -EPERM if the kernel hid the PFN (the caller lacks
 * CAP_SYS_ADMIN), or -errno.
 */
int lab_folio_mapped_size(int pagemap_fd, int kpageflags_fd, const void *addr,
			  size_t max, size_t *size);

/**
 * struct lab_knob - a saved sysfs or procfs setting
 * @path: the file
 * @saved: its value when saved; for multiple-choice files such as
 *         "always [madvise] never" only the bracketed choice is kept
 * @valid: @saved holds a value that lab_knob_restore() will write back
 */
struct lab_knob {
	char path[256];
	char saved[64];
	bool valid;
};

/**
 * lab_knob_save() - remember the current value of a setting
 * @knob: where to save it
 * @path: the file
 *
 * Return: 0 or -errno; @knob->valid is false on failure.
 */
int lab_knob_save(struct lab_knob *knob, const char *path);

/**
 * lab_knob_restore() - write a saved value back
 * @knob: a knob filled in by lab_knob_save(); nothing happens if not valid
 *
 * Return: 0 or -errno.
 */
int lab_knob_restore(const struct lab_knob *knob);

/**
 * struct lab_thp - saved anonymous THP and mTHP 'enabled' settings
 * @top: LAB_THP_DIR/enabled
 * @size: hugepages-<size>kB/enabled of every size that has one
 * @nr: number of saved entries in @size
 */
struct lab_thp {
	struct lab_knob top;
	struct lab_knob size[LAB_THP_MAX_SIZES];
	int nr;
};

/**
 * lab_thp_save() - remember the top-level and every per-size THP setting
 * @thp: where to save them
 *
 * Sizes without an 'enabled' file (page cache only) are left out.
 *
 * Return: 0, -E2BIG if there are more than LAB_THP_MAX_SIZES sizes, or
 * -errno.  Whatever was saved before a failure is still restored by
 * lab_thp_restore().
 */
int lab_thp_save(struct lab_thp *thp);

/**
 * lab_thp_only() - make anonymous faults allocate folios of one size only
 * @thp: settings saved by lab_thp_save(); supplies the list of sizes
 * @size_kb: the folio size in kB, e.g. 64 or 2048; 0 for base pages only
 *
 * Writes "never" to the top-level 'enabled' and to every per-size one, then
 * "always" to hugepages-@size_kB/enabled.  Per-size "always" works whatever
 * the top-level setting is.
 *
 * Return: 0, -ENOENT if @size_kb is not a size with an 'enabled' file, or
 * -errno of the first failed write.
 */
int lab_thp_only(const struct lab_thp *thp, unsigned long size_kb);

/**
 * lab_thp_restore() - write back everything lab_thp_save() saved
 * @thp: the saved settings
 *
 * Keeps going after a failed write.
 *
 * Return: 0 or -errno of the first failed write.
 */
int lab_thp_restore(const struct lab_thp *thp);

/**
 * lab_cg_enable_memory() - enable the memory controller for child cgroups
 *
 * Writes "+memory" to /sys/fs/cgroup/cgroup.subtree_control.
 *
 * Return: 0 or -errno.
 */
int lab_cg_enable_memory(void);

/**
 * lab_cg_create() - create /sys/fs/cgroup/@name
 * @name: cgroup name; an existing cgroup of that name is reused
 *
 * Return: 0 or -errno.
 */
int lab_cg_create(const char *name);

/**
 * lab_cg_move() - move a process into a cgroup
 * @name: cgroup name
 * @pid: process to move; 0 means the caller
 *
 * Return: 0 or -errno.
 */
int lab_cg_move(const char *name, pid_t pid);

/**
 * lab_cg_memory_current() - read memory.current of a cgroup
 * @name: cgroup name
 * @bytes: charged memory in bytes
 *
 * Return: 0 or -errno.
 */
int lab_cg_memory_current(const char *name, unsigned long *bytes);

/**
 * lab_cg_reclaim() - ask a cgroup to reclaim memory
 * @name: cgroup name
 * @amount: amount in memory.reclaim syntax, e.g. "32M"
 *
 * Return: 0 if all of @amount was reclaimed, -EAGAIN if the kernel gave up
 * before reclaiming all of it, or another -errno.
 */
int lab_cg_reclaim(const char *name, const char *amount);

/**
 * lab_cg_oom_kills() - read the oom_kill count of a cgroup's memory.events
 * @name: cgroup name
 *
 * Return: the number of tasks the OOM killer killed in the cgroup, -ENOENT
 * if memory.events has no oom_kill line, or another -errno.
 */
long lab_cg_oom_kills(const char *name);

/**
 * lab_cg_remove() - remove /sys/fs/cgroup/@name
 * @name: cgroup name
 *
 * Retries for a while if the cgroup is still busy (its last task is being
 * reaped).  A cgroup that does not exist counts as removed.
 *
 * Return: 0 or -errno.
 */
int lab_cg_remove(const char *name);

/**
 * lab_uffd_open() - open a userfaultfd, non-blocking and close-on-exec
 *
 * Tries the userfaultfd(2) system call (user-mode faults only) and, if it
 * is restricted, /dev/userfaultfd.
 *
 * Return: the file descriptor, or -errno (-ENOSYS without userfaultfd).
 */
int lab_uffd_open(void);

/**
 * lab_uffd_open_features() - open a userfaultfd with features enabled
 * @features: UFFD_FEATURE_* bits that must all be available
 *
 * Does the UFFDIO_API handshake twice: once asking for nothing, to learn
 * what the kernel offers, then asking for @features.
 *
 * Return: the file descriptor, -EOPNOTSUPP if a feature is missing, or
 * -errno (-ENOSYS without userfaultfd).
 */
int lab_uffd_open_features(uint64_t features);

/* Where tracefs is, mounted by lab_kprobe_define() if it is not. */
#define LAB_TRACING	"/sys/kernel/tracing"

/**
 * lab_kprobe_define() - add one line to tracefs's kprobe_events
 * @def: the line, e.g. "p:group/name func" or "-:group/name"
 *
 * Mounts tracefs on LAB_TRACING if needed and appends @def, keeping every
 * other event (a plain write would replace them all).
 *
 * Return: 0 or -errno (the kernel's answer to @def).
 */
int lab_kprobe_define(const char *def);

/**
 * lab_kprobe_add() - count the calls of a kernel function
 * @event: name of the kprobe event, created as lab/@event
 * @func: kernel function to probe, e.g. "flush_tlb_mm_range"
 *
 * Creates the kprobe event "p:lab/@event @func" in tracefs (mounting it on
 * /sys/kernel/tracing if needed) and enables it with tracing off, so a hit
 * costs the probe and no ring-buffer write.  An event that exists already
 * is reused.  Where the kernel has no @func (a bare name, no offset) but
 * one clone gcc made of it (@func.isra.N, @func.constprop.N, in
 * /proc/kallsyms), the event probes the clone.  Its hits are read with lab_kprobe_hits().
 *
 * Return: 0, -ENOENT when the kernel has no such probe-able function
 * (inlined, notrace or absent), -ENOTUNIQ when gcc made several clones of
 * it, or another -errno.
 */
int lab_kprobe_add(const char *event, const char *func);

/**
 * lab_kprobe_hits() - read the hit count of a lab kprobe event
 * @event: name given to lab_kprobe_add()
 *
 * Return: the hits since the event was created (from kprobe_profile), or
 * -ENOENT if there is no such event, or another -errno.
 */
long long lab_kprobe_hits(const char *event);

/**
 * lab_kmsg_open_end() - open the kernel log past its last record
 *
 * Opens /dev/kmsg read-only and non-blocking and seeks to its end, so that
 * lab_kmsg_find() reads only the records the kernel logs from then on.
 *
 * Return: the file descriptor, or -errno.
 */
int lab_kmsg_open_end(void);

/**
 * lab_kmsg_find() - look for a string in the kernel log records not read yet
 * @fd: file descriptor from lab_kmsg_open_end()
 * @needle: string to look for in the text of each record
 * @line: the text of the first record that has @needle, NUL-terminated and
 *        cut to @len; left alone when no record has it
 * @len: size of @line
 *
 * Reads every record up to the end of the log, also after a match, so that
 * the next call starts after them.  Records the kernel overwrote before
 * they were read are skipped.
 *
 * Return: 1 if a record has @needle, 0 if none has, or -errno.
 */
int lab_kmsg_find(int fd, const char *needle, char *line, size_t len);

/**
 * lab_map_aligned() - map anonymous memory at an aligned address
 * @len: bytes to map; the VMA is exactly this long
 * @align: power of two the address is placed after
 * @off: bytes past a multiple of @align at which the mapping starts
 * @prot: PROT_* of the mapping
 * @flags: MAP_PRIVATE or MAP_SHARED (MAP_ANONYMOUS is added)
 *
 * Maps @len + @align + @off bytes and unmaps what lies outside the wanted
 * range, so that the returned address is @off past a multiple of @align.
 *
 * Return: the address, or NULL if mmap(2) failed.
 */
char *lab_map_aligned(size_t len, size_t align, size_t off, int prot,
		      int flags);

/**
 * lab_pat() - word @word of page @page of the test pattern of region @tag
 * @tag: region tag, so that pages of different regions differ
 * @page: page index within the region
 * @word: 64-bit word index within the page
 *
 * Return: the word; tag, page and word each in their own bits.
 */
static inline uint64_t lab_pat(unsigned int tag, size_t page, size_t word)
{
	return (uint64_t)tag << 48 | (uint64_t)page << 16 | word;
}

/**
 * lab_fill_pat() - write the pattern of region @tag to whole 4 KiB pages
 * @p: first page, page-aligned
 * @first: index of that page within the region
 * @nr: pages to write
 * @tag: region tag
 */
void lab_fill_pat(char *p, size_t first, size_t nr, unsigned int tag);

/**
 * lab_check_pat() - find the first word of 4 KiB pages off the pattern
 * @p: first page, page-aligned
 * @first: index of that page within the region
 * @nr: pages to check
 * @tag: region tag
 *
 * Return: the index of the first 64-bit word at @p that is not
 * lab_pat(@tag, ...), or @nr times the words per page if none differs.
 */
size_t lab_check_pat(const char *p, size_t first, size_t nr, unsigned int tag);

/**
 * lab_now_ns() - read CLOCK_MONOTONIC in nanoseconds
 *
 * Inline, so that a program timing a call with it costs the same
 * instructions as when each program had its own copy.
 *
 * Return: the time in nanoseconds.
 */
static inline long long lab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif /* LAB_H */
