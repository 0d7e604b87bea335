// SPDX-License-Identifier: GPL-2.0
/*
 * switches.c - tests of the foliobatch runtime switches in
 * /sys/kernel/mm/foliobatch and of the foliobatch= boot parameter.
 *
 * LAB_FLAVOUR must be "stock" or "patched".  On stock only the absence of
 * the directory is checked; on patched the switches themselves are.  On
 * patched, LAB_EXPECT_SWITCHES must hold what every switch the kernel
 * shows reads at boot ("pt_reclaim=0,mremap_batch=1,..."), as the lab
 * computes it from the command line it boots the kernel with; a known
 * switch it does not name must not be shown (its feature is not built on
 * this arch).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "lab.h"
#include "lab_test.h"

#define FB_DIR	"/sys/kernel/mm/foliobatch"
#define FB_NR	11

static const char * const fb_names[FB_NR] = {
	"pt_reclaim", "mremap_batch", "referenced_batch", "unmap_batch",
	"mglru_young_batch", "reclaim_tlb_batch", "mprotect_batch",
	"contpte_early_exit", "mincore_batch", "mbind_batch",
	"anon_unmap_batch",
};

/* Returns 0 or 1 if the switch reads exactly "0\n" or "1\n", else -1. */
static int fb_read(const char *name)
{
	char path[128], buf[16];

	snprintf(path, sizeof(path), FB_DIR "/%s", name);
	if (lab_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	if (!strcmp(buf, "0\n"))
		return 0;
	if (!strcmp(buf, "1\n"))
		return 1;
	return -1;
}

/* One write(2) of @len bytes: the count written or -errno. */
static ssize_t fb_write(const char *name, const char *val, size_t len)
{
	char path[128];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), FB_DIR "/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	err = errno;
	close(fd);
	return n < 0 ? -err : n;
}

static int fb_index(const char *name)
{
	int i;

	for (i = 0; i < FB_NR; i++)
		if (!strcmp(name, fb_names[i]))
			return i;
	return -1;
}

/**
 * fb_expected() - read what the lab expects the switches to read at boot
 * @expect: filled with 0 or 1 for every switch the kernel is to show, -1
 *	for the others, in fb_names order
 *
 * The lab computes the values from the kernel command line it boots with
 * and the switches' defaults, and passes them in LAB_EXPECT_SWITCHES as
 * "<name>=<0|1>,..." naming every switch the arch's kernel shows exactly
 * once (lab/guest/suites.py expected_switches()).  Nothing is derived from
 * /proc/cmdline here: a parameter that never reached the kernel must show
 * as a mismatch.
 *
 * Return: 0, -ENOENT if the variable is not set, -EINVAL if it names an
 * unknown switch, a switch twice, a value other than 0 or 1, or none.
 */
static int fb_expected(int expect[FB_NR])
{
	const char *env = getenv("LAB_EXPECT_SWITCHES");
	char buf[512], *rest, *item, *eq;
	int i, nr = 0;

	for (i = 0; i < FB_NR; i++)
		expect[i] = -1;
	if (!env)
		return -ENOENT;
	if (strlen(env) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, env);
	rest = buf;
	while ((item = strsep(&rest, ",")) != NULL) {
		eq = strchr(item, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		i = fb_index(item);
		if (i < 0 || expect[i] >= 0)
			return -EINVAL;
		if (!strcmp(eq + 1, "0"))
			expect[i] = 0;
		else if (!strcmp(eq + 1, "1"))
			expect[i] = 1;
		else
			return -EINVAL;
		nr++;
	}
	return nr ? 0 : -EINVAL;
}

/* Proves a stock kernel has no switches directory at all. */
TEST(stock_has_no_switches)
{
	struct stat st;
	int ret, err;

	LAB_REQUIRE_FLAVOUR("stock", "variant for the stock kernel");
	ret = stat(FB_DIR, &st);
	err = errno;
	ASSERT_EQ(-1, ret) TH_LOG("%s exists on stock", FB_DIR);
	ASSERT_EQ(ENOENT, err);
}

FIXTURE(fb) {
	/* What LAB_EXPECT_SWITCHES says: -1 for a switch not shown. */
	int expect[FB_NR];
	int initial[FB_NR];
};

/* Skips on stock; records every shown switch's value for the teardown. */
FIXTURE_SETUP(fb)
{
	int i, ret;

	for (i = 0; i < FB_NR; i++)
		self->initial[i] = -1;
	LAB_REQUIRE_FLAVOUR("patched", "variant for the patched kernel");
	ret = fb_expected(self->expect);
	ASSERT_EQ(0, ret)
		TH_LOG("LAB_EXPECT_SWITCHES %s: the lab's plan must export every shown switch's expected value, e.g. \"pt_reclaim=0,mremap_batch=1,...\"",
		       ret == -ENOENT ? "is not set" : "is malformed");
	for (i = 0; i < FB_NR; i++) {
		if (self->expect[i] < 0)
			continue;
		self->initial[i] = fb_read(fb_names[i]);
		ASSERT_LE(0, self->initial[i])
			TH_LOG("%s/%s missing or not \"0\\n\"/\"1\\n\"",
			       FB_DIR, fb_names[i]);
	}
}

FIXTURE_TEARDOWN(fb)
{
	const char *val;
	int i;

	for (i = 0; i < FB_NR; i++) {
		if (self->initial[i] < 0)
			continue;
		val = self->initial[i] ? "1" : "0";
		EXPECT_EQ(1, fb_write(fb_names[i], val, 1))
			TH_LOG("cannot restore %s", fb_names[i]);
		EXPECT_EQ(self->initial[i], fb_read(fb_names[i]));
	}
}

/*
 * Proves the directory holds exactly the documented switches this arch's
 * kernel builds: every entry is a known name that LAB_EXPECT_SWITCHES
 * names, none repeats, and every switch it names is there.
 */
TEST_F(fb, entries)
{
	bool seen[FB_NR] = { false };
	struct dirent *de;
	int i, nr = 0;
	DIR *dir;

	dir = opendir(FB_DIR);
	ASSERT_NE(NULL, dir);
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		i = fb_index(de->d_name);
		ASSERT_LE(0, i) TH_LOG("unexpected entry %s", de->d_name);
		ASSERT_LE(0, self->expect[i])
			TH_LOG("%s is shown, but its feature is not built on this arch",
			       de->d_name);
		ASSERT_FALSE(seen[i]) TH_LOG("%s listed twice", de->d_name);
		seen[i] = true;
		nr++;
	}
	closedir(dir);
	for (i = 0; i < FB_NR; i++) {
		if (self->expect[i] >= 0 && !seen[i])
			ksft_print_msg("%s is expected but not shown\n",
				       fb_names[i]);
		EXPECT_EQ(self->expect[i] >= 0, seen[i]);
	}
	ksft_print_msg("%d switches shown\n", nr);
}

