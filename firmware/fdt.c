/*
 * Read-only flattened device tree walk (devicetree specification 0.4, chapter 5): the header,
 * then the structure block token by token, every offset and length checked against the blob.
 * Only what the probe needs: the virtio-mmio nodes, with `reg` decoded by the parent's
 * #address-cells / #size-cells.
 */
#include <stdbool.h>

#include "fdt.h"
#include "lib.h"

#define FDT_MAGIC      0xd00dfeed
#define FDT_HDR_SIZE   40
#define FDT_BEGIN_NODE 1
#define FDT_END_NODE   2
#define FDT_PROP       3
#define FDT_NOP	       4
#define FDT_END	       9
#define FDT_MAX_DEPTH  16
/* 2.3.5: what a node's children use when it has no #address-cells / #size-cells. */
#define DEFAULT_ADDR_CELLS 2
#define DEFAULT_SIZE_CELLS 1

struct node {
	uint32_t addr_cells, size_cells; /* for its children */
	bool virtio_mmio, disabled, has_reg, has_irq;
	uint64_t base, size;
	uint32_t irq;
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A 1- or 2-cell number; false for any other width. */
static bool cells(const uint8_t *p, uint32_t n, uint64_t *out)
{
	if (n == 1)
		*out = be32(p);
	else if (n == 2)
		*out = (uint64_t)be32(p) << 32 | be32(p + 4);
	else
		return false;
	return true;
}

static bool str_eq(const uint8_t *s, size_t len, const char *want)
{
	size_t n = strlen(want);
	return len == n + 1 && !memcmp(s, want, n) && !s[n];
}

/* Does the string list (NUL-separated, as in `compatible`) hold want? */
static bool list_has(const uint8_t *v, size_t len, const char *want)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && v[j])
			j++;
		if (j == len) /* unterminated tail: not a string */
			return false;
		if (str_eq(v + i, j - i + 1, want))
			return true;
		i = j + 1;
	}
	return false;
}

static bool name_is(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static bool has_nul(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!s[i])
			return true;
	return false;
}

static void prop(struct node *n, const struct node *parent, const char *name, const uint8_t *v,
		 uint32_t len)
{
	if (name_is(name, "#address-cells") && len == 4)
		n->addr_cells = be32(v);
	else if (name_is(name, "#size-cells") && len == 4)
		n->size_cells = be32(v);
	else if (name_is(name, "compatible"))
		n->virtio_mmio = list_has(v, len, "virtio,mmio");
	else if (name_is(name, "status"))
		n->disabled = !str_eq(v, len, "okay") && !str_eq(v, len, "ok");
	else if (name_is(name, "interrupts") && len >= 4) {
		n->irq = be32(v);
		n->has_irq = true;
	} else if (name_is(name, "reg")) {
		uint32_t ac = parent->addr_cells, sc = parent->size_cells;
		n->has_reg = ac <= 2 && sc <= 2 && len >= 4 * (ac + sc) && cells(v, ac, &n->base) &&
			     cells(v + 4 * ac, sc, &n->size);
	}
}

static const char *header(const uint8_t *b, size_t size, size_t *st_off, size_t *st_len,
			  size_t *str_off, size_t *str_len)
{
	if (size < FDT_HDR_SIZE || be32(b) != FDT_MAGIC)
		return "bad magic";
	size_t total = be32(b + 4), version = be32(b + 20), last_comp = be32(b + 24);
	if (total < FDT_HDR_SIZE || total > size)
		return "bad totalsize";
	if (version < 16 || last_comp > 17)
		return "unsupported version";
	*st_off = be32(b + 8);
	*str_off = be32(b + 12);
	*str_len = be32(b + 32);
	if (*st_off < FDT_HDR_SIZE || *st_off > total || *st_off & 3)
		return "bad structure block offset";
	/* size_dt_struct is there from version 17; before, the block runs to the end. */
	*st_len = version >= 17 ? be32(b + 36) : total - *st_off;
	if (*st_len > total - *st_off)
		return "structure block past the end";
	if (*str_off > total || *str_len > total - *str_off)
		return "strings block past the end";
	return 0;
}

int fdt_virtio_mmio(const void *blob, size_t size, struct fdt_mmio_dev *out, unsigned max,
		    const char **err)
{
	const uint8_t *b = blob;
	size_t st_off, len, str_off, str_len;
	if ((*err = header(b, size, &st_off, &len, &str_off, &str_len)))
		return -1;
	const uint8_t *s = b + st_off, *strings = b + str_off;
	static const struct node top = {.addr_cells = DEFAULT_ADDR_CELLS,
					.size_cells = DEFAULT_SIZE_CELLS};
	struct node stack[FDT_MAX_DEPTH];
	unsigned depth = 0;
	bool root_seen = false;
	int found = 0;
	size_t off = 0;
	for (;;) {
		if (off > len || len - off < 4) {
			*err = "structure block ends without FDT_END";
			return -1;
		}
		uint32_t tok = be32(s + off);
		off += 4;
		if (tok == FDT_NOP)
			continue;
		if (tok == FDT_END) {
			if (depth || !root_seen) {
				*err = "FDT_END inside a node";
				return -1;
			}
			return found;
		}
		if (tok == FDT_BEGIN_NODE) {
			if (depth == FDT_MAX_DEPTH || (!depth && root_seen)) {
				*err = depth ? "nodes nested too deep" : "second root node";
				return -1;
			}
			while (off < len && s[off])
				off++;
			if (off == len) {
				*err = "unterminated node name";
				return -1;
			}
			off = (off + 4) & ~(size_t)3; /* past the NUL, aligned */
			stack[depth++] = (struct node){.addr_cells = DEFAULT_ADDR_CELLS,
						       .size_cells = DEFAULT_SIZE_CELLS};
			root_seen = true;
		} else if (tok == FDT_END_NODE) {
			if (!depth) {
				*err = "unbalanced FDT_END_NODE";
				return -1;
			}
			const struct node *n = &stack[--depth];
			if (n->virtio_mmio && !n->disabled && n->has_reg && n->has_irq) {
				if ((unsigned)found < max)
					out[found] =
					    (struct fdt_mmio_dev){n->base, n->size, n->irq};
				found++;
			}
		} else if (tok == FDT_PROP) {
			if (!depth || len - off < 8) {
				*err = "bad property";
				return -1;
			}
			uint32_t plen = be32(s + off), nameoff = be32(s + off + 4);
			off += 8;
			if (plen > len - off || nameoff >= str_len) {
				*err = "property past its block";
				return -1;
			}
			const char *name = (const char *)strings + nameoff;
			if (!has_nul(name, str_len - nameoff)) {
				*err = "unterminated property name";
				return -1;
			}
			prop(&stack[depth - 1], depth >= 2 ? &stack[depth - 2] : &top, name,
			     s + off, plen);
			off = (off + plen + 3) & ~(size_t)3; /* past len: the next read says so */
		} else {
			*err = "unknown token";
			return -1;
		}
	}
}
