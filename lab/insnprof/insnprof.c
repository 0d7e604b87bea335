// SPDX-License-Identifier: GPL-2.0
/*
 * insnprof: a QEMU TCG plugin that counts the guest instructions executed
 * per translation block, for 'lab profile'.
 *
 * Each translated block at or above a start address (the kernel's half of
 * the address space by default) gets a counter that an inline add bumps
 * every time the block is entered.  At exit the plugin writes one line per
 * block, "vaddr insns execs tlb asid", to the file named by out=PATH, where
 * tlb is the number of TLB maintenance instructions in the block: TLBI on
 * aarch64; INVLPG, INVPCID and writes to CR3 on x86_64.  asid is the number
 * of them that invalidate a whole address space: TLBI ASIDE1, ASIDE1IS or
 * ASIDE1OS on aarch64, which is what flush_tlb_mm() issues (0 on x86_64).
 * Under -icount a TLBI costs one instruction like any other, so these are
 * the counts that instruction-time cannot show.  Under
 * '-icount shift=0,sleep=off' the vCPUs run one at a time on one host
 * thread, so the counts are exact and repeat from run to run; the lab then
 * maps blocks to kernel symbols (execs of the block that starts a function
 * are its calls).
 *
 * Only the few entry points of QEMU's plugin interface (API version 1, as
 * in QEMU 7.2) that this file uses are declared here, so that it builds
 * with nothing but a C compiler.
 *
 * Arguments: out=PATH (required), min=ADDR (hex; default
 * 0xffff000000000000).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;

struct qemu_info {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	/* more fields follow that insnprof does not read */
};

struct qemu_plugin_tb;

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
struct qemu_plugin_insn;
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb,
				    void *userdata);
void qemu_plugin_outs(const char *string);

EXPORT int qemu_plugin_version = 1;

struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t tlb;		/* TLB maintenance instructions in the block */
	uint64_t asid;		/* of them, TLBI ASIDE1* */
	uint64_t execs;		/* bumped by the inline op */
	struct block *next;
};

static struct block *blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t min_vaddr = 0xffff000000000000ULL;
static char *out_path;
static bool aarch64;

static uint32_t a64_insn(const uint8_t *p, size_t n)
{
	return n == 4 ? p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24 : 0;
}

/* TLBI <op>{, <Xt>}: SYS #op1, C8, Cm, #op2 */
static bool is_tlbi(const uint8_t *p, size_t n)
{
	return (a64_insn(p, n) & 0xfff8f000) == 0xd5088000;
}

/* TLBI ASIDE1OS, ASIDE1IS, ASIDE1: op1 0, CRm 1, 3 or 7, op2 2 */
static bool is_tlbi_aside1(const uint8_t *p, size_t n)
{
	uint32_t insn = a64_insn(p, n);
	uint32_t crm = (insn >> 8) & 0xf;

	return (insn & 0xfffff0e0) == 0xd5088040 &&
	       (crm == 1 || crm == 3 || crm == 7);
}

/* INVLPG m (0f 01 /7), INVPCID (66 0f 38 82), MOV CR3, r (0f 22 /3) */
static bool is_x86_tlb(const uint8_t *p, size_t n)
{
	size_t i = 0;

	/* legacy and REX prefixes */
	while (i < n && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 ||
			 p[i] == 0xf3 || p[i] == 0x2e || p[i] == 0x3e ||
			 p[i] == 0x26 || p[i] == 0x36 || p[i] == 0x64 ||
			 p[i] == 0x65 || (p[i] & 0xf0) == 0x40))
		i++;
	if (i + 3 > n || p[i] != 0x0f)
		return false;
	if (p[i + 1] == 0x01)
		return ((p[i + 2] >> 3) & 7) == 7 && (p[i + 2] >> 6) != 3;
	if (p[i + 1] == 0x22)
		return ((p[i + 2] >> 3) & 7) == 3;
	return p[i + 1] == 0x38 && p[i + 2] == 0x82;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	if (vaddr < min_vaddr)
		return;
	/*
	 * A block translated again (after a TLB or code-buffer flush) gets a
	 * new counter; the lab adds up the counters of one address.
	 */
	b = calloc(1, sizeof(*b));
	if (!b)
		abort();
	b->vaddr = vaddr;
	b->insns = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < b->insns; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *p = qemu_plugin_insn_data(insn);
		size_t n = qemu_plugin_insn_size(insn);

		b->tlb += aarch64 ? is_tlbi(p, n) : is_x86_tlb(p, n);
		b->asid += aarch64 && is_tlbi_aside1(p, n);
	}
	pthread_mutex_lock(&lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &b->execs, 1);
}

static void write_counts(qemu_plugin_id_t id, void *userdata)
{
	FILE *f = fopen(out_path, "w");
	struct block *b;

	if (!f) {
		qemu_plugin_outs("insnprof: cannot open the output file\n");
		return;
	}
	pthread_mutex_lock(&lock);
	for (b = blocks; b; b = b->next)
		if (b->execs)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64
				" %" PRIu64 "\n", b->vaddr, b->insns, b->execs,
				b->tlb, b->asid);
	pthread_mutex_unlock(&lock);
	fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info *info,
			       int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
		else if (!strncmp(argv[i], "min=", 4))
			min_vaddr = strtoull(argv[i] + 4, NULL, 16);
		else
			return -1;
	}
	if (!out_path || !info->system_emulation)
		return -1;
	aarch64 = !strcmp(info->target_name, "aarch64");
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_counts, NULL);
	return 0;
}
