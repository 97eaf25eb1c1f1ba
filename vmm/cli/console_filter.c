#include "console_filter.h"

#include <stdbool.h>
#include <string.h>

static size_t put_replacement(uint8_t *out)
{
	static const uint8_t fffd[3] = {0xef, 0xbf, 0xbd};
	memcpy(out, fffd, sizeof(fffd));
	return sizeof(fffd);
}

/* Whether c may follow lead as its first continuation byte: the ranges that leave out overlong
 * forms, surrogates, code points past U+10FFFF and (after 0xc2) the C1 controls. */
static bool first_continuation_ok(uint8_t lead, uint8_t c)
{
	switch (lead) {
	case 0xc2:
		return c >= 0xa0 && c <= 0xbf; /* c2 80-9f: U+0080-U+009F, the C1 controls */
	case 0xe0:
		return c >= 0xa0 && c <= 0xbf;
	case 0xed:
		return c >= 0x80 && c <= 0x9f;
	case 0xf0:
		return c >= 0x90 && c <= 0xbf;
	case 0xf4:
		return c >= 0x80 && c <= 0x8f;
	default:
		return c >= 0x80 && c <= 0xbf;
	}
}

size_t console_filter_byte(struct console_filter *f, uint8_t b, uint8_t *out)
{
	size_t n = 0;
	if (f->need) {
		bool ok =
		    f->nheld == 1 ? first_continuation_ok(f->held[0], b) : (b >= 0x80 && b <= 0xbf);
		if (ok && --f->need) {
			f->held[f->nheld++] = b;
			return 0;
		}
		if (ok) {
			memcpy(out, f->held, f->nheld);
			n = f->nheld;
			out[n++] = b;
			f->nheld = 0;
			return n;
		}
		/* A broken sequence: one U+FFFD for what was held, and b is looked at afresh. */
		n = put_replacement(out);
		f->nheld = 0;
		f->need = 0;
	}
	if ((b >= 0x20 && b < 0x7f) || b == '\n' || b == '\r' || b == '\t' || b == '\b') {
		out[n++] = b;
		return n;
	}
	if (b < 0x20 || b == 0x7f) {
		out[n++] = '^';
		out[n++] = b ^ 0x40; /* ESC: '[', BEL: 'G', DEL: '?' */
		return n;
	}
	if (b >= 0xc2 && b <= 0xdf)
		f->need = 1;
	else if (b >= 0xe0 && b <= 0xef)
		f->need = 2;
	else if (b >= 0xf0 && b <= 0xf4)
		f->need = 3;
	else
		return n + put_replacement(out + n); /* 0x80-0xc1, 0xf5-0xff: never a lead */
	f->held[0] = b;
	f->nheld = 1;
	return n;
}
