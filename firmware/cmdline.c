/* Command-line parsing: whitespace-separated key=value words. */
#include "cmdline.h"
#include "lib.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

bool cmdline_get(const char *s, const char *key, const char **val, size_t *len)
{
	size_t klen = strlen(key);
	bool found = false;
	while (*s) {
		while (is_space(*s))
			s++;
		const char *w = s;
		while (*s && !is_space(*s))
			s++;
		if ((size_t)(s - w) > klen && !memcmp(w, key, klen) && w[klen] == '=') {
			*val = w + klen + 1;
			*len = (size_t)(s - *val);
			found = true;
		}
	}
	return found;
}

bool parse_u64(const char *s, size_t len, bool suffix, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0)
		return false;
	if (suffix && i + 1 == len) {
		unsigned shift;
		switch (s[i]) {
		case 'K':
		case 'k':
			shift = 10;
			break;
		case 'M':
		case 'm':
			shift = 20;
			break;
		case 'G':
		case 'g':
			shift = 30;
			break;
		default:
			return false;
		}
		if (v > (UINT64_MAX >> shift))
			return false;
		v <<= shift;
		i++;
	}
	if (i != len)
		return false;
	*out = v;
	return true;
}

bool parse_hex32(const char *s, size_t len, uint32_t *out)
{
	uint32_t v = 0;
	if (len == 0 || len > 8)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}
