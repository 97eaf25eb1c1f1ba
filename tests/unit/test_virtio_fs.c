/* The virtio-fs model (devices/virtio/fs.c): its config space as the driver reads it (the tag
 * NUL-padded to 36 bytes, the request queue count in le32), writes to it ignored, the device's
 * identity and queues, and what virtio_fs_create refuses. The back end is a socketpair's end
 * nobody answers: creating the device sends nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/guest_mem.h"
#include "devices/virtio/fs.h"
#include "vhost_user_fake.h"

static struct guest_mem mem;
static struct virtio_dev dev;
static struct vhost_user *vu;
static struct virtio_fs *fs;
static int peer = -1;

static void setup(void)
{
	cr_assert_eq(guest_mem_init(&mem, 16ull << 20, false, true), 0);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	peer = sv[1];
	vu = vhost_user_from_fd(sv[0], "fake");
	cr_assert(vu);
	fs = NULL;
}

static void teardown(void)
{
	if (fs)
		virtio_fs_destroy(fs); /* closes vu */
	else
		vhost_user_close(vu);
	char c;
	cr_assert_eq(recv(peer, &c, 1, MSG_DONTWAIT), 0, "the device sent the back end something");
	close(peer);
	guest_mem_destroy(&mem);
}

TestSuite(virtio_fs, .init = setup, .fini = teardown);

static struct virtio_fs *create(const char *tag, unsigned queues, uint64_t features,
				unsigned backend_queues, char *err, size_t errlen)
{
	struct virtio_fs_options o = {.request_queues = queues};
	snprintf(o.tag, sizeof(o.tag), "%s", tag);
	const struct vhost_user_info info = {.features = features, .queues = backend_queues};
	return virtio_fs_create(&dev, vu, &info, &o, &mem, NULL, "virtio-fs0", err, errlen);
}

static void config_read(uint32_t off, void *buf, uint32_t len)
{
	virtio_dev_config_access(&dev, off, buf, len, false);
}

Test(virtio_fs, config_space_tag_padded_and_queue_count)
{
	char err[128] = "";
	fs = create("hostshare", 3, F_VERSION_1, 0, err, sizeof(err));
	cr_assert_not_null(fs, "%s", err);
	cr_assert_eq(dev.ops->device_id, VIRTIO_ID_FS);
	cr_assert_eq(dev.ops->config_size, 40);
	cr_assert_eq(dev.nr_queues, 4, "hiprio and three request queues");
	cr_assert(dev.external_queues, "the back end serves the queues");
	uint8_t cfg[40];
	memset(cfg, 0xee, sizeof(cfg));
	config_read(0, cfg, sizeof(cfg));
	uint8_t want[40] = "hostshare";
	want[36] = 3; /* le32 num_request_queues */
	cr_assert_arr_eq(cfg, want, sizeof(want));
	/* Any piece of it, as the driver reads it (the tag byte by byte). */
	uint8_t b;
	config_read(4, &b, 1);
	cr_assert_eq(b, 's');
	config_read(20, &b, 1);
	cr_assert_eq(b, 0, "padded with NULs");
	uint32_t n;
	config_read(36, &n, 4);
	cr_assert_eq(n, 3);
}

/* A tag of the full 36 bytes has no NUL in config space. */
Test(virtio_fs, config_space_tag_of_36_bytes)
{
	char err[128] = "", tag[37];
	memset(tag, 'x', 36);
	tag[36] = 0;
	fs = create(tag, 1, F_VERSION_1, 2, err, sizeof(err));
	cr_assert_not_null(fs, "%s", err);
	uint8_t cfg[40];
	config_read(0, cfg, sizeof(cfg));
	cr_assert_arr_eq(cfg, tag, 36);
	uint32_t n;
	memcpy(&n, cfg + 36, 4);
	cr_assert_eq(n, 1);
}

/* The config space is read-only (virtio 1.2, 5.11.4): a driver's write changes nothing. */
Test(virtio_fs, config_writes_ignored)
{
	char err[128] = "";
	fs = create("tag", 2, F_VERSION_1, 0, err, sizeof(err));
	cr_assert_not_null(fs, "%s", err);
	uint8_t junk[40];
	memset(junk, 0x5a, sizeof(junk));
	virtio_dev_config_access(&dev, 0, junk, sizeof(junk), true);
	virtio_dev_config_access(&dev, 36, junk, 4, true);
	uint8_t cfg[40], want[40] = "tag";
	want[36] = 2;
	config_read(0, cfg, sizeof(cfg));
	cr_assert_arr_eq(cfg, want, sizeof(want));
}

/* Only VERSION_1 and the ring features the front end passes on are offered: not the
 * notification queue (bit 0), which this model does not have. */
Test(virtio_fs, features_offered)
{
	char err[128] = "";
	const uint64_t backend =
	    F_VERSION_1 | F_PROTOCOL | 1ull | 1ull << 28 | 1ull << 29 | 1ull << 34;
	fs = create("tag", 1, backend, 0, err, sizeof(err));
	cr_assert_not_null(fs, "%s", err);
	cr_assert_eq(dev.device_features, F_VERSION_1 | 1ull << 28 | 1ull << 29, "0x%llx",
		     (unsigned long long)dev.device_features);
}

static void refused(const char *tag, unsigned queues, uint64_t features, unsigned backend_queues,
		    const char *why)
{
	char err[128] = "";
	cr_assert_null(create(tag, queues, features, backend_queues, err, sizeof(err)),
		       "tag '%s', %u queues: accepted", tag, queues);
	cr_assert(strstr(err, why), "error '%s' lacks '%s'", err, why);
}

Test(virtio_fs, create_refusals)
{
	refused("", 1, F_VERSION_1, 0, "tag must have 1 to 36 bytes");
	refused("tag", 0, F_VERSION_1, 0, "request queues must be 1 to 15");
	refused("tag", 16, F_VERSION_1, 0, "request queues must be 1 to 15");
	refused("tag", 2, F_VERSION_1, 2, "the back end has 2 queues, 3 asked");
	refused("tag", 1, 1ull << 28, 0, "VIRTIO_F_VERSION_1");
	/* Just enough: the hiprio queue and the request queues. */
	char err[128] = "";
	fs = create("tag", 15, F_VERSION_1, 16, err, sizeof(err));
	cr_assert_not_null(fs, "%s", err);
	cr_assert_eq(dev.nr_queues, 16);
}

/* A tag that fills the options' buffer without a NUL (37 bytes) is refused, not read past. */
Test(virtio_fs, create_refuses_an_unterminated_tag)
{
	struct virtio_fs_options o = {.request_queues = 1};
	memset(o.tag, 'y', sizeof(o.tag));
	const struct vhost_user_info info = {.features = F_VERSION_1};
	char err[128] = "";
	cr_assert_null(
	    virtio_fs_create(&dev, vu, &info, &o, &mem, NULL, "virtio-fs0", err, sizeof(err)));
	cr_assert(strstr(err, "tag must have 1 to 36 bytes"), "%s", err);
}

Test(virtio_fs, create_refuses_private_memory)
{
	guest_mem_destroy(&mem);
	cr_assert_eq(guest_mem_init(&mem, 16ull << 20, false, false), 0);
	refused("tag", 1, F_VERSION_1, 0, "not shared");
}
