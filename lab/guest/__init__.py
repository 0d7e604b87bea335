# SPDX-License-Identifier: GPL-2.0-only
"""Guest: running kernels under QEMU with a plan, and reading what they print.

image (the initramfs), run (one QEMU boot), suites (the test plans),
workloads (the bench's workloads and their plan), results (KTAP and the
console's kernel reports), testboot (a test boot and what fails it) and
cache (stored stock boots).  Imports core and kernel.
"""
