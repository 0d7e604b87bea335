/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lab_test.h - what the foliobatch lab's guest tests share on top of the
 * kselftest harness (include it after kselftest_harness.h).  Unlike
 * lab.h's helpers, these report through the harness: they may fail or
 * skip the test that uses them.
 */
#ifndef LAB_TEST_H
#define LAB_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#include "lab.h"

/**
 * lab_flavour() - the kernel the guest runs, as the lab's /init says
 *
 * Return: the environment's LAB_FLAVOUR ("stock" or "patched"), or
 * "(unset)".
 */
static inline const char *lab_flavour(void)
{
	const char *fl = getenv("LAB_FLAVOUR");

	return fl ? fl : "(unset)";
}

/**
 * lab_variant() - the kernel variant the guest runs, as the lab's /init says
 *
 * Return: the environment's LAB_VARIANT ("default", "debug" or "nosplit"),
 * or "(unset)".
 */
static inline const char *lab_variant(void)
{
	const char *v = getenv("LAB_VARIANT");

	return v ? v : "(unset)";
}

/**
 * lab_debug_kernel() - whether the guest runs a kernel of the lab's debug
 * config (configs/debug.config and <arch>-debug.config): the debug and
 * nosplit variants
 */
static inline bool lab_debug_kernel(void)
{
	return !strcmp(lab_variant(), "debug") ||
	       !strcmp(lab_variant(), "nosplit");
}

/*
 * LAB_REQUIRE_FLAVOUR(want, fmt, ...) - in a test or a FIXTURE_SETUP():
 * fails unless LAB_FLAVOUR is "stock" or "patched" (a boot without it
 * would skip every variant and prove nothing), and skips with the message
 * @fmt unless it is @want.
 */
#define LAB_REQUIRE_FLAVOUR(want, fmt, ...) do {			\
	const char *__fl = lab_flavour();				\
									\
	ASSERT_TRUE(!strcmp(__fl, "stock") || !strcmp(__fl, "patched"))	\
		TH_LOG("LAB_FLAVOUR is %s: set it to stock or patched",	\
		       __fl);						\
	if (strcmp(__fl, want))						\
		SKIP(return, fmt, ##__VA_ARGS__);			\
} while (0)

/*
 * LAB_KERNEL_VARIANTS(fixture) - the variants of a mechanism fixture: "on"
 * and "off" (a switch at 1 and at 0, on the patched kernel) and "stock"
 * (the stock kernel, which has no switch).  Each has .flavour, the
 * LAB_FLAVOUR it runs on (its setup skips the others with
 * LAB_REQUIRE_FLAVOUR()), and .value, what it writes to the switch (-1:
 * nothing).
 */
#define LAB_KERNEL_VARIANTS(fixture)					\
FIXTURE_VARIANT(fixture) {						\
	/* LAB_FLAVOUR this variant runs on. */				\
	const char *flavour;						\
	/* Value written to the switch; -1 on stock, which has none. */	\
	int value;							\
};									\
									\
FIXTURE_VARIANT_ADD(fixture, on) {					\
	.flavour = "patched",						\
	.value = 1,							\
};									\
									\
FIXTURE_VARIANT_ADD(fixture, off) {					\
	.flavour = "patched",						\
	.value = 0,							\
};									\
									\
FIXTURE_VARIANT_ADD(fixture, stock) {					\
	.flavour = "stock",						\
	.value = -1,							\
}

/*
 * gup_test's long-term pin (CONFIG_GUP_TEST, in configs/common.config),
 * from mm/gup_test.h, which is not a uapi header: PIN_LONGTERM_TEST_START
 * pins [addr, addr + size) with FOLL_LONGTERM until PIN_LONGTERM_TEST_STOP.
 */
#define GUP_TEST	"/sys/kernel/debug/gup_test"
struct pin_longterm_test {
	__u64 addr;
	__u64 size;
	__u32 flags;
};
#define PIN_LONGTERM_TEST_START	_IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP	_IO('g', 8)
#define PIN_LONGTERM_TEST_FLAG_USE_WRITE	1

/**
 * struct lab_env - what a test of one switch saves, opens and runs in
 * @switch_path: the switch, /sys/kernel/mm/foliobatch/NAME
 * @thp: the THP settings, saved by lab_env_setup()
 * @sw: the switch's value, saved where the kernel shows it
 * @shmem: the shmem_enabled knob of the folio size, saved where the test
 *	asked for it (lab_env_setup()'s @shmem)
 * @nr_modes: 2 (switch off, on) where the switch is shown, else 1 (the
 *	kernel as it is)
 * @pm_fd: /proc/self/pagemap
 * @kpf_fd: /proc/kpageflags
 * @folio: the size of the folios the test asks for, in bytes
 * @mode: what lab_env_mode() set, for messages ("NAME=1", "no switch")
 */
