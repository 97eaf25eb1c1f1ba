/* 8250/16550A UART (COM1) with interrupt support, wired to a console sink. */
#ifndef MINIVMM_SERIAL_H
#define MINIVMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SERIAL_COM1_BASE 0x3f8
#define SERIAL_COM1_IRQ	 4
#define SERIAL_RX_FIFO	 64

/* Where transmitted bytes go and how the IRQ line is driven (decouples the UART from KVM). */
struct serial_ops {
	void (*tx)(void *opaque, uint8_t byte);
	void (*set_irq)(void *opaque, int level);
	void *opaque;
};

struct serial {
	pthread_mutex_t lock;
	struct serial_ops ops;
	uint8_t ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr;
	bool thri_pending; /* transmitter-empty interrupt waiting to be reported */
	uint8_t rx[SERIAL_RX_FIFO];
	unsigned rx_head, rx_count;
	int irq_level;
	uint64_t tx_bytes;
};

void serial_init(struct serial *s, const struct serial_ops *ops);
void serial_destroy(struct serial *s);
/* Register access at offset 0..7 from the base port. */
void serial_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);
/* Queue bytes from the console; returns how many fitted in the receive FIFO. */
unsigned serial_receive(struct serial *s, const uint8_t *buf, unsigned len);

/* The registers and receive FIFO, as a snapshot stores them (bytes only: no padding). */
struct serial_state {
	uint8_t ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr;
	uint8_t thri_pending, irq_level, rx_count;
	uint8_t rx[SERIAL_RX_FIFO]; /* the FIFO's bytes, oldest first */
};

void serial_save(struct serial *s, struct serial_state *out);
/* Load a saved state (from a file: hostile). Returns 0, or -1 if it is not one serial_save
 * could have written (nothing changed then). */
int serial_restore(struct serial *s, const struct serial_state *in);

#endif
