/* Guest physical memory: one host mapping split around the 32-bit MMIO hole: private anonymous
 * memory, or a memfd mapped shared when another process (a vhost-user back end) must map it too. */
#ifndef MINIVMM_GUEST_MEM_H
#define MINIVMM_GUEST_MEM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* RAM above this address is moved above 4 GiB, leaving [MMIO_HOLE_START, 4G) for devices. */
#define MMIO_HOLE_START 0xc0000000ULL
#define MMIO_HOLE_END	0x100000000ULL

#define GUEST_MEM_MAX_REGIONS 2

struct mem_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
};

struct guest_mem {
	struct mem_region regions[GUEST_MEM_MAX_REGIONS];
	int nr_regions;
	uint64_t ram_size; /* total bytes of RAM */
	uint8_t *mapping;  /* the single host mapping backing all regions */
	/* For finding never-touched pages without touching them (mem_holes.h): /proc/self/pagemap
	 * and the snapshot file RAM was mapped from, opened at init (before any sandbox), or -1. */
	int pagemap_fd;
	int file_fd;
	/* Shared RAM: the memfd backing the whole mapping (offset 0 = mapping), else -1. */
	int shared_fd;
	/* Background pre-faulting (see guest_mem_init). */
	pthread_t populate_thread;
	bool populate_pending;
	bool populating;
	volatile bool populate_stop;
	pthread_mutex_t populate_lock; /* start vs. stop from different threads */
};

/* The first 2 MiB stay in 4 KiB pages: the loader writes a few pages there (boot tables, a small
 * kernel at 1 MiB) before the guest's first instruction, and a huge page's first touch would
 * clear all 2 MiB on the start-up path (~0.2 ms: examples/bench-boot.sh --startup, "load"). */
#define GUEST_MEM_LOW_4K_BYTES (2ULL << 20)

/* Lay out ram_size bytes and map them. With populate, every page is pre-faulted, by a background
 * thread (MADV_POPULATE_WRITE, see guest_mem_start_populate) so the guest starts at once yet
 * rarely takes a first-touch fault; kernels without MADV_POPULATE_WRITE get a synchronous
 * MAP_POPULATE. Transparent huge pages above GUEST_MEM_LOW_4K_BYTES, 4 KiB pages below it.
 * With shared, RAM is a memfd (mem->shared_fd) mapped MAP_SHARED, for a vhost-user back end to
 * map as well (its huge pages then follow the host's shmem_enabled setting).
 * Returns 0 or -errno. */
int guest_mem_init(struct guest_mem *mem, uint64_t ram_size, bool populate, bool shared);
/* Map ram_size bytes of guest RAM from fd (a snapshot's memory file) MAP_PRIVATE: pages are read
 * from the file as the guest touches them and copied only when it writes them; the file is never
 * written. Returns 0 or -errno. */
int guest_mem_init_file(struct guest_mem *mem, uint64_t ram_size, int fd);
/* Start the background pre-faulting asked for at init. Call it once the vCPU threads exist: it
 * competes with the boot for CPU and mmap_lock, and should not delay it. */
void guest_mem_start_populate(struct guest_mem *mem);
/* Stop the background pre-faulting (if running) and wait for it to finish, so that memory
 * released later with MADV_DONTNEED (the balloon) is not faulted back in by it. Thread-safe; at
 * most one chunk of work is waited for. Later guest_mem_start_populate calls do nothing. */
void guest_mem_stop_populate(struct guest_mem *mem);
/* Lay out regions over caller-provided host memory (used by unit tests). */
void guest_mem_init_with(struct guest_mem *mem, uint8_t *backing, uint64_t ram_size);
void guest_mem_destroy(struct guest_mem *mem);

/* Host pointer for [gpa, gpa+len) if that range lies entirely inside one RAM region, else NULL.
 * Safe against overflow of gpa+len: every guest-supplied address goes through here. */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* Give the host memory behind [start, start + len) of guest RAM back: it reads as zeros
 * afterwards (the balloon). MADV_REMOVE on shared RAM, whose pages a MADV_DONTNEED would leave
 * in the memfd. 0 or -1 with errno. */
int guest_mem_release(const struct guest_mem *mem, void *start, size_t len);

/* Highest guest-physical address + 1 of RAM below the MMIO hole. */
uint64_t guest_mem_low_end(const struct guest_mem *mem);

#endif
