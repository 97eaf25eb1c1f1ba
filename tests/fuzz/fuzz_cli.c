/* libFuzzer target: the command line. The input is split on NUL and newline into argv words
 * (argv[0] is "minivmm"), each in its own allocation so ASan sees any read past a word; the
 * parser runs twice in a row (getopt keeps state between calls) and whatever it accepted is
 * checked and freed (LeakSanitizer catches options kept on an error path), and a plain valid
 * command line must parse right after it.
 *
 * Words naming /dev, /proc or /sys are refused before parsing: --disk path= opens its image,
 * and opening a FIFO or a device node has side effects that have nothing to do with parsing. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "vmm/cli/cli.h"

#define MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_config(const struct vm_config *cfg)
{
	/* --restore takes the machine from the snapshot: no kernel, no devices on the line. */
	if (cfg->restore_dir) {
		if (!cfg->restore_dir[0] || cfg->kernel_path || cfg->nr_devices)
			abort();
		return;
	}
	if (!cfg->kernel_path || !cfg->cmdline || cfg->nr_cpus < 1 || cfg->nr_cpus > MAX_VCPUS ||
	    cfg->memory_bytes < (16ULL << 20) || cfg->memory_bytes > (1ULL << 40) ||
	    (cfg->memory_bytes & ((1ULL << 20) - 1)) || cfg->nr_devices < 0 ||
	    cfg->nr_devices > MAX_DEVICES)
		abort();
	for (int i = 0; i < MAX_VCPUS; i++)
		if (cfg->pinned[i] && (i >= cfg->nr_cpus || CPU_COUNT(&cfg->pin_sets[i]) == 0))
			abort();
	if (cfg->console == CONSOLE_FILE && (!cfg->console_path || !cfg->console_path[0]))
		abort();
	/* A CPU set accepted on the command line prints as a list that parses back the same. */
	if (cfg->io_pinned) {
		char buf[CPU_SETSIZE * 6];
		cpu_set_t again;
		char err[256];
		format_cpu_list(&cfg->io_pin_set, buf, sizeof(buf));
		if (parse_cpu_list(buf, CPU_SETSIZE, &again, err, sizeof(err)) ||
		    !CPU_EQUAL(&again, &cfg->io_pin_set))
			abort();
	}
}

static void parse_once(int argc, char **words)
{
	/* cli_parse rewrites device words in place: parse a fresh copy of the vector each time. */
	char *argv[MAX_WORDS + 2];
	for (int i = 0; i < argc; i++)
		argv[i] = words[i];
	argv[argc] = NULL;
	struct vm_config cfg;
	char err[256];
	err[0] = 0;
	enum cli_result r = cli_parse(argc, argv, &cfg, err, sizeof(err));
	if (r == CLI_RUN)
		check_config(&cfg);
	else if (r == CLI_ERROR && (!err[0] || strlen(err) >= sizeof(err)))
		abort(); /* every refusal says why */
	cli_free_config(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool once;
	if (!once) {
		once = true;
		log_set_quiet(true);
		/* --help and --version print to stdout. */
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			close(fd);
		}
	}
	if (size > 4096)
		return 0;
	char *words[MAX_WORDS + 1];
	int argc = 0;
	words[argc++] = strdup("minivmm");
	size_t start = 0;
	for (size_t i = 0; i <= size && argc < MAX_WORDS; i++) {
		if (i < size && data[i] != 0 && data[i] != '\n')
			continue;
		char *w = malloc(i - start + 1);
		memcpy(w, data + start, i - start);
		w[i - start] = 0;
		words[argc++] = w;
		start = i + 1;
	}
	bool refused = false;
	for (int i = 0; i < argc; i++)
		if (strstr(words[i], "/dev") || strstr(words[i], "/proc") ||
		    strstr(words[i], "/sys"))
			refused = true;
	if (!refused) {
		parse_once(argc, words);
		parse_once(argc, words);
		/* Nothing from this vector may leak into the next parse (getopt's position). */
		char a0[] = "minivmm", a1[] = "--kernel", a2[] = "k";
		char *good[] = {a0, a1, a2, NULL};
		struct vm_config cfg;
		char err[256];
		if (cli_parse(3, good, &cfg, err, sizeof(err)) != CLI_RUN)
			abort();
		cli_free_config(&cfg);
	}
	for (int i = 0; i < argc; i++)
		free(words[i]);
	return 0;
}
