// SPDX-License-Identifier: GPL-2.0
/*
 * lab.c - helpers shared by the foliobatch lab's guest programs.
 * See include/lab.h for the interface.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lab.h"

#define PM_PFN_MASK	((1ULL << 55) - 1)
#define PM_PRESENT	(1ULL << 63)

ssize_t lab_read_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd, err;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			close(fd);
			return -err;
		}
		if (!n)
			break;
		len += n;
	}
	buf[len] = '\0';
	close(fd);
	return len;
}

int lab_write_file(const char *path, const char *val)
{
	size_t len = strlen(val);
	ssize_t n;
	int fd, err;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	err = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -err;
	return (size_t)n == len ? 0 : -EIO;
}

int lab_read_ulong(const char *path, unsigned long *val)
{
	char buf[64], *end;
	ssize_t n;

	n = lab_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	if (!isdigit((unsigned char)buf[0]))
		return -EINVAL;
	errno = 0;
	*val = strtoul(buf, &end, 10);
	if (errno)
		return -errno;
	return 0;
}

/*
 * The number after "@name@sep" at the start of a line of @path, -ENOENT if
 * no line has it, -E2BIG if the file did not fit the buffer, or -errno.
 */
static long long lab_field(const char *path, const char *name, char sep)
{
	size_t len = strlen(name);
	char buf[16384], *line;
	ssize_t n;

	n = lab_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	if ((size_t)n == sizeof(buf) - 1)
		return -E2BIG;
	for (line = buf; line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, name, len) && line[len] == sep)
			return strtoll(line + len + 1, NULL, 10);
	}
	return -ENOENT;
}

long lab_status_kb(const char *field)
{
	return lab_field("/proc/self/status", field, ':');
}

long lab_meminfo_kb(const char *field)
{
	return lab_field("/proc/meminfo", field, ':');
}

long long lab_vmstat(const char *name)
{
	return lab_field("/proc/vmstat", name, ' ');
}

bool lab_path_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

bool lab_have_swap(void)
{
	char buf[512], *nl;

	if (lab_read_file("/proc/swaps", buf, sizeof(buf)) <= 0)
		return false;
	nl = strchr(buf, '\n');
	return nl && strchr(nl + 1, '/');
}

