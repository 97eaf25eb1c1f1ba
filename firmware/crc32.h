/* CRC-32/IEEE (the zlib one). */
#ifndef CRC32_H
#define CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32(const void *data, size_t len);
/* Continues a CRC: crc32_update(crc32(a, n), b, m) is the CRC of a then b (zlib's crc32()). */
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);

#endif
