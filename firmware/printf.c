/* A tiny printf: enough for the probe's result lines, nothing more. */
#include <stdint.h>

#include "printf.h"
#include "serial.h"

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct out *o, uint64_t v, unsigned base, int width, char pad)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	for (; width > n; width--)
		put(o, pad);
	while (n)
		put(o, tmp[--n]);
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		char pad = ' ';
		int width = 0, lng = 0;
		if (*fmt == '0')
			pad = '0';
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			if (v < 0) {
				put(&o, '-');
				v = -v;
			}
			put_num(&o, (uint64_t)v, 10, width, pad);
			break;
		}
		case 'u':
		case 'x': {
			uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			put_num(&o, v, *fmt == 'u' ? 10 : 16, width, pad);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			while (*s)
				put(&o, *s++);
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case '%':
			put(&o, '%');
			break;
		default: /* unknown conversion: show it rather than guess */
			put(&o, '%');
			if (!*fmt)
				fmt--;
			else
				put(&o, *fmt);
			break;
		}
	}
	if (size)
		o.buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

void kprintf(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	serial_write(line, (size_t)n);
}
