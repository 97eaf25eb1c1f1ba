/* Snapshot files (vmm/snapshot/snapshot_files.c, vmm/snapshot/snapshot_format.c): what is written
 * loads back unchanged, and every damaged, foreign or missing piece is refused with a reason before
 * anything is restored. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/serial.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/pci.h"
#include "log_capture.h"
#include "vmm/cli/cli.h"
#include "vmm/kinds/device_registry.h"
#include "vmm/kinds/kinds.h"
#include "vmm/snapshot/snapshot.h"
#include "vmm/snapshot/snapshot_files.h"
#include "vmm/snapshot/snapshot_format.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/snapshot/crc32.h"

#define MEM (16ULL << 20)

static char tmp[64], dir[128];
static uint8_t *ram;
static struct guest_mem mem;
static struct snapshot_state *st, *back;
static char err[512];

/* A state with recognisable bytes in every record. */
static void fill_state(struct snapshot_state *s, uint32_t cpus)
{
	memset(s, 0, sizeof(*s));
	s->config = (struct snapshot_config){.memory_bytes = MEM, .nr_cpus = cpus};
	s->clock.clock = 123456789;
	for (int c = 0; c < 3; c++)
		s->irqchip[c].chip.pic.irr = (uint8_t)(c + 1);
	s->pit.channels[0].count = 0x1234;
	s->serial = (struct serial_state){.ier = 3, .lcr = 3, .rx_count = 2, .rx = {'h', 'i'}};
	for (uint32_t i = 0; i < cpus; i++) {
		struct snapshot_vcpu *v = &s->vcpus[i];
		v->regs.rip = 0x100000 + i;
		v->regs.rflags = 2;
		v->sregs.cr0 = 0x80000011;
		v->xsave.region[0] = 0x37f + i;
		v->has_xcrs = i == 0;
		v->lapic.regs[0x20] = (char)i;
		v->events.nmi.pending = 1;
		v->mp_state.mp_state = KVM_MP_STATE_HALTED;
		v->debugregs.dr7 = 0x400;
		v->nr_msrs = 3;
		v->msrs[0] = (struct kvm_msr_entry){.index = 0x10, .data = 0xabcdef};
		v->msrs[1] = (struct kvm_msr_entry){.index = 0xc0000080, .data = 0xd01};
		v->msrs[2] = (struct kvm_msr_entry){.index = 0x4b564d10, .data = 0x12345010};
	}
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/minivmm-snap-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(dir, sizeof(dir), "%s/snap", tmp);
	ram = calloc(1, MEM);
	cr_assert_not_null(ram);
	for (uint64_t i = 0; i < MEM / 2; i += 4096) /* the upper half stays zero: holes */
		memset(ram + i, (int)(i >> 12) | 1, 4096);
	guest_mem_init_with(&mem, ram, MEM);
	st = calloc(1, sizeof(*st));
	fill_state(st, 2);
	back = NULL;
}

static void teardown(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
	free(ram);
	snapshot_state_free(st);
	snapshot_state_free(back);
}

static void write_snapshot(void)
{
	int fds[SNAPSHOT_NR_FILES];
	snapshot_remove_files(dir);
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &mem, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
}

/* Load dir; 0 or -1 (err set). */
static int load(void)
{
	int fd = -1;
	snapshot_state_free(back);
	back = NULL;
	err[0] = '\0';
	int rc = snapshot_open_dir(dir, &back, &fd, err, sizeof(err));
	if (fd >= 0)
		close(fd);
	return rc;
}

static void expect_refused(const char *why)
{
	cr_assert_eq(load(), -1, "loaded, expected a refusal naming '%s'", why);
	cr_assert_null(back);
	cr_assert(strstr(err, why), "'%s' does not name '%s'", err, why);
	cr_assert_null(strchr(err, '\n'), "one line: %s", err);
}

