/* What `minivmm run` builds before booting: the initramfs (checked by unpacking it with cpio(1),
 * the oracle), the kernel version read from a bzImage header, and the module load order from a
 * modules.dep and modules.builtin. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/run/initramfs.h"
#include "vmm/run/kmods.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/minivmm-runimg-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *name, const void *data, size_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void read_file(const char *name, char *buf, size_t cap, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s is missing", path);
	*len = fread(buf, 1, cap, f);
	fclose(f);
}

TestSuite(run_image, .init = make_dir, .fini = remove_dir);

Test(run_image, the_initramfs_unpacks_with_cpio_to_what_was_put_in)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/image.cpio", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	/* A file copied in by the kernel, 4 KiB + 3 bytes (padding after it). */
	char big[4099];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	write_file("module.ko", big, sizeof(big));
	char mpath[256];
	snprintf(mpath, sizeof(mpath), "%s/module.ko", dir);
	int m = open(mpath, O_RDONLY);
	cr_assert_geq(m, 0);
	struct initramfs ir;
	initramfs_init(&ir, fd);
	initramfs_file(&ir, "init", 0755, "#!init", 6);
	initramfs_dir(&ir, "minivmm");
	initramfs_dir(&ir, "minivmm/modules");
	/* Sizes around the 4-byte padding, and a NUL inside the data. */
	static const char conf[] = "arg=true\0env=A=1\0";
	initramfs_file(&ir, "minivmm/run.conf", 0644, conf, sizeof(conf));
	initramfs_file_from(&ir, "minivmm/modules/m.ko", 0644, m);
	initramfs_file(&ir, "minivmm/modules/a.ko", 0644, "abcde", 5);
	initramfs_file(&ir, "minivmm/modules/empty.ko", 0644, "", 0);
	cr_assert_eq(initramfs_finish(&ir), 0);
	cr_assert_eq(ir.len % 4, 0);
	cr_assert_eq(lseek(fd, 0, SEEK_END), ir.len);
	close(m);
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "cd %s && mkdir x && cd x && cpio -i --quiet -d <../image.cpio",
		 dir);
	cr_assert_eq(system(cmd), 0, "cpio could not unpack it");
	char buf[8192];
	size_t len;
	read_file("x/init", buf, sizeof(buf), &len);
	cr_assert_eq(len, 6);
	cr_assert_eq(memcmp(buf, "#!init", 6), 0);
	struct stat st;
	snprintf(path, sizeof(path), "%s/x/init", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0755, "init is not executable");
	read_file("x/minivmm/run.conf", buf, sizeof(buf), &len);
	cr_assert_eq(len, sizeof(conf));
	cr_assert_eq(memcmp(buf, conf, sizeof(conf)), 0);
	read_file("x/minivmm/modules/m.ko", buf, sizeof(buf), &len);
	cr_assert_eq(len, sizeof(big));
	cr_assert_eq(memcmp(buf, big, sizeof(big)), 0, "the copied file differs");
	read_file("x/minivmm/modules/a.ko", buf, sizeof(buf), &len);
	cr_assert_eq(len, 5);
	cr_assert_eq(memcmp(buf, "abcde", 5), 0);
	read_file("x/minivmm/modules/empty.ko", buf, sizeof(buf), &len);
	cr_assert_eq(len, 0);
}

/* A write that fails (here: the archive's descriptor is read-only) fails the archive, with
 * its errno, and nothing after it is tried. */
Test(run_image, a_failed_write_fails_the_archive)
{
	write_file("ro", "", 0);
	char path[256];
	snprintf(path, sizeof(path), "%s/ro", dir);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	struct initramfs ir;
	initramfs_init(&ir, fd);
	initramfs_file(&ir, "init", 0755, "x", 1);
	cr_assert_eq(initramfs_finish(&ir), -1);
	cr_assert_eq(errno, EBADF);
	close(fd);
}

/* A bzImage's first 0x210 bytes with its version string at the kernel_version offset. */
static void fake_bzimage(const char *name, const char *magic, const char *version)
{
	uint8_t img[0x400] = {0};
	memcpy(img + 0x202, magic, 4);
	if (version) {
		img[0x20e] = 0x00; /* kernel_version = 0x100: the string at 0x300 */
		img[0x20f] = 0x01;
		memcpy(img + 0x300, version, strlen(version));
	}
	write_file(name, img, sizeof(img));
}

