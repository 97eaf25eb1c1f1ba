/*
 * startup-floor: the least a KVM VMM must do to get a serial byte out of a guest, timed. It
 * opens /dev/kvm, creates a VM with one memory slot (at 0: 2 MiB, or --memory MIB, the size the
 * VMM it is compared with gives its guest) and one vCPU in 32-bit
 * protected mode (a PVH entry: flat segments, paging off), and runs the four instructions of
 * examples/tiny-guest.S, embedded below, until their byte to COM1 (port 0x3f8) comes out; that
 * byte goes to stdout. No irqchip, PIT, CPUID, tables, files, threads or seccomp: a baseline
 * for minivmm's start-up (examples/bench-boot.sh --startup), not a VMM.
 *
 *   startup-floor [--memory MIB] [--linux-kvm]
 *                            run it; exit status: the byte the guest writes to port 0xf4
 *   --linux-kvm              also ask KVM for what minivmm asks for before it can boot stock
 *                            Linux: the TSS and identity-map addresses, the in-kernel irqchip
 *                            and PIT (kvm step), KVM's supported CPUID set on the vCPU (vcpus
 *                            step). The guest needs none of it; the figure says how much of a
 *                            VMM's start-up is the host kernel's, not the VMM's own.
 *   startup-floor --code     print the embedded guest code (raw bytes) and exit
 *
 * On stderr, when the byte is out, the same kind of line as minivmm --timing:
 *   startup-floor: startup-us: exec=U kvm=U memory=U vcpus=U guest=U total=U from=exec|main
 * (microseconds, three decimals: exec from the CLOCK_MONOTONIC nanoseconds in MINIVMM_T0_NS,
 * set by the launcher just before exec, else "-" and the total starts at main).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MEM_SIZE_MIN 0x200000ULL /* 2 MiB: the guest is linked at 1 MiB */
#define MEM_SIZE_MAX (64ULL << 30)
#define GUEST_ADDR   0x100000

/* tiny-guest.S: mov $0x3f8,%dx; mov $0x21,%al; out %al,(%dx); out %al,$0xf4; 1: hlt; jmp 1b */
static const uint8_t guest_code[] = {0x66, 0xba, 0xf8, 0x03, 0xb0, 0x21,
				     0xee, 0xe6, 0xf4, 0xf4, 0xeb, 0xfd};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(125);
}

static void us(char *buf, size_t len, int64_t ns)
{
	snprintf(buf, len, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* --linux-kvm: the VM-wide objects (as arch/x86/machine.c creates them). */
static void linux_vm_setup(int vm)
{
	uint64_t identity_map = 0xfffbc000;
	struct kvm_pit_config pit = {.flags = KVM_PIT_SPEAKER_DUMMY};
	if (ioctl(vm, KVM_SET_TSS_ADDR, 0xfffbd000) < 0 ||
	    ioctl(vm, KVM_SET_IDENTITY_MAP_ADDR, &identity_map) < 0)
		die("KVM_SET_TSS_ADDR");
	if (ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0)
		die("KVM_CREATE_IRQCHIP");
	if (ioctl(vm, KVM_CREATE_PIT2, &pit) < 0)
		die("KVM_CREATE_PIT2");
}

/* --linux-kvm: KVM's supported CPUID onto the vCPU, unchanged (minivmm adjusts a few leaves). */
static void linux_vcpu_setup(int kvm, int vcpu)
{
	enum { MAX_ENTRIES = 256 };
	static struct {
		struct kvm_cpuid2 head;
		struct kvm_cpuid_entry2 entries[MAX_ENTRIES];
	} cpuid;
	cpuid.head.nent = MAX_ENTRIES;
	if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &cpuid) < 0)
		die("KVM_GET_SUPPORTED_CPUID");
	if (ioctl(vcpu, KVM_SET_CPUID2, &cpuid) < 0)
		die("KVM_SET_CPUID2");
}

