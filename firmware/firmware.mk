# Firmware guest ("the probe"): freestanding x86-64, its own flags (not the VMM's CFLAGS).
# Outputs: build/firmware/probe.elf (PVH + 64-bit entry) and build/firmware/probe.bzImage.

FW_OUT    := build/firmware
FW_CC     ?= gcc
FW_HOSTCC ?= cc
FW_CFLAGS := -ffreestanding -nostdlib -fno-pic -fno-pie -no-pie -mno-red-zone \
	-mgeneral-regs-only -fno-stack-protector -O2 -Wall -Wextra -Werror -std=gnu11 \
	-m64 -fno-asynchronous-unwind-tables -MMD -MP
FW_LDFLAGS := -static -Wl,-T,firmware/probe.ld -Wl,--build-id=none \
	-Wl,-z,max-page-size=0x1000 -Wl,-z,noexecstack

FW_C_SRCS := $(wildcard firmware/*.c)
FW_S_SRCS := $(wildcard firmware/*.S)
FW_OBJS   := $(FW_C_SRCS:firmware/%.c=$(FW_OUT)/obj/%.o) \
	$(FW_S_SRCS:firmware/%.S=$(FW_OUT)/obj/%.S.o)

.PHONY: firmware
firmware: $(FW_OUT)/probe.elf $(FW_OUT)/probe.bzImage

$(FW_OUT)/obj/%.o: firmware/%.c
	@mkdir -p $(dir $@)
	$(FW_CC) $(FW_CFLAGS) -c -o $@ $<

$(FW_OUT)/obj/%.S.o: firmware/%.S
	@mkdir -p $(dir $@)
	$(FW_CC) $(FW_CFLAGS) -c -o $@ $<

$(FW_OUT)/probe.elf: $(FW_OBJS) firmware/probe.ld
	$(FW_CC) $(FW_CFLAGS) $(FW_LDFLAGS) -o $@ $(FW_OBJS)

$(FW_OUT)/tools/mkbzimage: firmware/tools/mkbzimage.c
	@mkdir -p $(dir $@)
	$(FW_HOSTCC) -O2 -Wall -Wextra -Werror -std=gnu11 -o $@ $<

$(FW_OUT)/probe.bzImage: $(FW_OUT)/probe.elf $(FW_OUT)/tools/mkbzimage
	$(FW_OUT)/tools/mkbzimage $< $@

-include $(FW_OBJS:.o=.d)
