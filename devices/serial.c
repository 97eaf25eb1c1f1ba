#include "serial.h"

#include <string.h>

/* Register offsets and bits (PC16550D data sheet). */
#define UART_RX	 0 /* in:  receive buffer (DLAB=0) */
#define UART_TX	 0 /* out: transmit holding (DLAB=0) */
#define UART_IER 1
#define UART_IIR 2 /* in */
#define UART_FCR 2 /* out */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI  0x01
#define UART_IER_THRI 0x02

#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI	0x02
#define UART_IIR_RDI	0x04
#define UART_IIR_FIFO	0xc0

#define UART_LCR_DLAB 0x80
#define UART_MCR_LOOP 0x10
#define UART_MCR_OUT2 0x08

#define UART_LSR_DR   0x01
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40

#define UART_MSR_DCD 0x80
#define UART_MSR_DSR 0x20
#define UART_MSR_CTS 0x10

void serial_init(struct serial *s, const struct serial_ops *ops)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->ops = *ops;
	s->lsr = UART_LSR_THRE | UART_LSR_TEMT;
	s->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	s->mcr = UART_MCR_OUT2;
	s->dll = 12; /* 9600 baud */
}

void serial_destroy(struct serial *s)
{
	pthread_mutex_destroy(&s->lock);
}

static uint8_t pending_iir(const struct serial *s)
{
	if ((s->ier & UART_IER_RDI) && s->rx_count)
		return UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thri_pending)
		return UART_IIR_THRI;
	return UART_IIR_NO_INT;
}

/* Called with the lock held: drive the IRQ line from the current state. */
static void update_irq(struct serial *s)
{
	int level = pending_iir(s) != UART_IIR_NO_INT;
	if (level != s->irq_level) {
		s->irq_level = level;
		if (s->ops.set_irq)
			s->ops.set_irq(s->ops.opaque, level);
	}
}

static void transmit(struct serial *s, uint8_t byte)
{
	if (s->mcr & UART_MCR_LOOP) {
		if (s->rx_count < SERIAL_RX_FIFO) {
			s->rx[(s->rx_head + s->rx_count) % SERIAL_RX_FIFO] = byte;
			s->rx_count++;
		}
	} else if (s->ops.tx) {
		s->ops.tx(s->ops.opaque, byte);
	}
	s->tx_bytes++;
	/* The byte leaves at once: the holding register is empty again. */
	s->thri_pending = true;
}

static uint8_t read_reg(struct serial *s, unsigned reg)
{
	switch (reg) {
	case UART_RX:
		if (s->lcr & UART_LCR_DLAB)
			return s->dll;
		if (!s->rx_count)
			return 0;
		uint8_t b = s->rx[s->rx_head];
		s->rx_head = (s->rx_head + 1) % SERIAL_RX_FIFO;
		s->rx_count--;
		return b;
	case UART_IER:
		return (s->lcr & UART_LCR_DLAB) ? s->dlm : s->ier;
	case UART_IIR: {
		uint8_t iir = pending_iir(s);
		/* Reading IIR while it reports THRI acknowledges that interrupt. */
		if (iir == UART_IIR_THRI)
			s->thri_pending = false;
		return iir | ((s->fcr & 1) ? UART_IIR_FIFO : 0);
	}
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		return s->lsr | (s->rx_count ? UART_LSR_DR : 0);
	case UART_MSR:
		return s->msr;
	default:
		return s->scr;
	}
}

static void write_reg(struct serial *s, unsigned reg, uint8_t v)
{
	switch (reg) {
	case UART_TX:
		if (s->lcr & UART_LCR_DLAB)
			s->dll = v;
		else
			transmit(s, v);
		break;
	case UART_IER:
		if (s->lcr & UART_LCR_DLAB) {
			s->dlm = v;
		} else {
			/* Enabling THRI with an empty holding register raises it at once. */
			if (!(s->ier & UART_IER_THRI) && (v & UART_IER_THRI))
				s->thri_pending = true;
			s->ier = v & 0x0f;
		}
		break;
	case UART_FCR:
		s->fcr = v;
		if (v & 0x02) { /* clear receive FIFO */
			s->rx_count = 0;
			s->rx_head = 0;
		}
		break;
	case UART_LCR:
		s->lcr = v;
		break;
	case UART_MCR:
		s->mcr = v & 0x1f;
		break;
	case UART_SCR:
		s->scr = v;
		break;
	default: /* LSR and MSR are read-only */
		break;
	}
}

void serial_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct serial *s = opaque;
	pthread_mutex_lock(&s->lock);
	/* The UART has byte registers; wider accesses touch consecutive ones. */
	for (uint32_t i = 0; i < len && offset + i < 8; i++) {
		if (is_write)
			write_reg(s, (unsigned)(offset + i), data[i]);
		else
			data[i] = read_reg(s, (unsigned)(offset + i));
	}
	update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

unsigned serial_receive(struct serial *s, const uint8_t *buf, unsigned len)
{
	pthread_mutex_lock(&s->lock);
	unsigned n = 0;
	while (n < len && s->rx_count < SERIAL_RX_FIFO) {
		s->rx[(s->rx_head + s->rx_count) % SERIAL_RX_FIFO] = buf[n++];
		s->rx_count++;
	}
	update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

void serial_save(struct serial *s, struct serial_state *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	*out = (struct serial_state){.ier = s->ier,
				     .lcr = s->lcr,
				     .mcr = s->mcr,
				     .lsr = s->lsr,
				     .msr = s->msr,
				     .scr = s->scr,
				     .dll = s->dll,
				     .dlm = s->dlm,
				     .fcr = s->fcr,
				     .thri_pending = s->thri_pending,
				     .irq_level = (uint8_t)s->irq_level,
				     .rx_count = (uint8_t)s->rx_count};
	for (unsigned i = 0; i < s->rx_count; i++)
		out->rx[i] = s->rx[(s->rx_head + i) % SERIAL_RX_FIFO];
	pthread_mutex_unlock(&s->lock);
}

int serial_restore(struct serial *s, const struct serial_state *in)
{
	if (in->rx_count > SERIAL_RX_FIFO || in->thri_pending > 1 || in->irq_level > 1)
		return -1;
	pthread_mutex_lock(&s->lock);
	s->ier = in->ier;
	s->lcr = in->lcr;
	s->mcr = in->mcr;
	s->lsr = in->lsr;
	s->msr = in->msr;
	s->scr = in->scr;
	s->dll = in->dll;
	s->dlm = in->dlm;
	s->fcr = in->fcr;
	s->thri_pending = in->thri_pending;
	s->irq_level = in->irq_level; /* the line itself is in the irqchip's saved state */
	s->rx_head = 0;
	s->rx_count = in->rx_count;
	memcpy(s->rx, in->rx, sizeof(s->rx));
	pthread_mutex_unlock(&s->lock);
	return 0;
}
