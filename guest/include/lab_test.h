/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lab_test.h - what the foliobatch lab's guest tests share on top of the
 * kselftest harness (include it after kselftest_harness.h).  Unlike
 * lab.h's helpers, these report through the harness: they may fail or
 * skip the test that uses them.
 */
#ifndef LAB_TEST_H
#define LAB_TEST_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

#endif /* LAB_TEST_H */
