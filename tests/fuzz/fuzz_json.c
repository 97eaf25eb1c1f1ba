/* libFuzzer target: the control socket's JSON parser on arbitrary bytes, and the writer on
 * whatever strings it accepted (the output must parse back to the same value). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/api/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object obj;
	char err[160];
	if (json_parse_object((const char *)data, size, &obj, err, sizeof(err)))
		return 0;
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	for (int i = 0; i < obj.n; i++) {
		json_key(&w, obj.m[i].key);
		if (obj.m[i].type == JSON_STRING)
			json_string(&w, obj.m[i].str);
		else if (obj.m[i].type == JSON_INT)
			json_int(&w, obj.m[i].num);
		else
			json_bool(&w, obj.m[i].boolean);
	}
	json_end_object(&w);
	size_t len;
	char *out = json_writer_finish(&w, &len);
	if (!out)
		abort();
	struct json_object again;
	if (json_parse_object(out, len, &again, err, sizeof(err)) || again.n != obj.n)
		abort();
	for (int i = 0; i < obj.n; i++) {
		const struct json_member *a = &obj.m[i], *b = &again.m[i];
		if (strcmp(a->key, b->key) || a->type != b->type || strcmp(a->str, b->str) ||
		    a->num != b->num || a->boolean != b->boolean)
			abort();
	}
	free(out);
	return 0;
}
