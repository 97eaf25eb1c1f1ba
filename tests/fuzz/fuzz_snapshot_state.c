/* libFuzzer target: the snapshot state parser (vmm/snapshot_format.c) on arbitrary bytes. What
 * it accepts must serialize and parse back to the same records (a balloon's map and a net device's
 * state included). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/snapshot_format.h"

static struct snapshot_state st, again;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[200];
	if (snapshot_state_parse(data, size, &st, err, sizeof(err)))
		return 0;
	size_t len;
	uint8_t *out = snapshot_state_write(&st, &len);
	if (!out)
		abort();
	if (snapshot_state_parse(out, len, &again, err, sizeof(err)) ||
	    memcmp(&st.config, &again.config, sizeof(st.config)) ||
	    memcmp(&st.serial, &again.serial, sizeof(st.serial)))
		abort();
	uint64_t map_bytes = virtio_balloon_map_bytes(st.config.memory_bytes);
	for (uint32_t i = 0; i < st.config.nr_devices; i++)
		if (memcmp(&st.nets[i], &again.nets[i], sizeof(st.nets[i])) ||
		    !st.balloon_map[i] != !again.balloon_map[i] ||
		    (st.balloon_map[i] &&
		     (memcmp(&st.balloons[i], &again.balloons[i], sizeof(st.balloons[i])) ||
		      memcmp(st.balloon_map[i], again.balloon_map[i], map_bytes))))
			abort();
	for (uint32_t i = 0; i < st.config.nr_cpus; i++)
		if (st.vcpus[i].nr_msrs != again.vcpus[i].nr_msrs ||
		    memcmp(&st.vcpus[i].regs, &again.vcpus[i].regs, sizeof(st.vcpus[i].regs)))
			abort();
	free(out);
	snapshot_state_free_maps(&st);
	snapshot_state_free_maps(&again);
	return 0;
}
