/* CRC-32/IEEE (the zlib one). */
#ifndef CRC32_H
#define CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32(const void *data, size_t len);

#endif
