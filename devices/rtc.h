/* MC146818 CMOS real-time clock at ports 0x70/0x71: wall-clock time, no alarms or IRQ. */
#ifndef MINIVMM_RTC_H
#define MINIVMM_RTC_H

#include <stdbool.h>
#include <stdint.h>

#define RTC_PORT 0x70
#define RTC_IRQ	 8 /* ISA IRQ the DSDT gives it; the RTC raises no interrupts */

struct rtc {
	uint8_t index;
	uint8_t cmos[128];
};

void rtc_init(struct rtc *rtc);
void rtc_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