int main(int argc, char **argv)
{
	int64_t t_main = now_ns();
	if (argc == 2 && !strcmp(argv[1], "--code"))
		return fwrite(guest_code, sizeof(guest_code), 1, stdout) == 1 ? 0 : 125;
	/* The slot's size matters to the comparison: KVM's cost of a memory slot grows with it
	 * (its per-page metadata), and the VMM compared maps the guest RAM it was asked for. */
	unsigned long long mem_size = MEM_SIZE_MIN;
	int linux_kvm = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--linux-kvm")) {
			linux_kvm = 1;
		} else if (!strcmp(argv[i], "--memory") && i + 1 < argc) {
			const char *v = argv[++i];
			char *e = NULL;
			unsigned long long mib = strtoull(v, &e, 10);
			mem_size = mib << 20;
			if (!e || *e || v[0] < '0' || v[0] > '9' || mib > (MEM_SIZE_MAX >> 20) ||
			    mem_size < MEM_SIZE_MIN) {
				fprintf(stderr, "startup-floor: --memory takes MiB, 2 to %llu\n",
					MEM_SIZE_MAX >> 20);
				return 2;
			}
		} else {
			fprintf(stderr,
				"usage: startup-floor [--code | [--memory MIB] [--linux-kvm]]\n");
			return 2;
		}
	}
	/* exec time only from a plain decimal timestamp at or before main */
	const char *t0s = getenv("MINIVMM_T0_NS");
	char *end = NULL;
	long long t0 = t0s && *t0s >= '0' && *t0s <= '9' ? strtoll(t0s, &end, 10) : -1;
	int from_exec = end && !*end && t0 >= 0 && t0 <= t_main;

	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("/dev/kvm");
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	int64_t t_kvm = now_ns();

	uint8_t *mem = mmap(NULL, (size_t)mem_size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	memcpy(mem + GUEST_ADDR, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region slot = {.slot = 0,
						   .guest_phys_addr = 0,
						   .memory_size = mem_size,
						   .userspace_addr = (uintptr_t)mem};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &slot) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	int64_t t_mem = now_ns();
	/* After the memory slot, as minivmm orders it: a slot added after these took 4-10 ms on
	 * the development VMs (KVM's memslot update then waits for its readers). */
	if (linux_kvm)
		linux_vm_setup(vm);
	int64_t t_setup = now_ns(); /* charged to the kvm step */

	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU");
	if (linux_kvm)
		linux_vcpu_setup(kvm, vcpu);
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size <= 0)
		die("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run =
	    mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run");
	struct kvm_sregs sregs;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	/* PVH entry state: flat 4 GiB segments, 32-bit code, protected mode, paging off. */
	struct kvm_segment seg = {.base = 0,
				  .limit = 0xffffffff,
				  .selector = 0x10,
				  .type = 0x3,
				  .present = 1,
				  .db = 1,
				  .s = 1,
				  .g = 1};
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg;
	seg.selector = 0x08;
	seg.type = 0xb;
	sregs.cs = seg;
	sregs.cr0 = 0x11; /* PE | ET */
	sregs.cr4 = 0;
	sregs.efer = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		die("KVM_SET_SREGS");
	struct kvm_regs regs = {.rip = GUEST_ADDR, .rflags = 2};
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_REGS");
	int64_t t_vcpu = now_ns();

	int64_t t_byte = 0;
	for (;;) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0)
			die("KVM_RUN");
		if (run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
		    run->io.size != 1) {
			fprintf(stderr, "startup-floor: unexpected exit %u\n", run->exit_reason);
			return 125;
		}
		uint8_t byte = *((uint8_t *)run + run->io.data_offset);
		if (run->io.port == 0xf4)
			return byte;
		if (run->io.port != 0x3f8 || t_byte)
			continue;
		if (write(STDOUT_FILENO, &byte, 1) != 1)
			die("write");
		t_byte = now_ns();
		char e[32] = "-", k[32], m[32], v[32], g[32], tot[32];
		if (from_exec)
			us(e, sizeof(e), t_main - t0);
		us(k, sizeof(k), t_kvm - t_main + t_setup - t_mem);
		us(m, sizeof(m), t_mem - t_kvm);
		us(v, sizeof(v), t_vcpu - t_setup);
		us(g, sizeof(g), t_byte - t_vcpu);
		us(tot, sizeof(tot), t_byte - (from_exec ? t0 : t_main));
		fprintf(stderr,
			"startup-floor: startup-us: exec=%s kvm=%s memory=%s vcpus=%s guest=%s "
			"total=%s "
			"from=%s first_byte=yes\n",
			e, k, m, v, g, tot, from_exec ? "exec" : "main");
	}
}
