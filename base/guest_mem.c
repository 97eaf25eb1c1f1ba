#include "guest_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>
#include <sys/mman.h>

#include <linux/capability.h>

#include "thread_sandbox.h"

static void layout(struct guest_mem *mem, uint8_t *backing, uint64_t ram_size)
{
	memset(mem, 0, sizeof(*mem));
	mem->mapping = backing;
	mem->ram_size = ram_size;
	mem->populate_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	uint64_t low = ram_size < MMIO_HOLE_START ? ram_size : MMIO_HOLE_START;
	mem->regions[0] = (struct mem_region){.gpa = 0, .size = low, .hva = backing};
	mem->nr_regions = 1;
	mem->pagemap_fd = mem->file_fd = mem->shared_fd = -1;
	if (ram_size > low) {
		mem->regions[1] = (struct mem_region){
		    .gpa = MMIO_HOLE_END, .size = ram_size - low, .hva = backing + low};
		mem->nr_regions = 2;
	}
}

/* /proc/self/pagemap for its present and swapped bits only. The kernel shows page frame
 * numbers (host physical addresses, a Rowhammer aid) to a descriptor whose opener had
 * CAP_SYS_ADMIN, and keeps showing them after the VMM drops root (--jail): so open it with
 * CAP_SYS_ADMIN out of this thread's effective set (capabilities are per thread), and put
 * it back right after. -1 if that cannot be done: mem_holes then reads pages instead. */
static int open_pagemap(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	if (syscall(SYS_capget, &hdr, caps) < 0)
		return -1;
	const unsigned word = CAP_TO_INDEX(CAP_SYS_ADMIN);
	const uint32_t bit = CAP_TO_MASK(CAP_SYS_ADMIN);
	bool had = caps[word].effective & bit;
	if (had) {
		caps[word].effective &= ~bit;
		if (syscall(SYS_capset, &hdr, caps) < 0)
			return -1;
	}
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (had) {
		caps[word].effective |= bit;
		syscall(SYS_capset, &hdr, caps); /* back within the permitted set: cannot fail */
	}
	return fd;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Fault in chunk by chunk so that guest_mem_destroy can stop a large populate early. */
#define POPULATE_CHUNK (2ULL << 20)

static void *populate_thread(void *arg)
{
	struct guest_mem *mem = arg;
	pthread_setname_np(pthread_self(), "populate");
	/* Lowest priority: the vCPUs, which fault pages in themselves if need be, come first. Not
	 * SCHED_IDLE: a starved thread holding mmap_lock would stall everyone behind it. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	if (thread_sandbox_narrow(SANDBOX_POPULATE))
		return NULL; /* the guest faults pages in itself */
	for (uint64_t off = 0; off < mem->ram_size && !mem->populate_stop; off += POPULATE_CHUNK) {
		uint64_t len =
		    mem->ram_size - off < POPULATE_CHUNK ? mem->ram_size - off : POPULATE_CHUNK;
		if (madvise(mem->mapping + off, len, MADV_POPULATE_WRITE) < 0)
			break; /* out of memory: the guest faults pages in itself */
	}
	return NULL;
}

/* A memfd of ram_size bytes for shared guest RAM, or -errno. */
static int create_shared_backing(uint64_t ram_size)
{
	int fd = memfd_create("minivmm-guest-ram", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)ram_size) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int guest_mem_init(struct guest_mem *mem, uint64_t ram_size, bool populate, bool shared)
{
	int fd = -1;
	if (shared && (fd = create_shared_backing(ram_size)) < 0)
		return fd;
	const int flags = (shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS) | MAP_NORESERVE;
	void *p = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	bool async = populate && madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
	if (populate && !async) {
		munmap(p, ram_size);
		p = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, flags | MAP_POPULATE, fd, 0);
		if (p == MAP_FAILED)
			goto fail;
	}
	/* Guest RAM is large and sparse in use; never dump it into a core file. Transparent huge
	 * pages where the host allows them: fewer faults and far less page pinning for direct I/O
	 * (1 MiB O_DIRECT disk reads ran 3x faster). The balloon's 4 KiB releases still work. */
	madvise(p, ram_size, MADV_DONTDUMP);
	if (ram_size > GUEST_MEM_LOW_4K_BYTES)
		madvise((uint8_t *)p + GUEST_MEM_LOW_4K_BYTES, ram_size - GUEST_MEM_LOW_4K_BYTES,
			MADV_HUGEPAGE);
	layout(mem, p, ram_size);
	mem->populate_pending = async;
	mem->pagemap_fd = open_pagemap();
	mem->shared_fd = fd;
	return 0;
fail:;
	int e = errno;
	if (fd >= 0)
		close(fd);
	return -e;
}

int guest_mem_init_file(struct guest_mem *mem, uint64_t ram_size, int fd)
{
	void *p = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(p, ram_size, MADV_DONTDUMP);
	layout(mem, p, ram_size);
	mem->pagemap_fd = open_pagemap();
	mem->file_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return 0;
}

void guest_mem_start_populate(struct guest_mem *mem)
{
	pthread_mutex_lock(&mem->populate_lock);
	if (mem->populate_pending && !mem->populate_stop) {
		mem->populate_pending = false;
		if (pthread_create(&mem->populate_thread, NULL, populate_thread, mem) == 0)
			mem->populating = true;
	}
	pthread_mutex_unlock(&mem->populate_lock);
}

void guest_mem_stop_populate(struct guest_mem *mem)
{
	pthread_mutex_lock(&mem->populate_lock);
	mem->populate_stop = true;
	mem->populate_pending = false;
	if (mem->populating) {
		pthread_join(mem->populate_thread, NULL);
		mem->populating = false;
	}
	pthread_mutex_unlock(&mem->populate_lock);
}

void guest_mem_init_with(struct guest_mem *mem, uint8_t *backing, uint64_t ram_size)
{
	layout(mem, backing, ram_size);
}

void guest_mem_destroy(struct guest_mem *mem)
{
	guest_mem_stop_populate(mem);
	if (mem->mapping) { /* laid out: the descriptors are open or -1 */
		munmap(mem->mapping, mem->ram_size);
		if (mem->pagemap_fd >= 0)
			close(mem->pagemap_fd);
		if (mem->file_fd >= 0)
			close(mem->file_fd);
		if (mem->shared_fd >= 0)
			close(mem->shared_fd);
	}
	memset(mem, 0, sizeof(*mem));
}

int guest_mem_release(const struct guest_mem *mem, void *start, size_t len)
{
	/* A private anonymous page is freed by DONTNEED and refaults as zeros; a shared one
	 * would only lose this mapping's view of it, the memfd keeping the page (and its data):
	 * REMOVE frees the backing store too. */
	return madvise(start, len, mem->shared_fd >= 0 ? MADV_REMOVE : MADV_DONTNEED);
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	for (int i = 0; i < mem->nr_regions; i++) {
		const struct mem_region *r = &mem->regions[i];
		if (gpa < r->gpa)
			continue;
		uint64_t off = gpa - r->gpa;
		if (off > r->size || len > r->size - off)
			continue;
		return r->hva + off;
	}
	return NULL;
}

uint64_t guest_mem_low_end(const struct guest_mem *mem)
{
	return mem->regions[0].size;
}
