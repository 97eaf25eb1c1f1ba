#include "kvm_util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/log.h"

int kvm_open(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			log_error(
			    "/dev/kvm does not exist: load the kvm module (modprobe kvm_intel or "
			    "kvm_amd) and enable virtualization in the firmware");
		else if (e == EACCES || e == EPERM)
			log_error("no permission to open /dev/kvm: run as root or add your user to "
				  "the 'kvm' group (usermod -aG kvm $USER)");
		else
			log_error("cannot open /dev/kvm: %s", strerror(e));
		return -1;
	}
	int version = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (version != KVM_API_VERSION) {
		log_error("/dev/kvm speaks API version %d, minivmm needs %d", version,
			  KVM_API_VERSION);
		close(fd);
		return -1;
	}
	return fd;
}

bool kvm_has_cap(int fd, int cap)
{
	return ioctl(fd, KVM_CHECK_EXTENSION, cap) > 0;
}

int kvm_check_caps(int kvm_fd)
{
	static const struct {
		int cap;
		const char *name;
	} required[] = {
	    {KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP"},
	    {KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY"},
	    {KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID"},
	    {KVM_CAP_PIT2, "KVM_CAP_PIT2"},
	    {KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT"},
	    {KVM_CAP_GET_TSC_KHZ, "KVM_CAP_GET_TSC_KHZ"},
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!kvm_has_cap(kvm_fd, required[i].cap)) {
			log_error("this KVM lacks %s, which minivmm needs", required[i].name);
			return -1;
		}
	}
	return 0;
}
