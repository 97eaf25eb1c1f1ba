/* What a guest may print on the operator's terminal (--console stdio,filter=on): text, never a
 * terminal control. A guest that prints ESC or a C1 control drives the terminal: OSC 52 writes
 * the clipboard, OSC 0 the title, DECRQSS and similar requests make the terminal type an answer
 * into the guest's own input, some terminals run commands on others. So only printable ASCII,
 * \n \r \t \b and valid UTF-8 (C1 code points excepted) pass; every other byte is shown, never
 * sent on:
 * - a C0 control or DEL as `cat -v` does, "^[" for ESC, "^G" for BEL, "^?" for DEL: an escape
 *   sequence reads as text ("^[]52;c;..."), and what the guest tried stays visible;
 * - a byte that is not valid UTF-8, and a C1 control (0x80-0x9f alone, or U+0080-U+009F
 *   encoded), as U+FFFD, as a UTF-8 decoder would: none of its bytes is in 0x80-0x9f, so an
 *   8-bit terminal does not take them for C1 controls either. */
#ifndef MINIVMM_CONSOLE_FILTER_H
#define MINIVMM_CONSOLE_FILTER_H

#include <stddef.h>
#include <stdint.h>

/* Most bytes one input byte can make: a held sequence's U+FFFD, then its own. */
#define CONSOLE_FILTER_MAX_OUT 6

struct console_filter {
	uint8_t held[3]; /* the start of a UTF-8 sequence, printed once it is complete */
	uint8_t nheld;
	uint8_t need; /* continuation bytes still to come */
};

/* Feed one byte from the guest; what to print goes to out (CONSOLE_FILTER_MAX_OUT bytes of
 * room). Returns how many bytes that is (0: nothing yet, or a sequence is incomplete). A zeroed
 * struct is a fresh filter. */
size_t console_filter_byte(struct console_filter *f, uint8_t b, uint8_t *out);

#endif
