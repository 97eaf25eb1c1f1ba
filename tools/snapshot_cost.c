/*
 * What writing a snapshot's memory file costs (`make snapshot-cost [GIB=N] [TOUCH_MIB=M]`, not
 * part of `make test`; no /dev/kvm needed): guest RAM of N GiB (default 4) laid out as minivmm
 * does (anonymous, MADV_HUGEPAGE), M MiB of it written (default 16, in 2 MiB blocks spread over
 * all of it), then
 * saved with snapshot_write_files; then that file mapped as a restore maps it and saved again.
 * Each twice: skipping never-touched pages by /proc/self/pagemap and the file's holes
 * (mem_holes.c, what minivmm does) and reading every page to find the zero ones (pagemap off:
 * what it did before). Prints seconds and the pages the save faulted in.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/guest_mem.h"
#include "vmm/snapshot/snapshot_files.h"
#include "vmm/snapshot/snapshot_format.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Pages of m's mapping the host has given memory (pagemap: present or swapped), or -1. */
static long long pages_given(const struct guest_mem *m)
{
	static uint64_t e[4096];
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	long long n = 0;
	uint64_t first = (uint64_t)(uintptr_t)m->mapping / 4096, pages = m->ram_size / 4096;
	for (uint64_t i = 0; i < pages; i += 4096) {
		uint64_t want = pages - i < 4096 ? pages - i : 4096;
		if (pread(fd, e, want * 8, (off_t)((first + i) * 8)) != (ssize_t)(want * 8)) {
			n = -1;
			break;
		}
		for (uint64_t k = 0; k < want; k++)
			n += (e[k] >> 62) != 0;
	}
	close(fd);
	return n;
}

/* Save mem into dir (made here); the seconds it took, or -1. */
static double save(const struct guest_mem *mem, struct snapshot_state *st, const char *dir)
{
	int fds[SNAPSHOT_NR_FILES];
	char err[256];
	if (snapshot_create_files(dir, fds, err, sizeof(err))) {
		fprintf(stderr, "snapshot-cost: %s\n", err);
		return -1;
	}
	double t0 = now_s();
	int rc = snapshot_write_files(fds, st, mem, err, sizeof(err));
	double t = now_s() - t0;
	for (int i = 0; i < SNAPSHOT_NR_FILES; i++)
		close(fds[i]);
	if (rc)
		fprintf(stderr, "snapshot-cost: %s\n", err);
	return rc ? -1 : t;
}

/* One round: fresh RAM, saved, mapped back from the file, saved again. */
static int round_trip(uint64_t size, uint64_t touch, int skip_holes, const char *tmp)
{
	struct guest_mem mem, back;
	if (guest_mem_init(&mem, size, false, false))
		return -1;
	if (!skip_holes && mem.pagemap_fd >= 0) {
		close(mem.pagemap_fd);
		mem.pagemap_fd = -1;
	}
	/* In 2 MiB blocks, as a guest's allocations mostly are (and as the host's huge pages give
	 * memory): spread evenly over all of RAM. */
	const uint64_t block = 2ULL << 20;
	uint64_t blocks = touch / block ? touch / block : 1, stride = size / blocks;
	for (uint64_t b = 0; b < blocks; b++)
		memset(mem.mapping + b * stride, 0x5a, block);
	struct snapshot_state *st = calloc(1, sizeof(*st));
	st->config = (struct snapshot_config){.memory_bytes = size, .nr_cpus = 1};
	char dir[256], dir2[256], path[300], cmd[600];
	snprintf(dir, sizeof(dir), "%s/%s-1", tmp, skip_holes ? "skip" : "read");
	snprintf(dir2, sizeof(dir2), "%s/%s-2", tmp, skip_holes ? "skip" : "read");
	long long before = pages_given(&mem);
	double t1 = save(&mem, st, dir);
	long long after = pages_given(&mem);
	guest_mem_destroy(&mem);
	snprintf(path, sizeof(path), "%s/%s", dir, SNAPSHOT_MEMORY);
	int fd = open(path, O_RDONLY);
	if (t1 < 0 || fd < 0 || guest_mem_init_file(&back, size, fd))
		return -1;
	close(fd);
	if (!skip_holes && back.pagemap_fd >= 0) {
		close(back.pagemap_fd);
		back.pagemap_fd = -1;
	}
	double t2 = save(&back, st, dir2);
	long long after2 = pages_given(&back);
	guest_mem_destroy(&back);
	free(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, dir2);
	if (system(cmd) != 0 || t2 < 0)
		return -1;
	printf("%-22s fresh RAM: %7.3f s, pages given %lld -> %lld;  restored RAM: %7.3f s, pages "
	       "given %lld\n",
	       skip_holes ? "skip untouched pages" : "read every page", t1, before, after, t2,
	       after2);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t gib = argc > 1 ? strtoull(argv[1], NULL, 0) : 4;
	uint64_t touch_mib = argc > 2 ? strtoull(argv[2], NULL, 0) : 16;
	if (!gib || !touch_mib || touch_mib > gib * 1024) {
		fprintf(stderr, "usage: snapshot_cost [GIB [TOUCH_MIB]]\n");
		return 2;
	}
	char tmp[] = "/tmp/minivmm-snapshot-cost-XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	printf("snapshot-cost: %lu GiB of guest RAM, %lu MiB of it written, snapshot files in %s\n",
	       gib, touch_mib, tmp);
	int rc = 0;
	for (int r = 0; r < 2 && !rc; r++)
		rc = round_trip(gib << 30, touch_mib << 20, r == 0, tmp) ||
		     round_trip(gib << 30, touch_mib << 20, r != 0, tmp);
	rmdir(tmp);
	return rc ? 1 : 0;
}
