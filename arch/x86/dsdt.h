/* The DSDT's AML: the PCI host bridge (\_SB.PCI0, PNP0A08) with its resources and legacy
 * interrupt routing (_PRT), and a motherboard resource (PNP0C02) reserving the ECAM window. */
#ifndef MINIVMM_X86_DSDT_H
#define MINIVMM_X86_DSDT_H

#include "arch/x86/aml.h"

/* Append the definition blocks' AML (not the table header). Check a->error afterwards. */
void dsdt_build(struct aml *a);

#endif
