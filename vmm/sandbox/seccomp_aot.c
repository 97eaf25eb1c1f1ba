/* Picking and finishing a seccomp program compiled at build time (seccomp_aot.h). */
#include "seccomp_aot.h"

unsigned seccomp_aot_needs_index(const struct seccomp_needs *needs)
{
	return (needs->user_net ? 1u : 0) | (needs->tap ? 2u : 0) | (needs->io_uring ? 4u : 0) |
	       (needs->control_socket ? 8u : 0) | (needs->vhost_user ? 16u : 0);
}

/* Where libseccomp compares an argument's low word with a constant. */
static int is_compare(const struct sock_filter *insn)
{
	return insn->code == (BPF_JMP | BPF_JEQ | BPF_K);
}

bool seccomp_aot_fits(const struct seccomp_aot_program *prog, size_t cap)
{
	if (!prog || !prog->insns || prog->len == 0 || prog->len > cap)
		return false;
	size_t slots = 0;
	for (size_t i = 0; i < prog->len; i++)
		slots += is_compare(&prog->insns[i]) && prog->insns[i].k == SECCOMP_AOT_PID;
	return slots == prog->pid_slots;
}

long seccomp_aot_patch(const struct seccomp_aot_program *prog, uint32_t pid,
		       struct sock_filter *out, size_t cap)
{
	if (!seccomp_aot_fits(prog, cap))
		return -1;
	for (size_t i = 0; i < prog->len; i++) {
		out[i] = prog->insns[i];
		if (is_compare(&out[i]) && out[i].k == SECCOMP_AOT_PID)
			out[i].k = pid;
	}
	return (long)prog->len;
}
