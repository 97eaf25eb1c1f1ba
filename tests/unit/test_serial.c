/* 8250 UART register semantics: transmit, receive FIFO, interrupts, loopback, divisor latch. */
#include <criterion/criterion.h>
#include <string.h>

#include "devices/serial.h"

struct sink {
	uint8_t out[64];
	unsigned n;
	int irq;
	int irq_changes;
};

static void tx(void *opaque, uint8_t b)
{
	struct sink *s = opaque;
	if (s->n < sizeof(s->out))
		s->out[s->n++] = b;
}

static void set_irq(void *opaque, int level)
{
	struct sink *s = opaque;
	s->irq = level;
	s->irq_changes++;
}

static uint8_t rd(struct serial *u, unsigned reg)
{
	uint8_t v = 0;
	serial_io(u, reg, &v, 1, false);
	return v;
}

static void wr(struct serial *u, unsigned reg, uint8_t v)
{
	serial_io(u, reg, &v, 1, true);
}

static struct sink sink;
static struct serial uart;

static void setup(void)
{
	memset(&sink, 0, sizeof(sink));
	serial_init(&uart, &(struct serial_ops){.tx = tx, .set_irq = set_irq, .opaque = &sink});
}

static void teardown(void)
{
	serial_destroy(&uart);
}

TestSuite(serial, .init = setup, .fini = teardown);

Test(serial, transmit_reaches_sink_and_lsr_shows_empty)
{
	cr_assert(rd(&uart, 5) & 0x20, "THRE set at reset");
	wr(&uart, 0, 'h');
	wr(&uart, 0, 'i');
	cr_assert_eq(sink.n, 2);
	cr_assert_eq(memcmp(sink.out, "hi", 2), 0);
	cr_assert(rd(&uart, 5) & 0x60);
	cr_assert_eq(sink.irq, 0, "no interrupt while IER is 0");
}

Test(serial, receive_fifo_and_data_ready_interrupt)
{
	wr(&uart, 1, 0x01); /* IER: receive data available */
	cr_assert_eq(sink.irq, 0);
	cr_assert_eq(serial_receive(&uart, (const uint8_t *)"ab", 2), 2);
	cr_assert_eq(sink.irq, 1);
	cr_assert_eq(rd(&uart, 2) & 0x0f, 0x04, "IIR says RDI");
	cr_assert(rd(&uart, 5) & 0x01, "LSR DR");
	cr_assert_eq(rd(&uart, 0), 'a');
	cr_assert_eq(rd(&uart, 0), 'b');
	cr_assert_eq(sink.irq, 0, "line drops when the FIFO is empty");
	cr_assert_eq(rd(&uart, 5) & 0x01, 0);
}

Test(serial, receive_fifo_bounded)
{
	uint8_t buf[SERIAL_RX_FIFO + 10];
	memset(buf, 'x', sizeof(buf));
	cr_assert_eq(serial_receive(&uart, buf, sizeof(buf)), SERIAL_RX_FIFO);
	cr_assert_eq(serial_receive(&uart, buf, 1), 0);
}

Test(serial, thre_interrupt_raised_and_acknowledged)
{
	wr(&uart, 1, 0x02); /* IER: THRI */
	cr_assert_eq(sink.irq, 1, "enabling THRI with an empty THR raises it");
	cr_assert_eq(rd(&uart, 2) & 0x0f, 0x02);
	cr_assert_eq(sink.irq, 0, "reading IIR acknowledges THRI");
	cr_assert_eq(rd(&uart, 2) & 0x0f, 0x01, "nothing pending");
	wr(&uart, 0, 'z');
	cr_assert_eq(sink.irq, 1, "THR empty again after a write");
}

Test(serial, divisor_latch_and_loopback)
{
	wr(&uart, 3, 0x80); /* DLAB */
	wr(&uart, 0, 0x01);
	wr(&uart, 1, 0x00);
	cr_assert_eq(rd(&uart, 0), 0x01);
	wr(&uart, 3, 0x03);
	cr_assert_eq(sink.n, 0, "divisor writes are not data");
	wr(&uart, 4, 0x10); /* loopback */
	wr(&uart, 0, 'q');
	cr_assert_eq(sink.n, 0, "loopback does not reach the console");
	cr_assert_eq(rd(&uart, 0), 'q');
}

Test(serial, wide_and_out_of_range_accesses_are_safe)
{
	uint8_t data[4] = {0, 'a', 0, 0};
	serial_io(&uart, 6, data, 4, true); /* offsets 6..9: only 6 and 7 exist */
	serial_io(&uart, 7, data, 1, false);
	cr_assert_eq(data[0], 'a', "scratch register written through a wide access");
}
