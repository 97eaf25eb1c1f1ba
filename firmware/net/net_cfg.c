/* The interface's addresses and ports from the command line (net.* words). */
#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "net.h"

#define DEFAULT_PORT 9000

const char *net_default_ip, *net_default_peer;

/* The value of key, or def (if set) when the command line lacks it. */
static bool word(const char *key, const char *def, const char **v, size_t *n)
{
	if (cmdline_get(boot_info.cmdline, key, v, n))
		return true;
	if (!def)
		return false;
	*v = def;
	*n = strlen(def);
	return true;
}

static const char *get_ip(const char *key, const char *def, uint32_t *ip, bool required)
{
	const char *v;
	size_t n;
	if (!word(key, def, &v, &n))
		return required ? "missing net.ip or net.peer" : 0;
	return net_parse_ip(v, (unsigned)n, ip) ? 0 : "bad IPv4 address in net.*";
}

static const char *get_port(const char *key, uint16_t *port)
{
	const char *v;
	size_t n;
	uint64_t x;
	*port = DEFAULT_PORT;
	if (!cmdline_get(boot_info.cmdline, key, &v, &n))
		return 0;
	if (!parse_u64(v, n, false, &x) || !x || x > 65535)
		return "bad net.port or net.peer_port";
	*port = (uint16_t)x;
	return 0;
}

const char *net_config(void)
{
	const char *v, *err;
	size_t n, slash = 0;
	if (!word("net.ip", net_default_ip, &v, &n))
		return "missing net.ip (net.ip=A.B.C.D/LEN)";
	while (slash < n && v[slash] != '/')
		slash++;
	uint64_t prefix = 24;
	if (slash < n && (!parse_u64(v + slash + 1, n - slash - 1, false, &prefix) || prefix > 32))
		return "bad net.ip prefix length";
	if (!net_parse_ip(v, (unsigned)slash, &netif.ip))
		return "bad net.ip address";
	uint32_t host_mask = prefix ? ~0u << (32 - prefix) : 0;
	netif.mask = __builtin_bswap32(host_mask);
	if ((err = get_ip("net.peer", net_default_peer, &netif.peer, true)))
		return err;
	/* The peer doubles as the gateway unless net.gw names another. */
	netif.gw = netif.peer;
	if ((err = get_ip("net.gw", 0, &netif.gw, false)))
		return err;
	if (cmdline_get(boot_info.cmdline, "net.peer_mac", &v, &n)) {
		for (unsigned i = 0; i < 6; i++) {
			uint32_t b;
			if (n != 17 || (i < 5 && v[3 * i + 2] != ':') ||
			    !parse_hex32(v + 3 * i, 2, &b))
				return "bad net.peer_mac";
			netif.peer_mac[i] = (uint8_t)b;
		}
		netif.static_peer_mac = true;
	}
	if ((err = get_port("net.port", &netif.port)) ||
	    (err = get_port("net.peer_port", &netif.peer_port)))
		return err;
	return 0;
}
