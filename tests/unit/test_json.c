/* The control socket's JSON: strict parsing of flat request objects (malformed input is an
 * error with a reason, never a crash) and the writer's escaping. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/api/json.h"

static struct json_object obj;
static char err[160];

static int parse(const char *s)
{
	err[0] = '\0';
	return json_parse_object(s, strlen(s), &obj, err, sizeof(err));
}

Test(json, request_objects)
{
	cr_assert_eq(parse("{\"cmd\":\"balloon-set\",\"mib\":128}"), 0, "%s", err);
	cr_assert_eq(obj.n, 2);
	const struct json_member *m = json_get(&obj, "cmd");
	cr_assert(m && m->type == JSON_STRING);
	cr_assert_str_eq(m->str, "balloon-set");
	m = json_get(&obj, "mib");
	cr_assert(m && m->type == JSON_INT && m->num == 128);
	cr_assert_null(json_get(&obj, "other"));
	cr_assert_eq(parse(" \t{ } \r\n"), 0);
	cr_assert_eq(obj.n, 0);
	cr_assert_eq(parse("{\"a\":true,\"b\":false,\"c\":-5,\"d\":0}"), 0, "%s", err);
	cr_assert(obj.m[0].type == JSON_BOOL && obj.m[0].boolean);
	cr_assert(obj.m[1].type == JSON_BOOL && !obj.m[1].boolean);
	cr_assert_eq(obj.m[2].num, -5);
	cr_assert_eq(parse("{\"n\":-9223372036854775808,\"m\":9223372036854775807}"), 0);
	cr_assert_eq(obj.m[0].num, INT64_MIN);
	cr_assert_eq(obj.m[1].num, INT64_MAX);
}

Test(json, string_escapes)
{
	cr_assert_eq(parse("{\"s\":\"a\\\"b\\\\c\\/d\\n\\u00e9\\ud83d\\ude00\"}"), 0, "%s", err);
	cr_assert_str_eq(obj.m[0].str, "a\"b\\c/d\n\xc3\xa9\xf0\x9f\x98\x80");
	cr_assert_eq(parse("{\"s\":\"\xc3\xa9\"}"), 0, "%s", err);
}

static void refused(const char *s)
{
	cr_assert_neq(parse(s), 0, "accepted: %s", s);
	cr_assert_neq(err[0], '\0', "no reason for: %s", s);
}

Test(json, malformed)
{
	const char *bad[] = {
	    "",
	    "   ",
	    "[]",
	    "\"cmd\"",
	    "{",
	    "}",
	    "{\"cmd\"}",
	    "{\"cmd\":}",
	    "{\"cmd\":\"status\"",
	    "{\"cmd\":\"status\",}",
	    "{,}",
	    "{cmd:\"status\"}",
	    "{'cmd':'status'}",
	    "{\"cmd\":\"status\"}}",
	    "{\"cmd\":\"status\"} x",
	    "{\"cmd\":\"status\"}{}",
	    "{\"a\":null}",
	    "{\"a\":{}}",
	    "{\"a\":[1]}",
	    "{\"a\":1.5}",
	    "{\"a\":1e3}",
	    "{\"a\":01}",
	    "{\"a\":-}",
	    "{\"a\":+1}",
	    "{\"a\":9223372036854775808}",
	    "{\"a\":-9223372036854775809}",
	    "{\"a\":tru}",
	    "{\"a\":truex}",
	    "{\"a\":\"\\x\"}",
	    "{\"a\":\"\\u12\"}",
	    "{\"a\":\"\\u0000\"}",
	    "{\"a\":\"\\ud800\"}",
	    "{\"a\":\"\\udc00\"}",
	    "{\"a\":\"\\ud800\\u0041\"}",
	    "{\"a\":\"tab\there\"}",
	    "{\"a\":\"\xff\"}",
	    "{\"a\":\"\xc0\xaf\"}",
	    "{\"a\":\"\xed\xa0\x80\"}",
	    "{\"a\":\"unterminated}",
	    "{\"a\":1,\"a\":2}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i]);
	/* Embedded NUL bytes are data, not a terminator. */
	cr_assert_neq(json_parse_object("{}\0", 3, &obj, err, sizeof(err)), 0);
}

Test(json, limits)
{
	char buf[2048];
	char big[JSON_MAX_STRING + 1];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(buf, sizeof(buf), "{\"a\":\"%s\"}", big);
	refused(buf);
	big[JSON_MAX_STRING - 1] = '\0';
	snprintf(buf, sizeof(buf), "{\"a\":\"%s\"}", big);
	cr_assert_eq(parse(buf), 0, "%s", err);
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{");
	for (int i = 0; i <= JSON_MAX_MEMBERS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s\"k%d\":%d", i ? "," : "", i, i);
	snprintf(buf + n, sizeof(buf) - n, "}");
	refused(buf);
}

Test(json, writer)
{
	struct json_writer w;
	json_writer_init(&w);
	json_begin_object(&w);
	json_key(&w, "ok");
	json_bool(&w, true);
	json_key(&w, "s");
	json_string(&w, "q\"b\\n\n\x01\xff\xc3\xa9");
	json_key(&w, "list");
	json_begin_array(&w);
	json_uint(&w, 18446744073709551615ULL);
	json_int(&w, -3);
	json_begin_object(&w);
	json_end_object(&w);
	json_end_array(&w);
	json_end_object(&w);
	size_t len;
	char *s = json_writer_finish(&w, &len);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, "{\"ok\":true,\"s\":\"q\\\"b\\\\n\\n\\u0001\\ufffd\xc3\xa9\","
			    "\"list\":[18446744073709551615,-3,{}]}");
	cr_assert_eq(len, strlen(s));
	free(s);

	json_writer_init(&w);
	json_begin_object(&w); /* unbalanced */
	cr_assert_null(json_writer_finish(&w, NULL));
}