static void file_path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* Overwrite one byte of a file. */
static void flip_byte(const char *name, off_t off)
{
	char p[256];
	file_path(p, sizeof(p), name);
	int fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0);
	uint8_t b;
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void rewrite_header(const char *text)
{
	char p[256];
	file_path(p, sizeof(p), SNAPSHOT_HEADER);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

TestSuite(snapshot, .init = setup, .fini = teardown);

Test(snapshot, round_trip_with_sparse_memory)
{
	write_snapshot();
	int fd = -1;
	cr_assert_eq(snapshot_open_dir(dir, &back, &fd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(&back->config, &st->config, sizeof(st->config)), 0);
	cr_assert_eq(back->clock.clock, 123456789);
	cr_assert_eq(back->irqchip[2].chip.pic.irr, 3);
	cr_assert_eq(back->pit.channels[0].count, 0x1234);
	cr_assert_eq(memcmp(&back->serial, &st->serial, sizeof(st->serial)), 0);
	for (int i = 0; i < 2; i++) {
		const struct snapshot_vcpu *a = &st->vcpus[i], *b = &back->vcpus[i];
		cr_assert_eq(memcmp(&a->regs, &b->regs, sizeof(a->regs)), 0);
		cr_assert_eq(memcmp(&a->sregs, &b->sregs, sizeof(a->sregs)), 0);
		cr_assert_eq(memcmp(&a->xsave, &b->xsave, sizeof(a->xsave)), 0);
		cr_assert_eq(a->has_xcrs, b->has_xcrs);
		cr_assert_eq(memcmp(&a->lapic, &b->lapic, sizeof(a->lapic)), 0);
		cr_assert_eq(memcmp(&a->events, &b->events, sizeof(a->events)), 0);
		cr_assert_eq(a->mp_state.mp_state, b->mp_state.mp_state);
		cr_assert_eq(a->debugregs.dr7, b->debugregs.dr7);
		cr_assert_eq(b->nr_msrs, 3);
		cr_assert_eq(memcmp(a->msrs, b->msrs, 3 * sizeof(a->msrs[0])), 0);
	}
	/* The memory file is guest RAM byte for byte; its zero half takes no disk blocks. */
	struct stat sb;
	cr_assert_eq(fstat(fd, &sb), 0);
	cr_assert_eq((uint64_t)sb.st_size, MEM);
	cr_assert_lt((uint64_t)sb.st_blocks * 512, MEM * 3 / 4, "zero pages were written");
	uint8_t *copy = malloc(MEM);
	cr_assert_eq(pread(fd, copy, MEM, 0), (ssize_t)MEM);
	cr_assert_eq(memcmp(copy, ram, MEM), 0);
	free(copy);
	close(fd);
}

/* Pages of m's mapping the host has given memory (pagemap: present or swapped). */
static uint64_t pages_given(const struct guest_mem *m)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	cr_assert_geq(fd, 0);
	static uint64_t e[4096];
	uint64_t n = 0, first = (uint64_t)(uintptr_t)m->mapping / 4096, pages = m->ram_size / 4096;
	for (uint64_t i = 0; i < pages; i += 4096) {
		uint64_t want = pages - i < 4096 ? pages - i : 4096;
		cr_assert_eq(pread(fd, e, want * 8, (off_t)((first + i) * 8)), (ssize_t)(want * 8));
		for (uint64_t k = 0; k < want; k++)
			n += (e[k] >> 62) != 0;
	}
	close(fd);
	return n;
}

/* Guest RAM above 4 GiB (3.5 GiB: 512 MiB past the hole), a few pages touched: the snapshot holds
 * them at their place in the file and nothing else, and never-touched RAM is not read to find
 * that out (reading faults a page in: 20 s for 4 GiB on a PVM host); the same for RAM restored
 * from that file, where the file's holes tell. */
Test(snapshot, untouched_ram_above_4g_is_neither_read_nor_written)
{
	const uint64_t size = 3584ULL << 20;
	struct guest_mem big, back_mem;
	cr_assert_eq(guest_mem_init(&big, size, false, false), 0);
	if (big.pagemap_fd < 0)
		cr_skip_test("no /proc/self/pagemap here");
	cr_assert_eq(big.nr_regions, 2);
	const uint64_t gpas[] = {0x1000, MMIO_HOLE_START - 4096, MMIO_HOLE_END,
				 MMIO_HOLE_END + (512ULL << 20) - 4096};
	for (int i = 0; i < 4; i++)
		memset(guest_mem_ptr(&big, gpas[i], 4096), 0x11 * (i + 1), 4096);
	uint64_t given = pages_given(&big);
	cr_assert_leq(given, 4 * 512, "%lu pages given for 4 touched", given);
	st->config.memory_bytes = size;
	int fds[SNAPSHOT_NR_FILES];
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &big, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	cr_assert_eq(pages_given(&big), given, "the snapshot faulted in untouched RAM");

	int fd = -1;
	cr_assert_eq(snapshot_open_dir(dir, &back, &fd, err, sizeof(err)), 0, "%s", err);
	struct stat sb;
	cr_assert_eq(fstat(fd, &sb), 0);
	cr_assert_leq((uint64_t)sb.st_blocks * 512, 1ULL << 20, "%ld blocks", (long)sb.st_blocks);
	uint8_t page[4096];
	for (int i = 0; i < 4; i++) {
		/* RAM above the hole follows the low RAM directly in the file */
		uint64_t off =
		    gpas[i] < MMIO_HOLE_START ? gpas[i] : gpas[i] - MMIO_HOLE_END + MMIO_HOLE_START;
		cr_assert_eq(pread(fd, page, 4096, (off_t)off), 4096);
		for (int b = 0; b < 4096; b++)
			cr_assert_eq(page[b], 0x11 * (i + 1), "gpa 0x%lx byte %d", gpas[i], b);
	}

	/* Restored from that file and saved again: the same file, and again nothing untouched read.
	 */
	cr_assert_eq(guest_mem_init_file(&back_mem, size, fd), 0);
	close(fd);
	char dir2[160];
	snprintf(dir2, sizeof(dir2), "%s/again", tmp);
	cr_assert_eq(snapshot_create_files(dir2, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &back_mem, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	cr_assert_leq(pages_given(&back_mem), 4 * 512, "saving a restored VM read untouched RAM");
	for (int i = 0; i < 4; i++)
		cr_assert_eq(*(uint8_t *)guest_mem_ptr(&back_mem, gpas[i] + 100, 1),
			     0x11 * (i + 1));
	char a[256], b[256];
	snprintf(a, sizeof(a), "%s/%s", dir, SNAPSHOT_HEADER);
	snprintf(b, sizeof(b), "%s/%s", dir2, SNAPSHOT_HEADER);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	cr_assert_eq(system(cmd), 0, "the second snapshot's header (memory CRC) differs");
	guest_mem_destroy(&back_mem);
	guest_mem_destroy(&big);
}

Test(snapshot, existing_directory_is_not_overwritten)
{
	write_snapshot();
	int fds[SNAPSHOT_NR_FILES];
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), -1);
	cr_assert(strstr(err, "must not exist"), "%s", err);
	cr_assert_eq(fds[0], -1);
	cr_assert_eq(load(), 0, "the existing snapshot was damaged: %s", err);
}

/* The client's side: a new directory of three empty owner-only files, or an error and nothing
 * made; snapshot_remove_files takes them away again. */
Test(snapshot, client_creates_and_removes_the_files)
{
	int fds[SNAPSHOT_NR_FILES];
	char sub[200];
	snprintf(sub, sizeof(sub), "%s/no/such/parent", tmp);
	cr_assert_eq(snapshot_create_files(sub, fds, err, sizeof(err)), -1);
	cr_assert(strstr(err, "No such file or directory"), "%s", err);
	cr_assert_eq(fds[0], -1);
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++) {
		struct stat sb;
		cr_assert_eq(fstat(fds[i], &sb), 0);
		cr_assert(S_ISREG(sb.st_mode) && sb.st_size == 0 && (sb.st_mode & 0777) == 0600);
		close(fds[i]);
	}
	snapshot_remove_files(dir);
	cr_assert_neq(access(dir, F_OK), 0, "snapshot_remove_files left %s", dir);
}

/* What a control-socket client passes is checked before the VM is paused. */
Test(snapshot, passed_files_must_be_new_empty_writable_and_distinct)
{
	int fds[SNAPSHOT_NR_FILES];
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_check_files(fds, err, sizeof(err)), 0, "%s", err);
	int saved = fds[SNAPSHOT_FILE_STATE];
	struct {
		int fd;
		const char *why;
	} bad[5];
	int p[2];
	cr_assert_eq(pipe(p), 0);
	bad[0].fd = p[1], bad[0].why = "not an empty regular file"; /* could block the I/O thread */
	char path[256];
	file_path(path, sizeof(path), SNAPSHOT_MEMORY);
	bad[1].fd = open(path, O_RDONLY), bad[1].why = "not open for writing";
	bad[2].fd = open(path, O_WRONLY | O_APPEND), bad[2].why = "O_APPEND";
	bad[3].fd = open(tmp, O_RDONLY | O_DIRECTORY), bad[3].why = "not an empty regular file";
	bad[4].fd = fds[SNAPSHOT_FILE_HEADER], bad[4].why = "are the same file";
	for (int i = 0; i < 5; i++) {
		fds[SNAPSHOT_FILE_STATE] = bad[i].fd;
		cr_assert_eq(snapshot_check_files(fds, err, sizeof(err)), -1, "case %d passed", i);
		cr_assert(strstr(err, bad[i].why), "case %d: '%s' does not say '%s'", i, err,
			  bad[i].why);
		cr_assert(strstr(err, SNAPSHOT_STATE), "case %d: '%s' does not name the file", i,
			  err);
	}
	fds[SNAPSHOT_FILE_STATE] = saved;
	cr_assert_eq(write(fds[SNAPSHOT_FILE_MEMORY], "x", 1), 1);
	cr_assert_eq(snapshot_check_files(fds, err, sizeof(err)), -1);
	cr_assert(strstr(err, "memory: not an empty regular file"), "%s", err);
	/* Nothing is written into files that fail the check. */
	cr_assert_eq(snapshot_write_files(fds, st, &mem, err, sizeof(err)), -1);
	struct stat sb;
	cr_assert_eq(fstat(fds[SNAPSHOT_FILE_MEMORY], &sb), 0);
	cr_assert_eq(sb.st_size, 1);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	for (int i = 1; i < 4; i++)
		close(bad[i].fd);
	close(p[0]);
	close(p[1]);
}

