/* CRC-32/IEEE (the zlib/PNG polynomial), for the snapshot files' checksums. */
#ifndef MINIVMM_CRC32_H
#define MINIVMM_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue crc (0 to start) over len bytes. */
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);

/* Continue crc over len zero bytes without reading them: the same as crc32_update over a
 * buffer of len zeros, in O(log len) (a sparse memory file's holes cost nothing). */
uint32_t crc32_zeros(uint32_t crc, uint64_t len);

#endif