int lab_is_mounted(const char *dir, const char *fstype)
{
	char line[1024], mnt[512], type[64];
	int found = 0;
	FILE *f;

	f = fopen("/proc/mounts", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %511s %63s", mnt, type) != 2)
			continue;
		if (!strcmp(mnt, dir) && !strcmp(type, fstype)) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

int lab_pagemap_pfn(int pagemap_fd, const void *addr, uint64_t *pfn)
{
	off_t off = (uintptr_t)addr / getpagesize() * sizeof(uint64_t);
	uint64_t entry;
	ssize_t n;

	n = pread(pagemap_fd, &entry, sizeof(entry), off);
	if (n < 0)
		return -errno;
	if (n != sizeof(entry))
		return -EIO;
	if (!(entry & PM_PRESENT))
		return -ENOENT;
	*pfn = entry & PM_PFN_MASK;
	return *pfn ? 0 : -EPERM;
}

int lab_kpageflags(int kpageflags_fd, uint64_t pfn, uint64_t *flags)
{
	ssize_t n;

	n = pread(kpageflags_fd, flags, sizeof(*flags), pfn * sizeof(*flags));
	if (n < 0)
		return -errno;
	return n == sizeof(*flags) ? 0 : -EIO;
}

int lab_pagemap_read(int pagemap_fd, const void *addr, size_t nr,
		     uint64_t *entries)
{
	off_t off = (uintptr_t)addr / getpagesize() * sizeof(uint64_t);
	size_t len = nr * sizeof(uint64_t), done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(pagemap_fd, (char *)entries + done, len - done,
			  off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		done += n;
	}
	return 0;
}

int lab_folio_mapped_size(int pagemap_fd, int kpageflags_fd, const void *addr,
			  size_t max, size_t *size)
{
	const uint64_t head = 1ULL << LAB_KPF_COMPOUND_HEAD;
	const uint64_t tail = 1ULL << LAB_KPF_COMPOUND_TAIL;
	size_t page = getpagesize(), nr = max / page, i;
	uint64_t *pm, flags, pfn;
	int err;

	*size = 0;
	if (!nr)
		return -EINVAL;
	pm = malloc(nr * sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	err = lab_pagemap_read(pagemap_fd, addr, nr, pm);
	if (err)
		goto out;
	err = -ENOENT;
	if (!(pm[0] & LAB_PM_PRESENT))
		goto out;
	err = -EPERM;
	pfn = pm[0] & LAB_PM_PFN_MASK;
	if (!pfn)
		goto out;
	err = lab_kpageflags(kpageflags_fd, pfn, &flags);
	if (err)
		goto out;
	if (flags & tail)
		goto out;		/* err is 0, *size is 0 */
	*size = page;
	if (!(flags & head))
		goto out;
	for (i = 1; i < nr; i++) {
		if (!(pm[i] & LAB_PM_PRESENT) ||
		    (pm[i] & LAB_PM_PFN_MASK) != pfn + i)
			break;
		err = lab_kpageflags(kpageflags_fd, pfn + i, &flags);
		if (err)
			goto out;
		if (!(flags & tail))
			break;
		*size += page;
	}
out:
	free(pm);
	return err;
}

int lab_knob_save(struct lab_knob *knob, const char *path)
{
	char buf[256], *start = buf, *end;
	ssize_t n;

	knob->valid = false;
	if (strlen(path) >= sizeof(knob->path))
		return -ENAMETOOLONG;
	strcpy(knob->path, path);
	n = lab_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	/* "always [madvise] never": keep the selected choice only. */
	end = strchr(buf, '[');
	if (end) {
		start = end + 1;
		end = strchr(start, ']');
		if (!end)
			return -EINVAL;
	} else {
		end = buf + n;
		while (end > buf && isspace((unsigned char)end[-1]))
			end--;
	}
	if ((size_t)(end - start) >= sizeof(knob->saved))
		return -E2BIG;
	memcpy(knob->saved, start, end - start);
	knob->saved[end - start] = '\0';
	knob->valid = true;
	return 0;
}

int lab_knob_restore(const struct lab_knob *knob)
{
	if (!knob->valid)
		return 0;
	return lab_write_file(knob->path, knob->saved);
}

int lab_thp_save(struct lab_thp *thp)
{
	char path[512];
	struct dirent *de;
	int err = 0;
	DIR *dir;

	thp->nr = 0;
	err = lab_knob_save(&thp->top, LAB_THP_DIR "/enabled");
	if (err)
		return err;
	dir = opendir(LAB_THP_DIR);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(path, sizeof(path), LAB_THP_DIR "/%s/enabled",
			 de->d_name);
		/* Sizes only the page cache can use have no 'enabled'. */
		if (access(path, F_OK))
			continue;
		if (thp->nr == LAB_THP_MAX_SIZES) {
			err = -E2BIG;
			break;
		}
		err = lab_knob_save(&thp->size[thp->nr], path);
		if (err)
			break;
		thp->nr++;
	}
	closedir(dir);
	return err;
}

int lab_thp_only(const struct lab_thp *thp, unsigned long size_kb)
{
	const struct lab_knob *want = NULL;
	char name[64];
	int i, err;

	snprintf(name, sizeof(name), "/hugepages-%lukB/enabled", size_kb);
	for (i = 0; i < thp->nr; i++) {
		const char *path = thp->size[i].path;
		size_t plen = strlen(path), nlen = strlen(name);

		if (plen >= nlen && !strcmp(path + plen - nlen, name))
			want = &thp->size[i];
	}
	if (size_kb && !want)
		return -ENOENT;
	err = lab_write_file(thp->top.path, "never");
	if (err)
		return err;
	for (i = 0; i < thp->nr; i++) {
		err = lab_write_file(thp->size[i].path, "never");
		if (err)
			return err;
	}
	return want ? lab_write_file(want->path, "always") : 0;
}

int lab_thp_restore(const struct lab_thp *thp)
{
	int i, ret, err = 0;

	for (i = 0; i < thp->nr; i++) {
		ret = lab_knob_restore(&thp->size[i]);
		if (ret && !err)
			err = ret;
	}
	ret = lab_knob_restore(&thp->top);
	return err ? err : ret;
}

static int lab_cg_path(char *buf, size_t size, const char *name,
		       const char *file)
{
	int n;

	if (file)
		n = snprintf(buf, size, LAB_CGROUP_ROOT "/%s/%s", name, file);
	else
		n = snprintf(buf, size, LAB_CGROUP_ROOT "/%s", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int lab_cg_enable_memory(void)
{
	return lab_write_file(LAB_CGROUP_ROOT "/cgroup.subtree_control",
			      "+memory");
}

int lab_cg_create(const char *name)
{
	char path[256];
	int err;

	err = lab_cg_path(path, sizeof(path), name, NULL);
	if (err)
		return err;
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int lab_cg_move(const char *name, pid_t pid)
{
	char path[256], val[32];
	int err;

	err = lab_cg_path(path, sizeof(path), name, "cgroup.procs");
	if (err)
		return err;
	snprintf(val, sizeof(val), "%d", (int)pid);
	return lab_write_file(path, val);
}

int lab_cg_memory_current(const char *name, unsigned long *bytes)
{
	char path[256];
	int err;

	err = lab_cg_path(path, sizeof(path), name, "memory.current");
	if (err)
		return err;
	return lab_read_ulong(path, bytes);
}

long lab_cg_oom_kills(const char *name)
{
	char path[256], buf[1024], *p;
	ssize_t n;
	int err;

	err = lab_cg_path(path, sizeof(path), name, "memory.events");
	if (err)
		return err;
	n = lab_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strstr(buf, "oom_kill ");
	return p ? atol(p + strlen("oom_kill ")) : -ENOENT;
}

int lab_cg_reclaim(const char *name, const char *amount)
{
	char path[256];
	int err;

	err = lab_cg_path(path, sizeof(path), name, "memory.reclaim");
	if (err)
		return err;
	return lab_write_file(path, amount);
}

int lab_cg_remove(const char *name)
{
	char path[256];
	int err, tries;

	err = lab_cg_path(path, sizeof(path), name, NULL);
	if (err)
		return err;
	for (tries = 0; tries < 200; tries++) {
		if (!rmdir(path) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(10000);
	}
	return -EBUSY;
}

int lab_uffd_open(void)
{
	int fd, dev, err;

	fd = syscall(__NR_userfaultfd,
		     O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd >= 0)
		return fd;
	err = errno;
	if (err == ENOSYS)
		return -err;
	/* The syscall may be restricted; /dev/userfaultfd is not. */
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -err;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		err = errno;
	close(dev);
	return fd < 0 ? -err : fd;
}

int lab_uffd_open_features(uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd, err;

	/* A first handshake asking for nothing reports what there is. */
	fd = lab_uffd_open();
	if (fd < 0)
		return fd;
	err = ioctl(fd, UFFDIO_API, &api) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if ((api.features & features) != features)
		return -EOPNOTSUPP;

	fd = lab_uffd_open();
	if (fd < 0)
		return fd;
	api.api = UFFD_API;
	api.features = features;
	if (ioctl(fd, UFFDIO_API, &api)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Mounts tracefs on LAB_TRACING unless it is there: 0 or -errno. */
static int lab_tracefs(void)
{
	if (!lab_path_exists(LAB_TRACING "/kprobe_events") &&
	    mount("tracefs", LAB_TRACING, "tracefs", 0, NULL))
		return -errno;
	return 0;
}

int lab_kprobe_define(const char *def)
{
	ssize_t n;
	int fd, err;

	err = lab_tracefs();
	if (err)
		return err;
	/* O_APPEND: a plain write would replace every other event. */
	fd = open(LAB_TRACING "/kprobe_events", O_WRONLY | O_APPEND);
	if (fd < 0)
		return -errno;
	n = write(fd, def, strlen(def));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

/*
 * Whether @sym is @func with only gcc's clone suffixes after it
 * (".isra.N", ".constprop.N", in any order): the clone is the function's
 * whole body under another name.  A ".cold" or ".part" piece is not.
 */
static int lab_clone_of(const char *sym, const char *func)
{
	size_t n = strlen(func);
	const char *s = sym + n;

	if (strncmp(sym, func, n) || *s != '.')
		return 0;
	while (*s == '.') {
		if (!strncmp(s, ".isra.", 6))
			s += 6;
		else if (!strncmp(s, ".constprop.", 11))
			s += 11;
		else
			return 0;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return !*s;
}

/*
 * Looks in /proc/kallsyms for the one clone of @func that gcc made in its
 * place (lab_clone_of()) and writes its name to @out.  Returns 0, -ENOENT
 * when there is none, or -ENOTUNIQ when there are several (a probe on one
 * would miss the calls of the others).
 */
static int lab_kprobe_clone(const char *func, char *out, size_t size)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], type, sym[256];
	int found = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %c %255s", &type, sym) != 2)
			continue;
		if ((type != 't' && type != 'T') || !lab_clone_of(sym, func))
			continue;
		if (found++)
			break;
		snprintf(out, size, "%s", sym);
	}
	fclose(f);
	return found == 1 ? 0 : found ? -ENOTUNIQ : -ENOENT;
}

/* Defines the kprobe event lab/@event on @sym; -ENOENT: no such symbol. */
static int lab_kprobe_define_on(const char *event, const char *sym)
{
	char def[512];
	int err;

	snprintf(def, sizeof(def), "p:lab/%s %s", event, sym);
	err = lab_kprobe_define(def);
	/* the kernel answers EINVAL or ENOENT for a symbol it cannot probe */
	return err == -EINVAL ? -ENOENT : err;
}

int lab_kprobe_add(const char *event, const char *func)
{
	char path[256], clone[256];
	int err;

	err = lab_tracefs();
	if (err)
		return err;
	snprintf(path, sizeof(path), LAB_TRACING "/events/lab/%s/enable", event);
	if (lab_path_exists(path))
		return 0;
	err = lab_write_file(LAB_TRACING "/tracing_on", "0");
	if (err)
		return err;
	err = lab_kprobe_define_on(event, func);
	if (err == -ENOENT && !strchr(func, '+')) {
		/*
		 * gcc may have made a clone in its place: probe that.  Not for
		 * "func+offset", whose function exists and whose offset the
		 * kernel refused (read_batch.c tries every offset of one).
		 */
		err = lab_kprobe_clone(func, clone, sizeof(clone));
		if (err)
			return err;
		err = lab_kprobe_define_on(event, clone);
	}
	return err ? err : lab_write_file(path, "1");
}

long long lab_kprobe_hits(const char *event)
{
	FILE *f = fopen(LAB_TRACING "/kprobe_profile", "r");
	char key[128], want[128];
	long long hits, misses, found = -ENOENT;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "%s", event);
	while (fscanf(f, "%127s %lld %lld", key, &hits, &misses) == 3) {
		if (!strcmp(key, want)) {
			found = hits;
			break;
		}
	}
	fclose(f);
	return found;
}

int lab_kmsg_open_end(void)
{
	int fd, err;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_END) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The longest record a read of /dev/kmsg returns (CONSOLE_EXT_LOG_MAX). */
#define LAB_KMSG_MAX	8192

int lab_kmsg_find(int fd, const char *needle, char *line, size_t len)
{
	char rec[LAB_KMSG_MAX + 1], *text, *end;
	int found = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, LAB_KMSG_MAX);
		if (n < 0 && errno == EAGAIN)
			return found;
		/* EPIPE: records were overwritten; the next read goes on */
		if (n < 0 && (errno == EPIPE || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return found;
		rec[n] = '\0';
		/* "prio,seq,usec,flags;text\n", then " KEY=value" lines */
		text = strchr(rec, ';');
		text = text ? text + 1 : rec;
		end = strchr(text, '\n');
		if (end)
			*end = '\0';
		if (!found && strstr(text, needle)) {
			found = 1;
			if (len)
				snprintf(line, len, "%s", text);
		}
	}
}

char *lab_map_aligned(size_t len, size_t align, size_t off, int prot,
		      int flags)
{
	size_t total = len + align + off;
	char *map, *p;

	map = mmap(NULL, total, prot, flags | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)map + align - 1) & ~(uintptr_t)(align - 1));
	p += off;
	if (p > map)
		munmap(map, p - map);
	munmap(p + len, map + total - (p + len));
	return p;
}

#define LAB_WORDS	(4096 / sizeof(uint64_t))

void lab_fill_pat(char *p, size_t first, size_t nr, unsigned int tag)
{
	uint64_t *w = (uint64_t *)p;
	size_t i;

	for (i = 0; i < nr * LAB_WORDS; i++)
		w[i] = lab_pat(tag, first + i / LAB_WORDS, i % LAB_WORDS);
}

size_t lab_check_pat(const char *p, size_t first, size_t nr, unsigned int tag)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < nr * LAB_WORDS; i++)
		if (w[i] != lab_pat(tag, first + i / LAB_WORDS, i % LAB_WORDS))
			break;
	return i;
}
