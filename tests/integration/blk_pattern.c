/* Writes the probe's virtio-blk test pattern (firmware/drivers/virtio_blk.c,
 * vblk_pattern) for a seed and a length to stdout, so a test can cmp a disk image against it.
 * Usage: blk_pattern SEED BYTES */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t pattern(uint64_t seed, uint64_t offset)
{
	uint64_t x = seed + (offset / 8) * 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SEED BYTES\n", argv[0]);
		return 2;
	}
	uint64_t seed = strtoull(argv[1], NULL, 0), bytes = strtoull(argv[2], NULL, 0);
	for (uint64_t off = 0; off < bytes; off += 8) {
		uint64_t w = pattern(seed, off);
		unsigned char b[8];
		for (int i = 0; i < 8; i++)
			b[i] = (unsigned char)(w >>
					       (8 * i)); /* little-endian, as the guest stores it */
		if (fwrite(b, 1, bytes - off < 8 ? bytes - off : 8, stdout) == 0)
			return 1;
	}
	return fflush(stdout) ? 1 : 0;
}