/*
 * Proves every switch reads at boot what the lab expects from the kernel
 * command line it booted with (foliobatch=, or the defaults without it):
 * the expected values come from the host in LAB_EXPECT_SWITCHES, so a
 * parameter the kernel never received, or ignored, fails here.  Fails
 * when the variable is missing or malformed.
 */
TEST_F(fb, boot_values)
{
	const int *expect = self->expect;
	char cmdline[4096];
	int i;

	if (lab_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) > 0)
		ksft_print_msg("command line: %s", cmdline);
	for (i = 0; i < FB_NR; i++) {
		if (expect[i] < 0)
			continue;
		ksft_print_msg("%s=%d (expected %d)\n", fb_names[i],
			       self->initial[i], expect[i]);
		EXPECT_EQ(expect[i], self->initial[i])
			TH_LOG("%s reads %d at boot, the lab expects %d",
			       fb_names[i], self->initial[i], expect[i]);
	}
}

/*
 * Proves the booleans kstrtobool() accepts ("0", "1\n", "n", "y", "off",
 * "on") are accepted and read back as 0 or 1.
 */
TEST_F(fb, write_valid)
{
	static const struct { const char *in; int out; } good[] = {
		{ "0", 0 }, { "1\n", 1 }, { "n", 0 }, { "y", 1 },
		{ "off", 0 }, { "on", 1 },
	};
	const char *sw;
	unsigned int g;
	int i;

	for (i = 0; i < FB_NR; i++) {
		if (self->expect[i] < 0)
			continue;
		sw = fb_names[i];
		for (g = 0; g < ARRAY_SIZE(good); g++) {
			size_t len = strlen(good[g].in);

			ASSERT_EQ((ssize_t)len, fb_write(sw, good[g].in, len))
				TH_LOG("%s <- \"%s\"", sw, good[g].in);
			ASSERT_EQ(good[g].out, fb_read(sw))
				TH_LOG("%s after \"%s\"", sw, good[g].in);
		}
	}
}

/*
 * Proves values kstrtobool() rejects fail with EINVAL and leave the switch
 * as it was, from both 0 and 1.  An empty write never reaches the sysfs
 * store, so for "" only the unchanged value is checked.
 */
TEST_F(fb, write_invalid)
{
	static const char * const bad[] = {
		"2", "", "-1", " 1", "x", "o", "ox",
	};
	const char *sw;
	unsigned int b;
	ssize_t ret;
	int i, v;

	/* Every switch, starting from 0 and then from 1. */
	for (i = 0; i < 2 * FB_NR; i++) {
		if (self->expect[i / 2] < 0)
			continue;
		sw = fb_names[i / 2];
		v = i % 2;
		ASSERT_EQ(1, fb_write(sw, v ? "1" : "0", 1)) TH_LOG("%s", sw);
		for (b = 0; b < ARRAY_SIZE(bad); b++) {
			ret = fb_write(sw, bad[b], strlen(bad[b]));
			if (bad[b][0]) {
				EXPECT_EQ(-EINVAL, ret)
					TH_LOG("%s <- \"%s\"", sw, bad[b]);
			} else {
				EXPECT_TRUE(ret == 0 || ret == -EINVAL)
					TH_LOG("%s <- \"\": %zd", sw, ret);
			}
			ASSERT_EQ(v, fb_read(sw))
				TH_LOG("%s changed by \"%s\"", sw, bad[b]);
		}
	}
}

/* Proves a name that is not a switch cannot be opened for writing. */
TEST_F(fb, no_such_switch)
{
	int fd = open(FB_DIR "/no_such_switch", O_WRONLY);
	int err = errno;

	if (fd >= 0)
		close(fd);
	ASSERT_EQ(-1, fd);
	ASSERT_EQ(ENOENT, err);
}

TEST_HARNESS_MAIN
