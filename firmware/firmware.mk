# Firmware guest ("the probe"): freestanding x86-64, its own flags (not the VMM's CFLAGS).
# Outputs: build/firmware/probe.elf (PVH + 64-bit entry) and build/firmware/probe.bzImage.

FW_OUT    := build/firmware
# Sources by layer: firmware/ (main, boot data, command line, printf, lib), arch/ (start-up,
# traps, interrupts, SMP, paging, PVM), drivers/ (serial, PCI, virtio), net/ (the IPv4 stack),
# tests/ (the test= programs). Every folder is on the include path.
FW_DIRS   := firmware firmware/arch firmware/drivers firmware/net firmware/tests
FW_CC     ?= gcc
FW_HOSTCC ?= cc
FW_LD     ?= ld
FW_CFLAGS := -ffreestanding -nostdlib -fno-pic -fno-pie -no-pie -mno-red-zone \
	-mgeneral-regs-only -fno-stack-protector -O2 -Wall -Wextra -Werror -std=gnu11 \
	-m64 -fno-asynchronous-unwind-tables -MMD -MP $(FW_DIRS:%=-I%)
FW_LDFLAGS := -static -Wl,-T,firmware/probe.ld -Wl,--build-id=none \
	-Wl,-z,max-page-size=0x1000 -Wl,-z,noexecstack

FW_C_SRCS := $(wildcard $(FW_DIRS:%=%/*.c))
FW_S_SRCS := $(filter-out firmware/arch/setup16.S,$(wildcard $(FW_DIRS:%=%/*.S)))
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

# Real-mode setup code: a flat binary linked where mkbzimage puts it in the setup area.
$(FW_OUT)/setup16.bin: $(FW_OUT)/obj/arch/setup16.S.o firmware/firmware.mk
	$(FW_LD) -m elf_x86_64 -Ttext=0x270 -e setup16 --oformat binary -o $@ $<

$(FW_OUT)/probe.bzImage: $(FW_OUT)/probe.elf $(FW_OUT)/setup16.bin $(FW_OUT)/tools/mkbzimage
	$(FW_OUT)/tools/mkbzimage $(FW_OUT)/probe.elf $(FW_OUT)/setup16.bin $@

-include $(FW_OBJS:.o=.d) $(FW_OUT)/obj/arch/setup16.S.d