struct lab_env {
	const char *switch_path;
	struct lab_thp thp;
	struct lab_knob sw;
	struct lab_knob shmem;
	int nr_modes;
	int pm_fd;
	int kpf_fd;
	size_t folio;
	char mode[48];
};

/**
 * lab_env_init() - mark everything lab_env_teardown() would restore or
 * close as not taken yet
 * @env: the test's
 * @switch_path: the test's switch (NULL: lab_env_setup() names it)
 *
 * For a fixture's setup that may skip before lab_env_setup(): its
 * teardown runs all the same.
 */
static inline void lab_env_init(struct lab_env *env, const char *switch_path)
{
	env->switch_path = switch_path;
	env->sw.valid = false;
	env->shmem.valid = false;
	env->thp.top.valid = false;
	env->thp.nr = 0;
	env->pm_fd = -1;
	env->kpf_fd = -1;
}

/**
 * lab_env_setup() - save what a switch test changes, open what it reads
 * @_metadata: the harness's test
 * @env: filled in
 * @switch_path: the test's switch
 * @folio_kb: the folio size the test asks for, in kB
 * @shmem: also save the shmem_enabled knob of that size (lab_env_mode()
 *	sets it to "always")
 *
 * Fails on a kernel whose switch is not what its LAB_FLAVOUR says (the
 * patched kernel shows it, stock does not), on other than 4 KiB pages, and
 * when anything cannot be saved or opened.  Changes nothing: lab_env_mode()
 * writes the knobs in the test body, so lab_env_teardown() always runs
 * after a change.
 */
static inline void lab_env_setup(struct __test_metadata *_metadata,
				 struct lab_env *env, const char *switch_path,
				 unsigned long folio_kb, bool shmem)
{
	const char *flavour = lab_flavour();
	bool has_sw = lab_path_exists(switch_path);
	char path[128];
	int ret;

	lab_env_init(env, switch_path);
	env->folio = folio_kb * LAB_SZ_1K;

	ASSERT_EQ(4096UL, (unsigned long)getpagesize())
		TH_LOG("the test assumes 4 KiB base pages");
	if (!strcmp(flavour, "patched")) {
		ASSERT_TRUE(has_sw)
			TH_LOG("patched kernel without %s", switch_path);
	} else if (!strcmp(flavour, "stock")) {
		ASSERT_FALSE(has_sw)
			TH_LOG("stock kernel with %s", switch_path);
	} else {
		ksft_print_msg("LAB_FLAVOUR is %s: %s\n", flavour,
			       has_sw ? "switch found, testing 0 and 1" :
			       "no switch, testing the kernel as it is");
	}
	if (has_sw)
		ASSERT_EQ(0, lab_knob_save(&env->sw, switch_path));
	env->nr_modes = has_sw ? 2 : 1;
	ret = lab_thp_save(&env->thp);
	ASSERT_EQ(0, ret) TH_LOG("saving THP settings: %s", strerror(-ret));
	if (shmem) {
		snprintf(path, sizeof(path),
			 LAB_THP_DIR "/hugepages-%lukB/shmem_enabled", folio_kb);
		ASSERT_EQ(0, lab_knob_save(&env->shmem, path))
			TH_LOG("%s: this kernel has no shmem mTHP of that size",
			       path);
	}
	env->pm_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, env->pm_fd) TH_LOG("pagemap: %s", strerror(errno));
	env->kpf_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, env->kpf_fd) TH_LOG("kpageflags: %s", strerror(errno));
}

/**
 * lab_env_teardown() - write back what lab_env_setup() saved, close what it
 * opened
 * @_metadata: the harness's test
 * @env: set up by lab_env_setup() (or as far as it got)
 */
static inline void lab_env_teardown(struct __test_metadata *_metadata,
				    struct lab_env *env)
{
	EXPECT_EQ(0, lab_thp_restore(&env->thp))
		TH_LOG("cannot restore the THP settings");
	EXPECT_EQ(0, lab_knob_restore(&env->shmem))
		TH_LOG("cannot restore %s", env->shmem.path);
	EXPECT_EQ(0, lab_knob_restore(&env->sw))
		TH_LOG("cannot restore %s to %s", env->sw.path,
		       env->sw.saved);
	if (env->pm_fd >= 0)
		close(env->pm_fd);
	if (env->kpf_fd >= 0)
		close(env->kpf_fd);
}

/**
 * lab_env_switch() - set the test's switch and read it back
 * @_metadata: the harness's test
 * @env: set up by lab_env_setup() on a kernel that shows the switch
 * @m: 0 or 1
 *
 * Changes the switch only, for a test that compares both values on the
 * same memory; lab_env_mode() also sets the folio size.
 */