Test(run_image, the_kernel_version_is_the_headers_first_word)
{
	fake_bzimage("bz", "HdrS", "6.1.0-27-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP");
	char path[256], ver[64], err[256];
	snprintf(path, sizeof(path), "%s/bz", dir);
	cr_assert_eq(kmods_kernel_version(path, ver, sizeof(ver), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(ver, "6.1.0-27-cloud-amd64");
}

Test(run_image, an_image_that_is_not_a_bzimage_or_says_no_version_is_refused)
{
	char path[256], ver[64], err[256];
	fake_bzimage("elf",
		     "\x7f"
		     "ELF",
		     NULL);
	snprintf(path, sizeof(path), "%s/elf", dir);
	cr_assert_eq(kmods_kernel_version(path, ver, sizeof(ver), err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a bzImage"), "%s", err);
	fake_bzimage("nover", "HdrS", NULL);
	snprintf(path, sizeof(path), "%s/nover", dir);
	cr_assert_eq(kmods_kernel_version(path, ver, sizeof(ver), err, sizeof(err)), -1);
	cr_assert(strstr(err, "version"), "%s", err);
	/* A version longer than the caller's buffer, and no terminator in what is read. */
	char longv[200];
	memset(longv, 'x', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	fake_bzimage("long", "HdrS", longv);
	snprintf(path, sizeof(path), "%s/long", dir);
	cr_assert_eq(kmods_kernel_version(path, ver, sizeof(ver), err, sizeof(err)), -1);
	snprintf(path, sizeof(path), "%s/missing", dir);
	cr_assert_eq(kmods_kernel_version(path, ver, sizeof(ver), err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot open"), "%s", err);
}

static const char modules_dep[] =
    "kernel/drivers/virtio/virtio_ring.ko:\n"
    "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/fs/fuse/fuse.ko:\n"
    "kernel/fs/fuse/virtiofs.ko: kernel/fs/fuse/fuse.ko kernel/drivers/virtio/virtio.ko "
    "kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/char/hw_random/virtio-rng.ko: kernel/drivers/virtio/virtio.ko "
    "kernel/drivers/virtio/virtio_ring.ko\n";

Test(run_image, modules_come_after_what_they_depend_on_each_once)
{
	write_file("modules.dep", modules_dep, strlen(modules_dep));
	static const char builtin[] = "kernel/fs/overlayfs/overlay.ko\n";
	write_file("modules.builtin", builtin, strlen(builtin));
	const char *want[] = {"virtiofs", "overlay", "virtio_rng", "virtio"};
	struct kmods m;
	char err[256];
	cr_assert_eq(kmods_resolve(dir, want, 4, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(m.n, 5);
	cr_assert_str_eq(m.path[0], "kernel/drivers/virtio/virtio_ring.ko");
	cr_assert_str_eq(m.path[1], "kernel/drivers/virtio/virtio.ko");
	cr_assert_str_eq(m.path[2], "kernel/fs/fuse/fuse.ko");
	cr_assert_str_eq(m.path[3], "kernel/fs/fuse/virtiofs.ko");
	cr_assert_str_eq(m.path[4], "kernel/drivers/char/hw_random/virtio-rng.ko");
}

Test(run_image, a_driver_neither_built_in_nor_a_module_is_named)
{
	write_file("modules.dep", modules_dep, strlen(modules_dep));
	const char *want[] = {"virtiofs", "overlay"};
	struct kmods m;
	char err[256];
	cr_assert_eq(kmods_resolve(dir, want, 2, &m, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no overlay driver"), "%s", err);
}

Test(run_image, a_directory_without_modules_dep_is_refused)
{
	const char *want[] = {"virtiofs"};
	struct kmods m;
	char err[256];
	cr_assert_eq(kmods_resolve(dir, want, 1, &m, err, sizeof(err)), -1);
	cr_assert(strstr(err, "modules.dep"), "%s", err);
}
