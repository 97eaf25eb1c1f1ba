#include "guest_mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static void layout(struct guest_mem *mem, uint8_t *backing, uint64_t ram_size)
{
	memset(mem, 0, sizeof(*mem));
	mem->mapping = backing;
	mem->ram_size = ram_size;
	uint64_t low = ram_size < MMIO_HOLE_START ? ram_size : MMIO_HOLE_START;
	mem->regions[0] = (struct mem_region){.gpa = 0, .size = low, .hva = backing};
	mem->nr_regions = 1;
	if (ram_size > low) {
		mem->regions[1] = (struct mem_region){
		    .gpa = MMIO_HOLE_END, .size = ram_size - low, .hva = backing + low};
		mem->nr_regions = 2;
	}
}

int guest_mem_init(struct guest_mem *mem, uint64_t ram_size, bool populate)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	if (populate)
		flags |= MAP_POPULATE;
	void *p = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* Guest RAM is large and sparse in use; never dump it into a core file. */
	madvise(p, ram_size, MADV_DONTDUMP);
	layout(mem, p, ram_size);
	return 0;
}

void guest_mem_init_with(struct guest_mem *mem, uint8_t *backing, uint64_t ram_size)
{
	layout(mem, backing, ram_size);
}

void guest_mem_destroy(struct guest_mem *mem)
{
	if (mem->mapping)
		munmap(mem->mapping, mem->ram_size);
	memset(mem, 0, sizeof(*mem));
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
