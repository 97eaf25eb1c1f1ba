/* --timing: the start-up chain charges each interval to one step, the steps add up to the
 * total exactly, and a launcher's exec timestamp is taken only when it makes sense. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/startup_timing.h"
#include "vmm/cli/cli.h"

static char line[640];

/* The value of "name=" in line, in nanoseconds ("U.UUU" microseconds); -1 for "-". */
static long long field_ns(const char *name)
{
	char key[32];
	snprintf(key, sizeof(key), " %s=", name);
	const char *p = strstr(line, key);
	cr_assert_not_null(p, "no %s in '%s'", name, line);
	p += strlen(key);
	if (*p == '-')
		return -1;
	long long us, frac;
	int n;
	cr_assert_eq(sscanf(p, "%lld.%3lld%n", &us, &frac, &n), 2, "bad %s in '%s'", name, line);
	cr_assert_eq(n, (int)strcspn(p, " "), "three decimals for %s in '%s'", name, line);
	return us * 1000 + frac;
}

static long long sum_of_steps(void)
{
	long long sum = 0;
	for (int i = 0; i < STARTUP_NR_STEPS; i++) {
		long long v = field_ns(startup_step_name(i));
		cr_assert(v >= -1);
		if (v > 0)
			sum += v;
	}
	return sum;
}

Test(startup_timing, steps_add_up_to_the_total)
{
	struct startup_timing t;
	startup_timing_begin(&t, 10000, "1000");
	startup_timing_charge(&t, STARTUP_ARGS, 10500);
	startup_timing_charge(&t, STARTUP_KVM, 12001);
	startup_timing_charge(&t, STARTUP_MEMORY, 12100);
	startup_timing_charge(&t, STARTUP_KVM, 15100);	   /* charged twice: the two add */
	startup_timing_charge(&t, STARTUP_SECCOMP, 15000); /* clock went backwards: 0 */
	startup_timing_charge(&t, STARTUP_THREADS, 16000);
	startup_timing_charge(&t, STARTUP_GUEST, 1016000);
	startup_timing_charge(&t, STARTUP_SECCOMP, 2000000); /* after the first byte: ignored */
	startup_timing_format(&t, line, sizeof(line));
	cr_assert_str_eq(line,
			 "startup-us: exec=9.000 args=0.500 kvm=4.501 memory=0.099 devices=0.000 "
			 "load=0.000 tables=0.000 vcpus=0.000 other=0.000 seccomp=0.000 "
			 "threads=0.900 guest=1000.000 total=1015.000 from=exec first_byte=yes");
	cr_assert_eq(sum_of_steps(), field_ns("total"));
	cr_assert_eq(field_ns("total"), 1016000 - 1000, "exec timestamp to first byte");
}

Test(startup_timing, without_exec_time_the_total_starts_at_main)
{
	const char *bad[] = {NULL, "", "12x", "-5", "+5", " 5", "99999999999999999999", "10001"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct startup_timing t;
		startup_timing_begin(&t, 10000, bad[i]);
		startup_timing_charge(&t, STARTUP_ARGS, 10250);
		startup_timing_charge(&t, STARTUP_LOAD, 11000);
		startup_timing_format(&t, line, sizeof(line));
		cr_assert_eq(field_ns("exec"), -1, "t0 '%s' taken: %s", bad[i] ? bad[i] : "(null)",
			     line);
		cr_assert_eq(field_ns("total"), 1000);
		cr_assert_eq(sum_of_steps(), 1000);
		cr_assert(strstr(line, " from=main first_byte=no"), "%s", line);
	}
	struct startup_timing t;
	startup_timing_begin(&t, 10000, "10000"); /* exec at the same nanosecond as main */
	startup_timing_format(&t, line, sizeof(line));
	cr_assert_eq(field_ns("exec"), 0);
	cr_assert(strstr(line, " from=exec "), "%s", line);
}

Test(startup_timing, large_values_and_short_buffers)
{
	struct startup_timing t;
	startup_timing_begin(&t, 5000000000000LL, "1");
	startup_timing_charge(&t, 99, 6000000000000LL); /* not a step: ignored */
	startup_timing_charge(&t, STARTUP_GUEST, 6000000000001LL);
	startup_timing_format(&t, line, sizeof(line));
	cr_assert_eq(field_ns("exec"), 4999999999999LL);
	cr_assert_eq(field_ns("guest"), 1000000000001LL);
	cr_assert_eq(sum_of_steps(), field_ns("total"));
	char small[16];
	int n = startup_timing_format(&t, small, sizeof(small));
	cr_assert_eq(n, (int)strlen(line), "the length it needs");
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert_str_eq(startup_step_name(STARTUP_NR_STEPS), "?");
}

Test(startup_timing, cli_flag)
{
	struct vm_config cfg;
	char err[256];
	char *off[] = {"minivmm", "--kernel", "k"};
	cr_assert_eq(cli_parse(3, off, &cfg, err, sizeof(err)), CLI_RUN, "%s", err);
	cr_assert(!cfg.timing, "off by default");
	cli_free_config(&cfg);
	char *on[] = {"minivmm", "--kernel", "k", "--timing"};
	cr_assert_eq(cli_parse(4, on, &cfg, err, sizeof(err)), CLI_RUN, "%s", err);
	cr_assert(cfg.timing);
	cli_free_config(&cfg);
}