Test(snapshot, missing_directory)
{
	expect_refused("No such file or directory");
}

Test(snapshot, directory_without_header_is_not_a_snapshot)
{
	cr_assert_eq(mkdir(dir, 0700), 0);
	expect_refused("is not a minivmm snapshot");
	/* A snapshot cut short before its header (written last: still empty), too. */
	cr_assert_eq(rmdir(dir), 0);
	write_snapshot();
	char p[256];
	file_path(p, sizeof(p), SNAPSHOT_HEADER);
	cr_assert_eq(truncate(p, 0), 0);
	expect_refused("is not a minivmm snapshot (snapshot.json is empty: cut short?)");
	cr_assert_eq(unlink(p), 0);
	expect_refused("is not a minivmm snapshot");
}

Test(snapshot, file_is_not_a_snapshot_directory)
{
	FILE *f = fopen(dir, "w");
	fclose(f);
	expect_refused("is not a snapshot directory");
}

Test(snapshot, other_format)
{
	write_snapshot();
	rewrite_header("{\"format\":\"qemu\",\"version\":1}\n");
	expect_refused("is not a minivmm snapshot");
	rewrite_header("not json at all");
	expect_refused("not a snapshot header");
}

Test(snapshot, version_mismatch)
{
	write_snapshot();
	char p[256], text[512];
	file_path(p, sizeof(p), SNAPSHOT_HEADER);
	FILE *f = fopen(p, "r");
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char *v = strstr(text, "\"version\":2");
	cr_assert_not_null(v);
	v[10] = '1'; /* version 1 named host files: refused */
	rewrite_header(text);
	expect_refused("snapshot format version 1, this minivmm reads version 2");
}

Test(snapshot, flipped_byte_in_state)
{
	write_snapshot();
	flip_byte(SNAPSHOT_STATE, 100);
	expect_refused("checksum mismatch");
}

Test(snapshot, flipped_byte_in_memory)
{
	write_snapshot();
	flip_byte(SNAPSHOT_MEMORY, MEM - 1); /* in a hole: the file's zero pages count too */
	expect_refused("checksum mismatch");
}

Test(snapshot, flipped_byte_in_memory_data)
{
	write_snapshot();
	flip_byte(SNAPSHOT_MEMORY, 10); /* in the half with data */
	expect_refused("checksum mismatch");
}

/* The holes of a memory file are checksummed without reading them: crc32_zeros must be
 * exactly crc32_update over that many zero bytes, from any starting value. */
Test(snapshot, crc32_over_zeros_without_reading_them)
{
	static const uint8_t zeros[(1 << 20) + 7];
	const uint64_t lens[] = {0, 1, 2, 3, 7, 8, 255, 4096, 65537, sizeof(zeros)};
	const uint32_t starts[] = {0, 0x12345678, 0xffffffff};
	cr_assert_eq(crc32_update(0, "123456789", 9), 0xcbf43926); /* CRC-32/IEEE's check */
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			cr_assert_eq(crc32_zeros(starts[s], lens[i]),
				     crc32_update(starts[s], zeros, lens[i]),
				     "start %#x, %llu zeros", starts[s],
				     (unsigned long long)lens[i]);
}

Test(snapshot, truncated_memory)
{
	write_snapshot();
	char p[256];
	file_path(p, sizeof(p), SNAPSHOT_MEMORY);
	cr_assert_eq(truncate(p, MEM - 4096), 0);
	expect_refused("truncated");
}

Test(snapshot, missing_memory_or_state)
{
	write_snapshot();
	char p[256];
	file_path(p, sizeof(p), SNAPSHOT_MEMORY);
	cr_assert_eq(unlink(p), 0);
	expect_refused("memory: No such file");
	file_path(p, sizeof(p), SNAPSHOT_STATE);
	cr_assert_eq(unlink(p), 0);
	expect_refused("state.bin: No such file");
}

/* Nobody but the user restoring (or root) may have made or changed what the VM is made of: the
 * directory and each file owned by them, writable by no one else, and no symbolic link. */
Test(snapshot, files_owned_by_others_or_writable_by_others_are_refused)
{
	write_snapshot();
	char p[256], copy[256];
	cr_assert_eq(load(), 0, "%s", err);
	file_path(p, sizeof(p), SNAPSHOT_MEMORY);
	cr_assert_eq(chmod(p, 0602), 0);
	expect_refused("memory: writable by its group or others (mode 0602)");
	cr_assert_eq(chmod(p, 0600), 0);
	cr_assert_eq(chown(p, 65534, 65534), 0);
	expect_refused("memory: owned by uid 65534, not by you (uid 0) or root");
	cr_assert_eq(chown(p, 0, 0), 0);
	cr_assert_eq(chmod(dir, 0770), 0);
	expect_refused("snap: writable by its group or others (mode 0770)");
	cr_assert_eq(chmod(dir, 0700), 0);
	file_path(p, sizeof(p), SNAPSHOT_STATE);
	snprintf(copy, sizeof(copy), "%s/state-copy", tmp);
	cr_assert_eq(rename(p, copy), 0);
	cr_assert_eq(symlink(copy, p), 0);
	expect_refused("state.bin: a symbolic link: refused");
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(rename(copy, p), 0);
	cr_assert_eq(load(), 0, "%s", err);
}

/* A restored VM's untouched pages are its memory file's: once that file has shrunk, a snapshot
 * of the VM fails instead of saving zeros for them. */
