/* Opening a file the user named (kernel, initrd, disk image, console file, --dump-dtb) without
 * trusting what it is: a FIFO, or a device whose open waits for a carrier, would block open()
 * forever, and by then the stop signals may already be blocked. */
#ifndef MINIVMM_USER_FILE_H
#define MINIVMM_USER_FILE_H

#include <sys/stat.h>
#include <sys/types.h>

/* What a caller accepts (bit mask). */
#define USER_FILE_REG 1u /* regular file */
#define USER_FILE_BLK 2u /* block device */
#define USER_FILE_CHR 4u /* character device (a terminal, /dev/null) */

/* open_user_file's result for a file of a kind the caller does not accept. */
#define USER_FILE_WRONG_KIND (-2)

/* open(path, flags | O_CLOEXEC, mode) that never blocks: O_NONBLOCK for the open itself,
 * cleared again on what is kept. Returns the descriptor, with *st its fstat;
 * USER_FILE_WRONG_KIND (nothing left open) when path is not one of `kinds`, also when that is
 * why the open failed, *st then says what it is (user_file_kind); else -1 with errno set.
 * A FIFO is never accepted. */
int open_user_file(const char *path, int flags, mode_t mode, unsigned kinds, struct stat *st);

/* "a FIFO", "a directory", ...: for error messages. */
const char *user_file_kind(mode_t m);

#endif
