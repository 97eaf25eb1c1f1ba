/* The fuzz targets link the VMM library but never run `minivmm run` (vmm/run/run.c): its
 * guest's init (embedded from the real build's $(BUILD)/run-init) is not built for them. */
const unsigned char run_init_blob[1], run_init_blob_end[1];
