#include "mem_holes.h"

#include <errno.h>
#include <unistd.h>

#define PAGE 4096ULL
/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)

void mem_holes_init(struct mem_holes *h, const struct guest_mem *mem)
{
	*h = (struct mem_holes){.mem = mem};
}

/* Fill the window from the page at index page of the mapping; false if pagemap can't say. */
static bool load_window(struct mem_holes *h, uint64_t page)
{
	const struct guest_mem *m = h->mem;
	uint64_t pages = m->ram_size / PAGE, n = pages - page;
	if (n > MEM_HOLES_WINDOW)
		n = MEM_HOLES_WINDOW;
	uint64_t vpage = (uint64_t)(uintptr_t)m->mapping / PAGE + page;
	ssize_t got = pread(m->pagemap_fd, h->win, n * sizeof(h->win[0]), (off_t)(vpage * 8));
	if (got <= 0 || (size_t)got % sizeof(h->win[0]))
		return false;
	h->win_page = page;
	h->win_len = (unsigned)((size_t)got / sizeof(h->win[0]));
	return true;
}

/* Does the snapshot file hold only zeros (a hole) at byte off? */
static bool file_hole(struct mem_holes *h, uint64_t off)
{
	int fd = h->mem->file_fd;
	if (off >= h->hole_lo && off < h->hole_hi)
		return true;
	if (off >= h->data_lo && off < h->data_hi)
		return false;
	off_t d = lseek(fd, (off_t)off, SEEK_DATA);
	if (d < 0 && errno == ENXIO) { /* only a hole from off to the end */
		h->hole_lo = off;
		h->hole_hi = UINT64_MAX;
		return true;
	}
	if (d < 0)
		return false;
	if ((uint64_t)d > off) {
		uint64_t end = (uint64_t)d & ~(PAGE - 1); /* the pages wholly in the hole */
		if (end <= off)
			return false; /* data starts inside this page */
		h->hole_lo = off;
		h->hole_hi = end;
		return true;
	}
	off_t e = lseek(fd, (off_t)off, SEEK_HOLE);
	h->data_lo = off;
	h->data_hi = e < 0 ? off + PAGE : (uint64_t)e;
	return false;
}

bool mem_holes_is_hole(struct mem_holes *h, uint64_t off)
{
	const struct guest_mem *m = h->mem;
	if (m->pagemap_fd < 0 || off % PAGE || off >= m->ram_size || m->ram_size - off < PAGE)
		return false;
	uint64_t page = off / PAGE;
	if ((page < h->win_page || page >= h->win_page + h->win_len) && !load_window(h, page))
		return false;
	if (h->win[page - h->win_page] & (PM_PRESENT | PM_SWAPPED))
		return false;
	/* Never given memory since the mapping was made: what the file holds there, or zeros. */
	return m->file_fd < 0 || file_hole(h, off);
}
