/* The console filter (vmm/cli/console_filter.c): text passes, terminal controls are shown as text,
 * bytes that are not valid UTF-8 become U+FFFD. */
#include <criterion/criterion.h>
#include <string.h>

#include "vmm/cli/console_filter.h"

#define FFFD "\xef\xbf\xbd"

/* What the filter prints for the n bytes of in (fed one at a time), NUL-terminated. */
static const char *filter(const char *in, size_t n)
{
	static char out[1024];
	struct console_filter f = {0};
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[CONSOLE_FILTER_MAX_OUT];
		size_t k = console_filter_byte(&f, (uint8_t)in[i], buf);
		cr_assert_leq(k, CONSOLE_FILTER_MAX_OUT);
		cr_assert_lt(used + k, sizeof(out));
		memcpy(out + used, buf, k);
		used += k;
	}
	out[used] = '\0';
	return out;
}

#define expect(in, want) cr_expect_str_eq(filter(in, sizeof(in) - 1), want, "%s", #in)

Test(console_filter, text_and_line_controls_pass)
{
	expect("hello, world 0123 ~!{}", "hello, world 0123 ~!{}");
	expect("a\r\nb\tc\bd", "a\r\nb\tc\bd");
}

/* The attacks: an escape sequence in any form reads as text, with no ESC in it. */
Test(console_filter, escape_sequences_become_text)
{
	expect("\x1b[31mred", "^[[31mred");
	expect("\x1b]52;c;SGVsbG8=\x07", "^[]52;c;SGVsbG8=^G"); /* OSC 52: clipboard write */
	expect("\x1b]0;title\x1b\\", "^[]0;title^[\\");		/* OSC 0: window title */
	expect("\x1bP$qm\x1b\\", "^[P$qm^[\\");			/* DECRQSS: an answer typed back */
	expect("\x1b[21t", "^[[21t");				/* title report */
	expect("\x00\x01\x05\x0e\x1f\x7f", "^@^A^E^N^_^?");	/* NUL, ENQ (answerback), SO, DEL */
}

/* 8-bit controls: 0x9b is CSI and 0x9d OSC on a terminal that takes C1, alone or encoded. */
Test(console_filter, c1_controls_become_replacement_characters)
{
	expect("\x9b"
	       "31m",
	       FFFD "31m");
	expect("\x9d"
	       "52;c;x\x9c",
	       FFFD "52;c;x" FFFD);
	expect("\xc2\x9b"
	       "31m",
	       FFFD FFFD "31m");
	expect("\xc2\x80\xc2\x9f", FFFD FFFD FFFD FFFD);
}

Test(console_filter, valid_utf8_passes)
{
	expect("caf\xc3\xa9 \xc2\xa0\xc2\xbf", "caf\xc3\xa9 \xc2\xa0\xc2\xbf");
	expect("\xe2\x82\xac \xe0\xa0\x80 \xef\xbf\xbf", "\xe2\x82\xac \xe0\xa0\x80 \xef\xbf\xbf");
	expect("\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", "\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
}

/* A held sequence is printed whole or not at all: a broken one is one U+FFFD, and the byte that
 * broke it is looked at on its own (an ESC there is still caught). */
Test(console_filter, invalid_utf8_becomes_replacement_characters)
{
	expect("\x80\xbf", FFFD FFFD);			 /* lone continuation bytes */
	expect("\xc0\xaf\xc1\xbf", FFFD FFFD FFFD FFFD); /* overlong leads */
	expect("\xe0\x80\xaf", FFFD FFFD FFFD);		 /* overlong 3-byte form */
	expect("\xed\xa0\x80", FFFD FFFD FFFD);		 /* a surrogate */
	expect("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* past U+10FFFF */
	expect("\xf5\xff", FFFD FFFD);
	expect("\xe2\x82"
	       "A",
	       FFFD "A");
	expect("\xe2\x82\x1b[2J", FFFD "^[[2J");
	expect("\xf0\x9f\x98\xc3\xa9", FFFD "\xc3\xa9");
}

/* An incomplete sequence is held until it completes: nothing of it is out before. */
Test(console_filter, incomplete_sequence_is_held)
{
	struct console_filter f = {0};
	uint8_t out[CONSOLE_FILTER_MAX_OUT];
	cr_assert_eq(console_filter_byte(&f, 0xe2, out), 0);
	cr_assert_eq(console_filter_byte(&f, 0x82, out), 0);
	cr_assert_eq(console_filter_byte(&f, 0xac, out), 3);
	cr_assert_eq(memcmp(out, "\xe2\x82\xac", 3), 0);
}

/* The worst case fits: three held bytes broken by a byte that is itself invalid. */
Test(console_filter, most_output_for_one_byte)
{
	struct console_filter f = {0};
	uint8_t out[CONSOLE_FILTER_MAX_OUT];
	console_filter_byte(&f, 0xf0, out);
	console_filter_byte(&f, 0x9f, out);
	console_filter_byte(&f, 0x98, out);
	cr_assert_eq(console_filter_byte(&f, 0xff, out), 6);
	cr_assert_eq(memcmp(out, FFFD FFFD, 6), 0);
}

/* Every byte value alone: nothing but printable ASCII, \n \r \t \b and U+FFFD comes out, and
 * never an ESC or a byte in 0x80-0x9f. */
Test(console_filter, no_byte_passes_as_a_control)
{
	for (int b = 0; b < 256; b++) {
		char in[2] = {(char)b, 'x'};
		const char *out = filter(in, 2);
		for (const char *p = out; *p; p++) {
			uint8_t c = (uint8_t)*p;
			cr_assert(
			    c != 0x1b && c != 0x07 && !(c >= 0x80 && c <= 0x9f) &&
				(c >= 0x20 || c == '\n' || c == '\r' || c == '\t' || c == '\b'),
			    "byte %#x printed %#x", b, c);
		}
	}
}
