/*
 * mkbzimage: wrap the probe ELF in a Linux bzImage (Documentation/arch/x86/boot.rst).
 * The protected-mode payload is the flat image from LOAD_ADDR; its 64-bit entry is at +0x200.
 * The real-mode setup code (setup16.S, linked at SETUP_CODE) is copied in at SETUP_CODE.
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD_ADDR      0x100000u
#define SETUP_SECTS    4
#define SETUP_SIZE     ((1 + SETUP_SECTS) * 512)
#define KERNEL_VERSION "minivmm probe v1"
#define KVER_OFF       0x9c0 /* version string at the end of the setup area */
/* Setup code right after the header, in reach of the short jmp at 0x200 (see firmware.mk). */
#define SETUP_CODE 0x270

static void put16(uint8_t *b, size_t off, uint16_t v)
{
	memcpy(b + off, &v, 2);
}

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static int die(const char *msg)
{
	fprintf(stderr, "mkbzimage: %s\n", msg);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return die("usage: mkbzimage probe.elf setup16.bin probe.bzImage");
	size_t elf_size;
	uint8_t *elf = read_file(argv[1], &elf_size);
	if (!elf)
		return die("cannot read the ELF");
	Elf64_Ehdr eh;
	if (elf_size < sizeof(eh))
		return die("not an ELF");
	memcpy(&eh, elf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > elf_size)
		return die("not an x86-64 ELF64");
	if (eh.e_entry != LOAD_ADDR + 0x200)
		return die("e_entry must be LOAD_ADDR + 0x200");

	/* Flat image: file bytes of every PT_LOAD; init_size also covers .bss/.noinit. */
	uint64_t file_end = LOAD_ADDR, mem_end = LOAD_ADDR;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, elf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_paddr < LOAD_ADDR || ph.p_offset + ph.p_filesz > elf_size ||
		    ph.p_memsz < ph.p_filesz || ph.p_paddr + ph.p_memsz > 0x40000000)
			return die("bad PT_LOAD");
		if (ph.p_filesz && ph.p_paddr + ph.p_filesz > file_end)
			file_end = ph.p_paddr + ph.p_filesz;
		if (ph.p_paddr + ph.p_memsz > mem_end)
			mem_end = ph.p_paddr + ph.p_memsz;
	}
	/* Padded so that syssize (16-byte units) describes exactly the bytes in the file. */
	size_t payload_len = (size_t)((file_end - LOAD_ADDR + 15) & ~15ull);
	if (payload_len <= 0x200)
		return die("no payload");
	uint8_t *out = calloc(1, SETUP_SIZE + payload_len);
	if (!out)
		return die("out of memory");
	uint8_t *payload = out + SETUP_SIZE;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, elf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD && ph.p_filesz)
			memcpy(payload + (ph.p_paddr - LOAD_ADDR), elf + ph.p_offset, ph.p_filesz);
	}
	size_t setup_size;
	uint8_t *setup = read_file(argv[2], &setup_size);
	if (!setup || setup_size > KVER_OFF - SETUP_CODE)
		return die("cannot read the setup code, or it is too big");
	uint32_t init_size = (uint32_t)((mem_end - LOAD_ADDR + 0xfff) & ~0xfffull);

	out[0x1f1] = SETUP_SECTS;
	put32(out, 0x1f4, (uint32_t)(payload_len / 16)); /* syssize */
	put16(out, 0x1fa, 0xffff);			 /* vid_mode: normal */
	put16(out, 0x1fe, 0xaa55);			 /* boot_flag */
	out[0x200] = 0xeb;				 /* jmp to the halt loop */
	out[0x201] = (uint8_t)(SETUP_CODE - 0x202);
	memcpy(out + 0x202, "HdrS", 4);
	put16(out, 0x206, 0x020f);	     /* protocol version */
	put16(out, 0x20e, KVER_OFF - 0x200); /* kernel_version */
	out[0x211] = 0x01;		     /* loadflags: LOADED_HIGH */
	put32(out, 0x214, LOAD_ADDR);	     /* code32_start */
	put32(out, 0x22c, 0x7fffffff);	     /* initrd_addr_max */
	put32(out, 0x230, 0x200000);	     /* kernel_alignment */
	out[0x234] = 1;			     /* relocatable_kernel */
	out[0x235] = 12;		     /* min_alignment: 4 KiB (log2) */
	put16(out, 0x236, 0x0001);	     /* xloadflags: XLF_KERNEL_64 */
	put32(out, 0x238, 65535);	     /* cmdline_size */
	put64(out, 0x258, LOAD_ADDR);	     /* pref_address */
	put32(out, 0x260, init_size);	     /* init_size */
	memcpy(out + KVER_OFF, KERNEL_VERSION, sizeof(KERNEL_VERSION));
	memcpy(out + SETUP_CODE, setup, setup_size);
	free(setup);

	FILE *f = fopen(argv[3], "wb");
	if (!f || fwrite(out, 1, SETUP_SIZE + payload_len, f) != SETUP_SIZE + payload_len ||
	    fclose(f))
		return die("cannot write the bzImage");
	free(out);
	free(elf);
	return 0;
}
