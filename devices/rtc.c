#include "rtc.h"

#include <string.h>
#include <time.h>

#define RTC_SECONDS  0x00
#define RTC_MINUTES  0x02
#define RTC_HOURS    0x04
#define RTC_WEEKDAY  0x06
#define RTC_DAY	     0x07
#define RTC_MONTH    0x08
#define RTC_YEAR     0x09
#define RTC_STATUS_A 0x0a
#define RTC_STATUS_B 0x0b
#define RTC_STATUS_C 0x0c
#define RTC_STATUS_D 0x0d
#define RTC_CENTURY  0x32

#define RTC_B_24H    0x02
#define RTC_B_BINARY 0x04
#define RTC_D_VRT    0x80 /* battery good */

void rtc_init(struct rtc *rtc)
{
	memset(rtc, 0, sizeof(*rtc));
	rtc->cmos[RTC_STATUS_A] = 0x26; /* 32.768 kHz base, 1024 Hz rate, update not in progress */
	rtc->cmos[RTC_STATUS_B] = RTC_B_24H;
	rtc->cmos[RTC_STATUS_D] = RTC_D_VRT;
}

static uint8_t encode(const struct rtc *rtc, int v)
{
	if (rtc->cmos[RTC_STATUS_B] & RTC_B_BINARY)
		return (uint8_t)v;
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

static uint8_t read_cmos(const struct rtc *rtc, uint8_t index)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	switch (index) {
	case RTC_SECONDS:
		return encode(rtc, tm.tm_sec);
	case RTC_MINUTES:
		return encode(rtc, tm.tm_min);
	case RTC_HOURS:
		return encode(rtc, tm.tm_hour);
	case RTC_WEEKDAY:
		return encode(rtc, tm.tm_wday + 1);
	case RTC_DAY:
		return encode(rtc, tm.tm_mday);
	case RTC_MONTH:
		return encode(rtc, tm.tm_mon + 1);
	case RTC_YEAR:
		return encode(rtc, tm.tm_year % 100);
	case RTC_CENTURY:
		return encode(rtc, (tm.tm_year + 1900) / 100);
	default:
		return rtc->cmos[index];
	}
}

void rtc_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct rtc *rtc = opaque;
	if (len != 1) {
		if (!is_write)
			memset(data, 0xff, len);
		return;
	}
	if (offset == 0) {
		if (is_write)
			rtc->index = data[0] & 0x7f; /* bit 7 is the NMI mask */
		else
			data[0] = 0xff;
		return;
	}
	if (!is_write) {
		data[0] = read_cmos(rtc, rtc->index);
		return;
	}
	/* Time registers read the host clock; C and D are read-only. */
	if (rtc->index == RTC_STATUS_A)
		rtc->cmos[RTC_STATUS_A] = data[0] & 0x7f; /* UIP is read-only: never "updating" */
	else if (rtc->index == RTC_STATUS_B || rtc->index > RTC_STATUS_D)
		rtc->cmos[rtc->index] = data[0];
}