static inline void lab_env_switch(struct __test_metadata *_metadata,
				  struct lab_env *env, int m)
{
	char buf[16];

	ASSERT_TRUE(env->sw.valid) TH_LOG("no switch to set");
	ASSERT_EQ(0, lab_write_file(env->sw.path, m ? "1" : "0"));
	ASSERT_LT(0, lab_read_file(env->sw.path, buf, sizeof(buf)));
	ASSERT_EQ(m, atoi(buf))
		TH_LOG("%s did not take %d", env->sw.path, m);
	snprintf(env->mode, sizeof(env->mode), "%s=%d",
		 strrchr(env->sw.path, '/') + 1, m);
}

/**
 * lab_env_mode() - enter mode @m of a switch test
 * @_metadata: the harness's test
 * @env: set up by lab_env_setup()
 * @m: the switch's value, 0 or 1 (read back, lab_env_switch()); the
 *	kernel as it is where the switch is not shown (@m is then ignored)
 *
 * Also makes anonymous faults (and, with the shmem knob saved, shared
 * anonymous ones) allocate folios of the test's size only, and says so.
 */
static inline void lab_env_mode(struct __test_metadata *_metadata,
				struct lab_env *env, int m)
{
	int ret;

	if (env->sw.valid)
		lab_env_switch(_metadata, env, m);
	else
		snprintf(env->mode, sizeof(env->mode), "no switch");
	ret = lab_thp_only(&env->thp, env->folio / LAB_SZ_1K);
	ASSERT_EQ(0, ret) TH_LOG("%zu kB mTHP only: %s", env->folio / LAB_SZ_1K,
				 strerror(-ret));
	if (env->shmem.valid)
		ASSERT_EQ(0, lab_write_file(env->shmem.path, "always"));
	ksft_print_msg("%s, %zu kB folios\n", env->mode, env->folio / LAB_SZ_1K);
}

#define LAB_FB_DIR	"/sys/kernel/mm/foliobatch"

/**
 * lab_switches_set() - save and set the switches a variant names
 * @_metadata: the harness's test
 * @saved: one knob per switch; each is marked not taken first, then
 *         filled for every switch this sets
 * @names: the switches, files of LAB_FB_DIR
 * @values: the value to write to each; NULL where the kernel must not
 *          show that switch (the stock kernel's variants)
 * @n: the number of switches
 *
 * For a fixture whose variants set several switches at once.  A kernel
 * that shows a switch a NULL value says it has not, or lacks one it
 * should have, fails the test.  lab_switches_restore() undoes it.
 */
static inline void lab_switches_set(struct __test_metadata *_metadata,
				    struct lab_knob *saved,
				    const char *const *names,
				    const char *const *values, int n)
{
	char path[256];
	int i;

	for (i = 0; i < n; i++)
		saved[i].valid = false;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), LAB_FB_DIR "/%s", names[i]);
		if (!values[i]) {
			ASSERT_FALSE(lab_path_exists(path))
				TH_LOG("the stock kernel has %s", path);
			continue;
		}
		ASSERT_EQ(0, lab_knob_save(&saved[i], path))
			TH_LOG("cannot read %s", path);
		ASSERT_EQ(0, lab_write_file(path, values[i]))
			TH_LOG("cannot write %s", path);
	}
}

/**
 * lab_switches_restore() - write back what lab_switches_set() saved
 * @_metadata: the harness's test
 * @saved: the knobs lab_switches_set() filled (those not taken are left)
 * @n: the number of switches
 */
static inline void lab_switches_restore(struct __test_metadata *_metadata,
					struct lab_knob *saved, int n)
{
	int i;

	for (i = 0; i < n; i++)
		EXPECT_EQ(0, lab_knob_restore(&saved[i]))
			TH_LOG("cannot restore %s to %s", saved[i].path,
			       saved[i].saved);
}

/**
 * lab_assert_small_pages() - fail unless pages are mapped as 4 kB folios
 * @_metadata: the harness's test
 * @env: set up by lab_env_setup() (its pagemap and kpageflags)
 * @p: start of the mapping
 * @first: index of the first 4 kB page to check
 * @last: index of the page after the last one
 * @what: what the pages are, for the message
 */
static inline void lab_assert_small_pages(struct __test_metadata *_metadata,
					  const struct lab_env *env,
					  const char *p, size_t first,
					  size_t last, const char *what)
{
	size_t pg, size;

	for (pg = first; pg < last; pg++) {
		ASSERT_EQ(0, lab_folio_mapped_size(env->pm_fd, env->kpf_fd,
						   p + pg * 4096, 2 * 4096,
						   &size));
		ASSERT_EQ(4096UL, size)
			TH_LOG("%s: page %zu is in a folio of %zu bytes, not a 4 kB page",
			       what, pg, size);
	}
}

#endif /* LAB_TEST_H */