Test(snapshot, memory_file_shrunk_under_a_restored_vm_fails_the_next_snapshot)
{
	write_snapshot();
	char p[256], again[160];
	file_path(p, sizeof(p), SNAPSHOT_MEMORY);
	int fd = open(p, O_RDWR);
	cr_assert_geq(fd, 0);
	struct guest_mem restored;
	cr_assert_eq(guest_mem_init_file(&restored, MEM, fd), 0);
	int fds[SNAPSHOT_NR_FILES];
	snprintf(again, sizeof(again), "%s/again", tmp);
	cr_assert_eq(snapshot_create_files(again, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &restored, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	snapshot_remove_files(again);
	cr_assert_eq(ftruncate(fd, MEM / 4), 0);
	cr_assert_eq(snapshot_create_files(again, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &restored, err, sizeof(err)), -1);
	cr_assert(strstr(err, "the memory file this VM was restored from is shorter than its RAM"),
		  "%s", err);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	guest_mem_destroy(&restored);
	close(fd);
}

/* ---- the state parser ---- */

static uint8_t *buf;
static size_t len;

static void serialize(void)
{
	free(buf);
	buf = snapshot_state_write(st, &len);
	cr_assert_not_null(buf);
}

static int parse(void)
{
	static struct snapshot_state out;
	err[0] = '\0';
	int rc = snapshot_state_parse(buf, len, &out, err, sizeof(err));
	snapshot_state_free_maps(&out);
	return rc;
}

/* The offset of the first record with this tag and index. */
static size_t find_record(uint32_t tag, uint32_t index)
{
	for (size_t off = 8; off + 12 <= len;) {
		uint32_t h[3];
		memcpy(h, buf + off, sizeof(h));
		if (h[0] == tag && h[1] == index)
			return off;
		off += 12 + h[2];
	}
	cr_assert_fail("no record %u/%u", tag, index);
	return 0;
}

static void expect_parse_refused(const char *why)
{
	cr_assert_eq(parse(), -1, "parsed, expected '%s'", why);
	cr_assert(strstr(err, why), "'%s' does not name '%s'", err, why);
}

TestSuite(snapshot_state, .init = setup, .fini = teardown);

Test(snapshot_state, every_truncation_is_refused)
{
	serialize();
	cr_assert_eq(parse(), 0, "%s", err);
	size_t full = len;
	for (len = 0; len < full; len++)
		cr_assert_eq(parse(), -1, "a state cut at %zu of %zu bytes was accepted", len,
			     full);
	free(buf);
	buf = NULL;
}

Test(snapshot_state, bad_magic_and_config)
{
	serialize();
	buf[0] = 'X';
	expect_parse_refused("bad magic");
	st->config.nr_cpus = MAX_VCPUS + 1;
	serialize();
	expect_parse_refused("vCPUs");
	st->config.nr_cpus = 1;
	st->config.memory_bytes = MEM + 4096;
	serialize();
	expect_parse_refused("whole MiB");
	st->config.memory_bytes = MEM;
	st->config.nr_devices = MAX_DEVICES + 1;
	serialize();
	expect_parse_refused("virtio devices (at most 16)");
	free(buf);
	buf = NULL;
}

Test(snapshot_state, record_checks)
{
	serialize();
	/* A vCPU record for a vCPU that does not exist. */
	size_t off = find_record(SNAP_REGS, 1);
	uint32_t bad = 2;
	memcpy(buf + off + 4, &bad, 4);
	expect_parse_refused("for vCPU 2 of 2");
	/* The same record twice. */
	bad = 0;
	memcpy(buf + off + 4, &bad, 4);
	expect_parse_refused("appears twice");
	/* An unknown tag. */
	serialize();
	off = find_record(SNAP_PIT, 0);
	bad = 99;
	memcpy(buf + off, &bad, 4);
	expect_parse_refused("unknown record tag 99");
	/* A required record missing (the tag renamed to an optional one already present). */
	serialize();
	off = find_record(SNAP_DEBUGREGS, 1);
	bad = 0;
	memcpy(buf + off, &bad, 4);
	expect_parse_refused("unknown record tag 0");
	free(buf);
	buf = NULL;
}

Test(snapshot_state, missing_and_wrong_size_records)
{
	st->vcpus[1].nr_msrs = 0; /* an empty MSR list is still a record */
	serialize();
	cr_assert_eq(parse(), 0, "%s", err);
	/* Drop vCPU 1's LAPIC record by cutting it out of the buffer. */
	size_t off = find_record(SNAP_LAPIC, 1);
	uint32_t h[3];
	memcpy(h, buf + off, sizeof(h));
	size_t rec = 12 + h[2];
	memmove(buf + off, buf + off + rec, len - off - rec);
	len -= rec;
	expect_parse_refused("record 21 of vCPU 1 is missing");
	/* A fixed-size record of the wrong size. */
	serialize();
	off = find_record(SNAP_CLOCK, 0);
	uint32_t size = 8;
	memcpy(buf + off + 8, &size, 4);
	expect_parse_refused("is 8 bytes");
	/* An MSR list that is not whole entries. */
	serialize();
	off = find_record(SNAP_MSRS, 0);
	memcpy(h, buf + off, sizeof(h));
	size = h[2] - 1;
	memcpy(buf + off + 8, &size, 4);
	expect_parse_refused("MSR list");
	free(buf);
	buf = NULL;
}

Test(snapshot_state, device_records)
{
	st->config.nr_devices = 2;
	for (int i = 0; i < 2; i++) {
		struct snapshot_device *d = &st->devices[i];
		snprintf(d->flag, sizeof(d->flag), "rng");
		snprintf(d->spec, sizeof(d->spec), "transport=%s", i ? "mmio" : "pci");
		d->transport = i ? TRANSPORT_MMIO : TRANSPORT_PCI;
		d->dev.status = 15;
		d->dev.q[0] = (struct virtio_queue_state){
		    .desc = 0x1000, .size = 256, .last_avail_idx = 7, .used_idx = 7, .ready = 1};
	}
	st->devices[1].mmio.interrupt_status = 1;
	serialize();
	static struct snapshot_state out;
	cr_assert_eq(snapshot_state_parse(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(out.devices, st->devices, 2 * sizeof(st->devices[0])), 0);
	/* A device the configuration does not count, one missing, bad strings or transport. */
	size_t off = find_record(SNAP_DEVICE, 1);
	uint32_t bad = 2;
	memcpy(buf + off + 4, &bad, 4);
	expect_parse_refused("device 2 of 2");
	serialize();
	bad = 3; /* the configuration's nr_devices: after the magic, a header, two other fields */
	memcpy(buf + 8 + 12 + offsetof(struct snapshot_config, nr_devices), &bad, 4);
	expect_parse_refused("device 2 is missing");
	memset(st->devices[0].flag, 'x', sizeof(st->devices[0].flag));
	serialize();
	expect_parse_refused("device 0: bad kind, options or transport");
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	st->devices[1].transport = 2;
	serialize();
	expect_parse_refused("device 1: bad kind, options or transport");
	free(buf);
	buf = NULL;
}

/* A kind's own state for device i: n recognisable bytes (the kind's to interpret). */
static void add_kind_state(uint32_t i, uint32_t n)
{
	st->kind_state[i] = malloc(n);
	cr_assert_not_null(st->kind_state[i]);
	for (uint32_t k = 0; k < n; k++)
		st->kind_state[i][k] = (uint8_t)(k * 7 + i);
	st->kind_state_len[i] = n;
}

/* A net device as the save writes it (its own state is its kind's record). */
static void add_net(uint32_t i, const char *spec)
{
	st->config.nr_devices = i + 1;
	struct snapshot_device *d = &st->devices[i];
	snprintf(d->flag, sizeof(d->flag), "net");
	snprintf(d->spec, sizeof(d->spec), "%s", spec);
	d->transport = TRANSPORT_PCI;
}

/* A device's own state goes through the file as its kind's bytes, whatever they are; the
 * parser checks only that it belongs to a device, once, and is not empty. */
Test(snapshot_state, kind_state_records)
{
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	add_net(1, "mac=52:54:00:12:34:99");
	add_kind_state(1, 40);
	serialize();
	static struct snapshot_state out;
	cr_assert_eq(snapshot_state_parse(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	cr_assert_null(out.kind_state[0], "the rng got a state");
	cr_assert_eq(out.kind_state_len[1], 40);
	cr_assert_eq(memcmp(out.kind_state[1], st->kind_state[1], 40), 0);
	snapshot_state_free_maps(&out);
	size_t off = find_record(SNAP_DEVICE_STATE, 1);
	memcpy(buf + off + 4, &(uint32_t){2}, 4);
	expect_parse_refused("device 2 of 2");
	serialize();
	off = find_record(SNAP_DEVICE_STATE, 1);
	memcpy(buf + off + 4, &(uint32_t){0}, 4);
	cr_assert_eq(parse(), 0, "another device's state is the kind's to refuse: %s", err);
	serialize();
	off = find_record(SNAP_DEVICE, 1);
	memcpy(buf + off, &(uint32_t){SNAP_DEVICE_STATE}, 4);
	expect_parse_refused("appears twice");
	serialize();
	off = find_record(SNAP_DEVICE_STATE, 1);
	memset(buf + off + 8, 0, 4);
	expect_parse_refused("device 1: an empty state record");
	free(buf);
	buf = NULL;
}

/* Every truncation of a state with a kind's record is refused, and nothing is left behind
 * (ASan). */
Test(snapshot_state, truncations_free_the_kinds_states)
{
	add_net(0, "");
	add_kind_state(0, 300);
	serialize();
	size_t full = len;
	for (len = full - 400; len < full; len++)
		cr_assert_eq(parse(), -1, "a state cut at %zu of %zu bytes was accepted", len,
			     full);
	free(buf);
	buf = NULL;
}

Test(snapshot_state, serial_state_out_of_range)
{
	st->serial.rx_count = SERIAL_RX_FIFO + 1;
	serialize();
	expect_parse_refused("serial port");
	free(buf);
	buf = NULL;
}

/* ---- the UART's part ---- */

static void nop_tx(void *o, uint8_t b)
{
	(void)o;
	(void)b;
}

static void nop_irq(void *o, int l)
{
	(void)o;
	(void)l;
}

Test(snapshot_serial, fifo_survives_save_and_restore)
{
	const struct serial_ops ops = {.tx = nop_tx, .set_irq = nop_irq};
	struct serial a, b;
	serial_init(&a, &ops);
	serial_init(&b, &ops);
	uint8_t fill[SERIAL_RX_FIFO];
	memset(fill, 'x', sizeof(fill));
	/* Wrap the ring: fill it, read 60, queue "abc". */
	cr_assert_eq(serial_receive(&a, fill, sizeof(fill)), SERIAL_RX_FIFO);
	uint8_t v;
	for (int i = 0; i < 60; i++)
		serial_io(&a, 0, &v, 1, false);
	serial_receive(&a, (const uint8_t *)"abc", 3);
	v = 0x5a;
	serial_io(&a, 7, &v, 1, true); /* scratch register */
	struct serial_state s;
	serial_save(&a, &s);
	cr_assert_eq(serial_restore(&b, &s), 0);
	const char want[] = "xxxxabc";
	for (int i = 0; i < 7; i++) {
		serial_io(&b, 0, &v, 1, false);
		cr_assert_eq(v, (uint8_t)want[i], "byte %d: %c", i, v);
	}
	serial_io(&b, 7, &v, 1, false);
	cr_assert_eq(v, 0x5a);
	s.rx_count = SERIAL_RX_FIFO + 1;
	cr_assert_eq(serial_restore(&b, &s), -1);
	serial_destroy(&a);
	serial_destroy(&b);
}

/* ---- a virtio device's state: saved, replayed into a new device, saved again ---- */

static int fake_activations;

TestSuite(snapshot_virtio, .init = setup, .fini = teardown);

static int fake_activate(struct virtio_dev *d)
{
	(void)d;
	fake_activations++;
	return 0;
}

static const struct virtio_device_ops fake_ops = {
    .name = "fake", .device_id = VIRTIO_ID_RNG, .max_queue_size = 256, .activate = fake_activate};
static const struct virtio_dev_params fake_params = {.features = 1ULL << VIRTIO_RING_F_EVENT_IDX,
						     .nr_queues = 2};

static void mmio_wr(struct virtio_mmio *t, uint64_t off, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	virtio_mmio_io(t, off, b, 4, true);
}

/* The driver's set-up of queue 1 only (256 entries at 0x10000), then some progress. */
static void drive_mmio(struct virtio_mmio *t, struct virtio_dev *d)
{
	mmio_wr(t, 0x070, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	mmio_wr(t, 0x024, 0);
	mmio_wr(t, 0x020, 1u << VIRTIO_RING_F_EVENT_IDX);
	mmio_wr(t, 0x024, 1);
	mmio_wr(t, 0x020, 1); /* VERSION_1 */
	mmio_wr(t, 0x070, 11);
	mmio_wr(t, 0x030, 1);
	mmio_wr(t, 0x038, 256);
	mmio_wr(t, 0x080, 0x10000);
	mmio_wr(t, 0x090, 0x11000);
	mmio_wr(t, 0x0a0, 0x12000);
	mmio_wr(t, 0x044, 1);
	mmio_wr(t, 0x070, 15);
	d->vqs[1].last_avail_idx = 40000; /* wraps past 2^15: indices are free-running */
	d->vqs[1].used_idx = 39990;
	d->vqs[1].signalled_used = 39980;
	d->vqs[1].signalled_used_valid = true;
	t->interrupt_status = 1;
}

Test(snapshot_virtio, mmio_replay_reaches_the_same_state)
{
	static struct virtio_dev a, b;
	static struct virtio_mmio ta, tb;
	virtio_dev_init(&a, &fake_ops, &fake_params, NULL, &mem, NULL, "a");
	virtio_dev_init(&b, &fake_ops, &fake_params, NULL, &mem, NULL, "b");
	virtio_mmio_init(&ta, &a, 0xd0000000, 5);
	virtio_mmio_init(&tb, &b, 0xd0000000, 5);
	drive_mmio(&ta, &a);
	cr_assert_eq(a.status, 15, "status %u broken %d", a.status, a.broken);
	struct virtio_dev_state sa, sb;
	struct virtio_mmio_state ma, mb;
	virtio_dev_save(&a, &sa);
	virtio_mmio_save(&ta, &ma);
	fake_activations = 0;
	virtio_mmio_restore(&tb, &sa, &ma);
	cr_assert_eq(fake_activations, 1, "the restored device was not activated");
	virtio_dev_save(&b, &sb);
	virtio_mmio_save(&tb, &mb);
	cr_assert_eq(memcmp(&sa, &sb, sizeof(sa)), 0, "device state differs after the replay");
	cr_assert_eq(memcmp(&ma, &mb, sizeof(ma)), 0, "transport state differs after the replay");
	cr_assert_not_null(b.vqs[1].avail, "queue 1 is not live");
	cr_assert_null(b.vqs[0].avail, "queue 0 was never set up");
	/* A saved queue size no guest could set is refused the same way: the device is broken. */
	static struct virtio_dev c;
	static struct virtio_mmio tc;
	virtio_dev_init(&c, &fake_ops, &fake_params, NULL, &mem, NULL, "c");
	virtio_mmio_init(&tc, &c, 0xd0000000, 5);
	sa.q[1].size = 3;
	virtio_mmio_restore(&tc, &sa, &ma);
	cr_assert(c.broken, "a queue of 3 entries was accepted from a snapshot");
	/* So is a ring outside guest memory. */
	static struct virtio_dev e;
	static struct virtio_mmio te;
	virtio_dev_init(&e, &fake_ops, &fake_params, NULL, &mem, NULL, "e");
	virtio_mmio_init(&te, &e, 0xd0000000, 5);
	sa.q[1].size = 256;
	sa.q[1].used = MEM;
	virtio_mmio_restore(&te, &sa, &ma);
	cr_assert(e.broken, "a used ring past RAM was accepted from a snapshot");
}

static void pci_common(struct virtio_pci *vp, uint32_t field, uint64_t v, uint32_t len)
{
	uint8_t b[8];
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	vp->pci.ops->bar_access(&vp->pci, VIRTIO_PCI_BAR, VIRTIO_PCI_COMMON_OFF + field, b, len,
				true);
}

Test(snapshot_virtio, pci_replay_reaches_the_same_state)
{
	static struct virtio_dev a, b;
	static struct virtio_pci pa, pb;
	const struct virtio_transport_host none = {0};
	virtio_dev_init(&a, &fake_ops, &fake_params, NULL, &mem, NULL, "a");
	virtio_dev_init(&b, &fake_ops, &fake_params, NULL, &mem, NULL, "b");
	cr_assert_eq(virtio_pci_init(&pa, &a, &none, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(virtio_pci_init(&pb, &b, &none, err, sizeof(err)), 0, "%s", err);
	/* MSI-X table entry 1: a message, unmasked. */
	uint8_t w[4] = {0x00, 0x10, 0xe0, 0xfe};
	pa.pci.ops->bar_access(&pa.pci, VIRTIO_PCI_BAR, VIRTIO_PCI_MSIX_TABLE + 16, w, 4, true);
	w[0] = 0x41, w[1] = w[2] = w[3] = 0;
	pa.pci.ops->bar_access(&pa.pci, VIRTIO_PCI_BAR, VIRTIO_PCI_MSIX_TABLE + 24, w, 4, true);
	pci_common(&pa, VIRTIO_PCI_COMMON_STATUS, 3, 1);
	pci_common(&pa, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	pci_common(&pa, VIRTIO_PCI_COMMON_GF, 1, 4);
	pci_common(&pa, VIRTIO_PCI_COMMON_STATUS, 11, 1);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_SELECT, 0, 2);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_SIZE, 128, 2);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_MSIX, 1, 2);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_DESC, 0x20000, 8);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_DRIVER, 0x21000, 8);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_DEVICE, 0x22000, 8);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	pci_common(&pa, VIRTIO_PCI_COMMON_MSIX, 0, 2);
	pci_common(&pa, VIRTIO_PCI_COMMON_STATUS, 15, 1);
	pci_common(&pa, VIRTIO_PCI_COMMON_Q_SELECT, 1, 2);
	cr_assert_eq(a.status, 15, "status %u broken %d", a.status, a.broken);
	a.vqs[0].last_avail_idx = 5;
	a.vqs[0].used_idx = 4;
	pa.isr = VIRTIO_PCI_ISR_QUEUE;
	struct virtio_dev_state sa, sb;
	static struct virtio_pci_state ma, mb;
	virtio_dev_save(&a, &sa);
	virtio_pci_save(&pa, &ma);
	virtio_pci_restore(&pb, &sa, &ma);
	virtio_dev_save(&b, &sb);
	virtio_pci_save(&pb, &mb);
	cr_assert_eq(memcmp(&sa, &sb, sizeof(sa)), 0, "device state differs after the replay");
	cr_assert_eq(memcmp(ma.msix, mb.msix, sizeof(ma.msix)), 0, "MSI-X table differs");
	cr_assert_eq(mb.queue_vector[0], 1);
	cr_assert_eq(mb.config_vector, 0);
	cr_assert_eq(mb.queue_select, 1);
	cr_assert_eq(mb.isr, VIRTIO_PCI_ISR_QUEUE);
	cr_assert_not_null(b.vqs[0].avail, "queue 0 is not live");
	virtio_pci_cleanup(&pa);
	virtio_pci_cleanup(&pb);
}

/* ---- --restore's set-up from a snapshot: the machine and its devices come from it ---- */

static const char *backend_override[MAX_DEVICES];

static int restore_open(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->restore_dir = dir;
	memcpy(cfg->backend, backend_override, sizeof(backend_override));
	log_capture_clear();
	snapshot_state_free(back);
	back = snapshot_restore_open(cfg);
	return back ? 0 : -1;
}

Test(snapshot, restore_takes_machine_and_devices_from_the_snapshot)
{
	st->config.nr_devices = 1;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	snprintf(st->devices[0].spec, sizeof(st->devices[0].spec), "transport=mmio");
	st->devices[0].transport = TRANSPORT_MMIO;
	write_snapshot();
	struct vm_config cfg;
	cr_assert_eq(restore_open(&cfg), 0, "%s", log_captured());
	cr_assert_eq(cfg.memory_bytes, MEM);
	cr_assert_eq(cfg.nr_cpus, 2);
	cr_assert_eq(cfg.nr_devices, 1);
	cr_assert_str_eq(cfg.devices[0].kind->flag, "rng");
	cr_assert_eq(cfg.devices[0].transport, TRANSPORT_MMIO);
	close(cfg.memory_fd);
	cli_free_config(&cfg);
}

/* A crafted snapshot gets no device kind snapshot_save would not have written. */
Test(snapshot, restore_refuses_kinds_it_does_not_save)
{
	st->config.nr_devices = 1;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "vsock");
	snprintf(st->devices[0].spec, sizeof(st->devices[0].spec), "cid=3");
	write_snapshot();
	struct vm_config cfg;
	cr_assert_eq(restore_open(&cfg), -1);
	cr_assert_eq(cfg.nr_devices, 0, "the device was created");
	char *log = log_captured();
	cr_assert(strstr(log, "--vsock devices are not restored by this version"), "%s", log);
	free(log);
}

/* A balloon's own state through the files, and its kind through --restore's set-up. */
Test(snapshot, balloon_through_the_files_and_restore_open)
{
	st->config.nr_devices = 1;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "balloon");
	snprintf(st->devices[0].spec, sizeof(st->devices[0].spec), "deflate-on-oom=on");
	add_kind_state(0, 1000);
	write_snapshot();
	struct vm_config cfg;
	cr_assert_eq(restore_open(&cfg), 0, "%s", log_captured());
	cr_assert_eq(back->kind_state_len[0], 1000);
	cr_assert_eq(memcmp(back->kind_state[0], st->kind_state[0], 1000), 0);
	cr_assert_eq(cfg.nr_devices, 1);
	cr_assert_str_eq(cfg.devices[0].kind->flag, "balloon");
	close(cfg.memory_fd);
	cli_free_config(&cfg);
}

/* What a snapshot saves of a device's options: everything but the host ones, whatever their
 * order (device_spec_split, as snapshot_save calls it). */
Test(snapshot, saved_options_leave_out_the_host_ones)
{
	char guest[256], host[256];
	cr_assert_eq(
	    device_spec_split(&virtio_blk_kind,
			      "path=/x.img,serial=abc,readonly=on,transport=mmio,cache=none", guest,
			      host, sizeof(guest), err, sizeof(err)),
	    0, "%s", err);
	cr_assert_str_eq(guest, "serial=abc,transport=mmio");
	cr_assert_str_eq(host, "path=/x.img,readonly=on,cache=none");
	cr_assert_eq(device_spec_split(&virtio_net_kind,
				       "mac=52:54:00:12:34:99,user,hostfwd=tcp::2222-:22,tx=timer,"
				       "host-loopback=on,restrict=off,max-sockets=9",
				       guest, host, sizeof(guest), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_str_eq(guest, "mac=52:54:00:12:34:99,tx=timer");
	cr_assert_str_eq(host,
			 "user,hostfwd=tcp::2222-:22,host-loopback=on,restrict=off,max-sockets=9");
	cr_assert_eq(device_spec_split(&virtio_net_kind, "tap=t0,tx-uring=on", guest, host,
				       sizeof(guest), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_str_eq(guest, "");
	cr_assert_str_eq(host, "tap=t0,tx-uring=on");
	cr_assert_eq(device_spec_split(&virtio_rng_kind, "transport=pci", guest, host,
				       sizeof(guest), err, sizeof(err)),
		     0, "%s", err);
	cr_assert_str_eq(guest, "transport=pci");
	cr_assert_str_eq(host, "");
	cr_assert_eq(device_spec_split(&virtio_blk_kind, "path=a,,serial=b", guest, host,
				       sizeof(guest), err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "--disk: empty option"), "%s", err);
}

/* expect_restore_refused: --restore with backend_override refused, one line naming why, with
 * only the devices before the refused one created (nothing of it opened). */
static void expect_restore_refused(int created, const char *why)
{
	struct vm_config cfg;
	cr_assert_eq(restore_open(&cfg), -1, "restored; expected a refusal naming '%s'", why);
	cr_assert_eq(cfg.nr_devices, created, "%d devices created", cfg.nr_devices);
	char *log = log_captured();
	cr_assert(strstr(log, why), "'%s' does not name '%s'", log, why);
	cr_assert_eq(strchr(log, '\n'), log + strlen(log) - 1, "one line: %s", log);
	free(log);
	cli_free_config(&cfg);
}

/* A snapshot carries no authority over the host: a crafted one naming an image, a tap or a host
 * port is refused before anything is opened, whatever --backend says. */
Test(snapshot, restore_refuses_a_snapshot_naming_host_resources)
{
	char victim[160];
	snprintf(victim, sizeof(victim), "%s/victim.img", tmp);
	cr_assert_eq(close(open(victim, O_CREAT | O_WRONLY, 0600)), 0);
	cr_assert_eq(truncate(victim, 4 << 20), 0);
	st->config.nr_devices = 1;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "disk");
	snprintf(st->devices[0].spec, sizeof(st->devices[0].spec), "path=%s", victim);
	write_snapshot();
	expect_restore_refused(0, "device 0 (--disk): the snapshot names host resources (path=");
	backend_override[0] = "readonly=on";
	expect_restore_refused(0, "device 0 (--disk): the snapshot names host resources (path=");
	backend_override[0] = NULL;
	add_net(0, "mac=52:54:00:12:34:99,user,hostfwd=tcp::22-:22");
	write_snapshot();
	backend_override[0] = "tap=mvt9";
	expect_restore_refused(0, "names host resources (user,hostfwd=tcp::22-:22)");
	backend_override[0] = NULL;
}

/* A net device's backend and a disk's image come from --backend, the rest from the snapshot. */
Test(snapshot, restore_takes_host_resources_from_backend)
{
	char image[160];
	snprintf(image, sizeof(image), "%s/disk.img", tmp);
	cr_assert_eq(close(open(image, O_CREAT | O_WRONLY, 0600)), 0);
	cr_assert_eq(truncate(image, 1 << 20), 0);
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "disk");
	snprintf(st->devices[0].spec, sizeof(st->devices[0].spec), "serial=abc");
	st->kind_state[0] = malloc(sizeof(uint64_t));
	cr_assert_not_null(st->kind_state[0]);
	memcpy(st->kind_state[0], &(uint64_t){2048}, sizeof(uint64_t)); /* the image's sectors */
	st->kind_state_len[0] = sizeof(uint64_t);
	add_net(1, "mac=52:54:00:12:34:99,transport=mmio,tx=timer");
	st->devices[1].transport = TRANSPORT_MMIO;
	write_snapshot();
	expect_restore_refused(
	    0, "device 0 is a --disk: give what it uses on the host with --backend "
	       "0:OPTIONS (path=, vhost-user=, readonly=, cache=; a snapshot names none)");
	char disk_backend[200];
	snprintf(disk_backend, sizeof(disk_backend), "path=%s,cache=writeback", image);
	backend_override[0] = disk_backend;
	expect_restore_refused(1,
			       "device 1 is a --net: give what it uses on the host with --backend "
			       "1:OPTIONS (tap=, user, tx-uring=, hostfwd=, "
			       "host-loopback=, restrict=, max-sockets=;");
	struct vm_config cfg;
	const char *nets[] = {"tap=mvt9", "user,hostfwd=udp::5555-:7", "tap=mvt9,tx-uring=on"};
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		backend_override[1] = nets[i];
		cr_assert_eq(restore_open(&cfg), 0, "%s", log_captured());
		cr_assert_eq(cfg.nr_devices, 2);
		char want[200];
		snprintf(want, sizeof(want), "serial=abc,path=%s,cache=writeback", image);
		cr_assert_str_eq(cfg.devices[0].spec, want);
		snprintf(want, sizeof(want), "mac=52:54:00:12:34:99,transport=mmio,tx=timer,%s",
			 nets[i]);
		cr_assert_str_eq(cfg.devices[1].spec, want);
		cr_assert_eq(cfg.devices[1].transport, TRANSPORT_MMIO);
		close(cfg.memory_fd);
		cli_free_config(&cfg);
	}
	/* An image of another size: refused before anything is built (one line, no device). */
	cr_assert_eq(truncate(image, 2 << 20), 0);
	expect_restore_refused(1, "(--disk serial=abc,path=");
	expect_restore_refused(1, "the image has 4096 sectors, the snapshot 2048");
	backend_override[0] = backend_override[1] = NULL;
}

Test(snapshot, restore_refuses_bad_backends)
{
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	add_net(1, "mac=52:54:00:12:34:99");
	write_snapshot();
	backend_override[1] = "tap=x";
	backend_override[2] = "tap=x";
	expect_restore_refused(0, "--backend 2: the snapshot has 2 devices");
	backend_override[2] = NULL;
	backend_override[0] = "tap=x";
	expect_restore_refused(0,
			       "--backend 0: device 0 is a --rng, which uses nothing on the host");
	backend_override[0] = NULL;
	backend_override[1] = "tap=x,mac=52:54:00:12:34:56";
	expect_restore_refused(1, "--backend 1: 'mac' is not a host option of a --net");
	backend_override[1] = "tap=x,,";
	expect_restore_refused(1, "--net: empty option");
	backend_override[1] = "tap=x,user";
	expect_restore_refused(1, "exactly one backend");
	backend_override[1] = NULL;
}

/* A VM as snapshot_apply sees it, 2 vCPUs and one --rng on pci, without KVM: what is refused
 * before anything is replayed. */
static struct vm *one_rng_vm(void)
{
	static struct vm vm;
	static struct virtio_devices devs;
	static struct device_config dc = {.kind = &virtio_rng_kind, .transport = TRANSPORT_PCI};
	memset(&vm, 0, sizeof(vm));
	memset(&devs, 0, sizeof(devs));
	vm.nr_vcpus = 2;
	vm.mem.ram_size = MEM;
	vm.virtio = &devs;
	devs.nr = 1;
	devs.slots[0].cfg = &dc;
	return &vm;
}

/* A backend that offers less than the driver had accepted (a tap with fewer offloads) is
 * refused before anything is replayed. */
Test(snapshot, restore_refuses_a_backend_offering_fewer_features)
{
	struct vm *vm = one_rng_vm();
	vm->virtio->slots[0].dev.device_features = 1ULL << 32 | 1;
	st->config.nr_devices = 1;
	st->devices[0].transport = TRANSPORT_PCI;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	st->devices[0].dev.driver_features = 1ULL << 32 | 2;
	st->devices[0].dev.status =
	    VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	cr_assert_eq(snapshot_apply(vm, st, err, sizeof(err)), -1);
	cr_assert(strstr(err, "device 0 (--rng ): the driver's features 0x100000002 are not all "
			      "offered here (0x100000001)"),
		  "%s", err);
}

/* Each kind checks the length of its own state (hostile input) before its model sees it: one
 * byte more or less, or none at all, is refused with a reason. */
Test(snapshot, kinds_refuse_their_state_of_another_length)
{
	static struct virtio_slot slot;
	slot.dev.mem = &mem;
	static uint8_t bytes[1 << 16];
	const struct {
		const struct device_kind_desc *kind;
		size_t len;
		const char *why;
	} cases[] = {
	    {&virtio_blk_kind, 8, "the saved disk state is"},
	    {&virtio_net_kind, sizeof(struct virtio_net_state), "the saved net state is"},
	    {&virtio_balloon_kind,
	     sizeof(struct virtio_balloon_state) + virtio_balloon_map_bytes(MEM),
	     "the saved balloon state is"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct device_snapshot_ops *ops = cases[i].kind->snapshot;
		cr_assert_not_null(ops);
		cr_assert_lt(cases[i].len + 1, sizeof(bytes));
		const size_t lens[] = {0, cases[i].len - 1, cases[i].len + 1};
		for (size_t l = 0; l < 3; l++) {
			err[0] = '\0';
			cr_assert_eq(
			    ops->restore(&slot, lens[l] ? bytes : NULL, lens[l], err, sizeof(err)),
			    -1, "--%s took %zu bytes", cases[i].kind->flag, lens[l]);
			cr_assert(strstr(err, cases[i].why), "--%s: %s", cases[i].kind->flag, err);
		}
	}
	cr_assert_null(virtio_rng_kind.snapshot->restore, "the rng keeps no state");
}

/* A kind that keeps no state of its own (the rng) is not handed one from a crafted file. */
Test(snapshot, apply_refuses_state_for_a_kind_that_keeps_none)
{
	struct vm *vm = one_rng_vm();
	st->config.nr_devices = 1;
	st->devices[0].transport = TRANSPORT_PCI;
	snprintf(st->devices[0].flag, sizeof(st->devices[0].flag), "rng");
	add_kind_state(0, 8);
	cr_assert_eq(snapshot_apply(vm, st, err, sizeof(err)), -1);
	cr_assert(strstr(err, "device 0: a --rng keeps no state of its own"), "%s", err);
}

/* Two balloons of a 1 TiB guest: 64 MiB of maps, more than a restore reads; refused at save. */
Test(snapshot, state_too_large_for_a_restore_is_not_written)
{
	st->config.memory_bytes = 1ULL << 40;
	for (uint32_t i = 0; i < 2; i++) {
		snprintf(st->devices[i].flag, sizeof(st->devices[i].flag), "balloon");
		st->kind_state_len[i] = 32u << 20;
		st->kind_state[i] = calloc(1, st->kind_state_len[i]);
		cr_assert_not_null(st->kind_state[i]);
	}
	st->config.nr_devices = 2;
	int fds[SNAPSHOT_NR_FILES];
	cr_assert_eq(snapshot_create_files(dir, fds, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_write_files(fds, st, &mem, err, sizeof(err)), -1);
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	cr_assert(strstr(err, "a restore reads at most"), "%s", err);
}
