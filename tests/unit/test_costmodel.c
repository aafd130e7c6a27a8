/* test_costmodel.c - the cost model's device files: the keys a file sets
 * over the H200 defaults, its errors with FILE:LINE, and the files built
 * into the library (tools/devices/, tools/embed --devices) that the
 * runtime picks by the driver's device name (costmodel_card).
 *
 * Run from the repository root (tests/run.sh does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/costmodel.h"

#include "check.h"

/* A file of `text` in the temporary directory; its path in path[]. */
static void put_file(char *path, size_t n, const char *dir, const char *name, const char *text)
{
	snprintf(path, n, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("FAIL  cannot write %s\n", path);
		exit(1);
	}
}

/* Every file in tools/devices/ is built in, under its name, and parses. */
static void test_builtin(void)
{
	CHECK(cm_ndevices >= 1, "%d device files built in", cm_ndevices);
	int h100 = 0;
	for (int i = 0; i < cm_ndevices; i++) {
		char path[300];
		snprintf(path, sizeof path, "tools/devices/%s", cm_devices[i].name);
		CHECK(access(path, R_OK) == 0, "%s: built in, not in the tree", path);
		ir_device d = costmodel_h200();
		char why[300];
		CHECK(costmodel_load(path, &d, why, sizeof why) == 0, "%s: %s", path, why);
		h100 |= !strcmp(cm_devices[i].name, "h100.txt");
	}
	CHECK(h100, "h100.txt is not built in");
	/* a name no file's card line holds: the defaults, and no error */
	ir_device d = costmodel_h200(), h = costmodel_h200();
	char why[300] = "x";
	CHECK(costmodel_card("NVIDIA H200", &d, why, sizeof why) == NULL, "an H200 matched a file");
	CHECK(!*why, "why: %s", why);
	CHECK(!memcmp(&d, &h, sizeof d), "the defaults changed with no file matched");
}

/* The runtime's pick: the H100 SXM by its driver name, not its PCIe
 * sibling; the file's keys over the defaults, the others kept. */
static void test_card(void)
{
	ir_device d = costmodel_h200();
	const ir_device h = costmodel_h200();
	char why[300];
	const char *f = costmodel_card("NVIDIA H100 80GB HBM3", &d, why, sizeof why);
	CHECK(f && !strcmp(f, "h100.txt"), "picked %s", f ? f : "(none)");
	CHECK(d.mem_gbps == 3000.0, "mem_gbps %g", d.mem_gbps);
	CHECK(d.bf16_tflops == h.bf16_tflops && d.sms == h.sms && d.task_us == h.task_us,
	      "keys the file does not set changed");
	/* the same keys as mkc --device=tools/devices/h100.txt */
	ir_device e = costmodel_h200();
	CHECK(costmodel_load("tools/devices/h100.txt", &e, why, sizeof why) == 0, "%s", why);
	CHECK(!memcmp(&d, &e, sizeof d), "built in and --device differ");
	ir_device p = costmodel_h200();
	CHECK(costmodel_card("NVIDIA H100 PCIe", &p, why, sizeof why) == NULL,
	      "the PCIe card took the SXM's file");
	CHECK(costmodel_card(NULL, &p, why, sizeof why) == NULL, "no name matched a file");
}

/* A file's lines: `card = NAME` is no key of the model; errors name the
 * file and line. */
static void test_files(const char *dir)
{
	char path[400], why[400];
	ir_device d = costmodel_h200();
	put_file(path, sizeof path, dir, "ok.txt",
		 "# a card\ncard = Some GPU 9000  \nmem_gbps = 1234 # a comment\n\nsms = 100\n");
	CHECK(costmodel_load(path, &d, why, sizeof why) == 0, "%s", why);
	CHECK(d.mem_gbps == 1234.0 && d.sms == 100, "mem_gbps %g sms %d", d.mem_gbps, d.sms);
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"card =\n", "bad.txt:1: card: a device name"},
		{"mem_gbps = 1\ncard\n", "bad.txt:2: expected 'key = value'"},
		{"bogus = 3\n", "bad.txt:1: unknown key 'bogus'"},
		{"sms = 1.5\n", "bad.txt:1: bad value '1.5' for sms (a positive whole number)"},
		{"mem_gbps = -2\n", "bad.txt:1: bad value '-2' for mem_gbps (a positive number)"},
		{"mem_gbps = 2 3\n", "bad.txt:1: expected 'key = value'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ir_device b = costmodel_h200(), h = costmodel_h200();
		put_file(path, sizeof path, dir, "bad.txt", bad[i].text);
		why[0] = 0;
		CHECK(costmodel_load(path, &b, why, sizeof why) != 0, "accepted: %s", bad[i].text);
		CHECK(strstr(why, bad[i].want) != NULL, "%s: got '%s', want '%s'", bad[i].text, why,
		      bad[i].want);
		CHECK(b.mem_gbps == h.mem_gbps && b.sms == h.sms, "a bad line's key was applied");
	}
}

int main(void)
{
	char dir[] = "/tmp/costmodel.XXXXXX";
	if (!mkdtemp(dir)) {
		printf("FAIL  mkdtemp\n");
		return 1;
	}
	test_builtin();
	test_card();
	test_files(dir);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("      could not remove %s\n", dir);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
