/* CRC-32/IEEE, reflected polynomial 0xedb88320, table-driven (table built on first use). */
#include "crc32.h"

static uint32_t table[256];

static void crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t c = crc ^ 0xffffffffu;
	if (!table[1])
		crc32_init();
	while (len--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

uint32_t crc32(const void *data, size_t len)
{
	return crc32_update(0, data, len);
}
