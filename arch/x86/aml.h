/* A small ACPI Machine Language (AML) byte-code builder (ACPI 6.5, chapter 20), enough for the
 * DSDT's device objects: scopes, devices, names, integers, packages, buffers, EISA ids, and the
 * resource descriptors of a PCI host bridge's _CRS (section 6.4). */
#ifndef MINIVMM_X86_AML_H
#define MINIVMM_X86_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AML_ZERO_OP	  0x00
#define AML_ONE_OP	  0x01
#define AML_NAME_OP	  0x08
#define AML_BYTE_PREFIX	  0x0a
#define AML_STRING_PREFIX 0x0d
#define AML_WORD_PREFIX	  0x0b
#define AML_DWORD_PREFIX  0x0c
#define AML_QWORD_PREFIX  0x0e
#define AML_SCOPE_OP	  0x10
#define AML_BUFFER_OP	  0x11
#define AML_PACKAGE_OP	  0x12
#define AML_DUAL_NAME	  0x2e
#define AML_MULTI_NAME	  0x2f
#define AML_ROOT_CHAR	  0x5c
#define AML_EXT_OP	  0x5b
#define AML_DEVICE_OP	  0x82 /* after AML_EXT_OP */
#define AML_PKGLENGTH_MAX ((1u << 28) - 1)

/* Output goes to a caller-owned buffer; running out of room (or a malformed name) sets error
 * and stops output, so callers check once at the end. */
struct aml {
	uint8_t *buf;
	size_t cap, len;
	bool error;
};

void aml_init(struct aml *a, uint8_t *buf, size_t cap);
void aml_byte(struct aml *a, uint8_t b);
void aml_bytes(struct aml *a, const void *p, size_t n);

/* PkgLength for a package whose body after the PkgLength is body_len bytes: writes 1..4 bytes
 * to out and returns how many, or 0 if it cannot be encoded. */
int aml_pkglength(uint32_t body_len, uint8_t out[4]);
/* Open a package: returns the mark aml_pkg_end needs; the PkgLength is inserted at the end. */
size_t aml_pkg_begin(struct aml *a);
void aml_pkg_end(struct aml *a, size_t mark);

/* A NameString: "\\_SB_.PCI0", "_HID", "PCI0"; segments shorter than 4 are padded with '_'. */
void aml_name_string(struct aml *a, const char *path);
/* A String object: "LNRO0005" (printable ASCII, NUL-terminated in the AML). */
void aml_string(struct aml *a, const char *s);
/* The shortest integer encoding (ZeroOp, OneOp, Byte/Word/DWord/QWordConst). */
void aml_integer(struct aml *a, uint64_t v);
/* A compressed EISA id ("PNP0A08" -> 0x080ad041); 0 if id is malformed. */
uint32_t aml_eisaid(const char *id);

/* Name(name, <object follows>). */
void aml_name(struct aml *a, const char *name);
/* Scope(path) { and Device(name) {: returns the mark for aml_pkg_end. */
size_t aml_scope_begin(struct aml *a, const char *path);
size_t aml_device_begin(struct aml *a, const char *name);
/* Package(n) {: returns the mark for aml_pkg_end (n <= 255 elements). */
size_t aml_package_begin(struct aml *a, uint8_t n);
/* Buffer() { bytes }. */
void aml_buffer(struct aml *a, const uint8_t *bytes, size_t n);

/* Resource descriptors (ACPI 6.4), for a ResourceTemplate built in its own struct aml and
 * then wrapped with aml_buffer. Address-space ones are producers with fixed min and max. */
void aml_res_word_bus(struct aml *a, uint16_t min, uint16_t max);
void aml_res_word_io(struct aml *a, uint16_t min, uint16_t max);
void aml_res_dword_mem(struct aml *a, uint32_t min, uint32_t max);
void aml_res_io(struct aml *a, uint16_t min, uint16_t max, uint8_t align, uint8_t len);
void aml_res_mem32_fixed(struct aml *a, uint32_t base, uint32_t len);
/* IRQNoFlags() {irq}: an ISA IRQ (0-15), edge-triggered, active high, exclusive. */
void aml_res_irq(struct aml *a, unsigned irq);
/* Interrupt(ResourceConsumer, Edge, ActiveHigh, Exclusive) {gsi}: an extended interrupt. */
void aml_res_interrupt_edge(struct aml *a, uint32_t gsi);
void aml_res_end(struct aml *a);

#endif
