/* COM1 8250 output, polled on LSR.THRE before every byte. */
#include "serial.h"
#include "x86.h"

#define COM1	 0x3f8
#define UART_IER 1
#define UART_LCR 3
#define UART_LSR 5
#define LSR_DR	 0x01
#define LSR_THRE 0x20

/* No interrupts, 8N1 with DLAB clear; keep whatever baud rate the VMM or BIOS set. */
void serial_init(void)
{
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, 3);
}

static void serial_putc(char c)
{
	/* Bounded: a missing UART reads 0xff (THRE set) anyway, but never hang here. */
	for (int i = 0; i < 1000000 && !(inb(COM1 + UART_LSR) & LSR_THRE); i++)
		;
	outb(COM1, (unsigned char)c);
}

void serial_write(const char *s, size_t n)
{
	while (n--)
		serial_putc(*s++);
}

char serial_getc(void)
{
	while (!(inb(COM1 + UART_LSR) & LSR_DR))
		;
	return (char)inb(COM1);
}
