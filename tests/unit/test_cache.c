/* test_cache.c - SHA-256 against FIPS 180-4 vectors, and the JIT cache:
 * directory resolution, put/get, misses, corrupt entries, and compiling on
 * when the cache directory cannot be written.  Works in a temp directory,
 * never in the user's cache.
 */
#include "codegen/cache.h"
#include "codegen/nvrtc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* The entry layout (cache.h): magic, length, the key (128 bytes), the sum. */
enum { SUM_AT = 8 + 8 + 128, HDR = SUM_AT + 32 };

static void hex_of(const void *p, size_t n, char out[65])
{
	sha256_ctx c;
	unsigned char d[32];

	sha256_init(&c);
	sha256_update(&c, p, n);
	sha256_final(&c, d);
	sha256_hex(d, out);
}

static void test_sha256(void)
{
	static const struct {
		const char *msg, *hex;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
		  "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	char hex[65];
	unsigned char d[32], *mil;
	sha256_ctx c;
	size_t i;

	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		hex_of(v[i].msg, strlen(v[i].msg), hex);
		CHECK_SAY(!strcmp(hex, v[i].hex), "SHA-256 of %zu-byte FIPS vector \"%.12s%s\" = %.16s...",
		          strlen(v[i].msg), v[i].msg, strlen(v[i].msg) > 12 ? "..." : "", hex);
	}
	/* One million 'a', fed in uneven pieces to exercise the buffering. */
	mil = malloc(1000000);
	if (!mil) {
		CHECK_SAY(0, "malloc");
		return;
	}
	memset(mil, 'a', 1000000);
	sha256_init(&c);
	for (i = 0; i < 1000000;) {
		size_t k = 1 + (i * 7919) % 131;
		if (k > 1000000 - i)
			k = 1000000 - i;
		sha256_update(&c, mil + i, k);
		i += k;
	}
	sha256_final(&c, d);
	sha256_hex(d, hex);
	CHECK_SAY(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
	          "SHA-256 of one million 'a' in uneven pieces = %.16s...", hex);
	/* Lengths around the padding boundary (55, 56, 63, 64 bytes) agree
	 * whether fed at once or byte by byte. */
	for (i = 54; i <= 66; i++) {
		char one[65], bytes[65];
		size_t j;
		hex_of(mil, i, one);
		sha256_init(&c);
		for (j = 0; j < i; j++)
			sha256_update(&c, mil + j, 1);
		sha256_final(&c, d);
		sha256_hex(d, bytes);
		if (strcmp(one, bytes))
			CHECK_SAY(0, "SHA-256 of %zu bytes: one call and byte by byte differ", i);
	}
	CHECK_SAY(1, "SHA-256 lengths 54..66: one call equals byte by byte");
	free(mil);
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	char path[4096 + 264];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			chmod(path, 0700);
			rm_tree(path);
		} else {
			unlink(path);
		}
	}
	closedir(d);
	rmdir(dir);
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;
	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

static void test_dirs(const char *top)
{
	char buf[2048], want[2048], p[2048];
	struct stat st;
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;

	snprintf(p, sizeof p, "%s/a/b/c", top);
	CHECK_SAY(cg_cache_dir(p, buf, sizeof buf) == CG_OK && !strcmp(buf, p), "override a/b/c is created");
	CHECK_SAY(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "  with mode 0700 (%o)",
	          (unsigned)(st.st_mode & 0777));
	snprintf(p, sizeof p, "%s/a", top);
	CHECK_SAY(stat(p, &st) == 0 && (st.st_mode & 0777) == 0700, "  and its parents too (%o)",
	          (unsigned)(st.st_mode & 0777));

	snprintf(p, sizeof p, "%s/wide", top);
	mkdir(p, 0755);
	chmod(p, 0755);
	CHECK_SAY(cg_cache_dir(p, buf, sizeof buf) == CG_OK, "an existing 0755 directory is used");
	CHECK_SAY(stat(p, &st) == 0 && (st.st_mode & 0777) == 0755, "  and left as it is (%o)",
	          (unsigned)(st.st_mode & 0777));

	snprintf(p, sizeof p, "%s/xdg", top);
	setenv("XDG_CACHE_HOME", p, 1);
	snprintf(want, sizeof want, "%s/xdg/mk", top);
	CHECK_SAY(cg_cache_dir(NULL, buf, sizeof buf) == CG_OK && !strcmp(buf, want),
	          "$XDG_CACHE_HOME/mk: %s", buf);
	snprintf(p, sizeof p, "%s/home", top);
	setenv("HOME", p, 1);
	setenv("XDG_CACHE_HOME", "relative/ignored", 1);
	snprintf(want, sizeof want, "%s/home/.cache/mk", top);
	CHECK_SAY(cg_cache_dir(NULL, buf, sizeof buf) == CG_OK && !strcmp(buf, want),
	          "relative $XDG_CACHE_HOME ignored, $HOME/.cache/mk: %s", buf);
	unsetenv("XDG_CACHE_HOME");
	CHECK_SAY(cg_cache_dir(NULL, buf, sizeof buf) == CG_OK && !strcmp(buf, want),
	          "no $XDG_CACHE_HOME: $HOME/.cache/mk");

	snprintf(p, sizeof p, "%s/file", top);
	write_file(p, "x", 1);
	snprintf(p, sizeof p, "%s/file/sub", top);
	CHECK_SAY(cg_cache_dir(p, buf, sizeof buf) == CG_EIO, "a path under a regular file is CG_EIO (%s)",
	          strerror(errno));
	snprintf(p, sizeof p, "%s/file", top);
	CHECK_SAY(cg_cache_dir(p, buf, sizeof buf) == CG_EIO, "a regular file is CG_EIO");

	if (home)
		setenv("HOME", home, 1);
	else
		unsetenv("HOME");
	if (xdg)
		setenv("XDG_CACHE_HOME", xdg, 1);
	free(home);
	free(xdg);
}

/* The test entry: bytes with every value, so no text assumption hides. */
static unsigned char payload[5000];

static void test_entries(const char *top)
{
	char dir[2048], path[2200];
	const char *key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	void *d = NULL;
	size_t n = 0, i;
	struct stat st;
	unsigned char *raw;

	for (i = 0; i < sizeof payload; i++)
		payload[i] = (unsigned char)(i * 131 + 7);
	snprintf(dir, sizeof dir, "%s/cache", top);
	snprintf(path, sizeof path, "%s/%s.cubin", dir, key);
	CHECK_SAY(cg_cache_dir(dir, dir, sizeof dir) == CG_OK, "cache dir %s", dir);

	CHECK_SAY(cg_cache_get(dir, key, &d, &n) == CG_EIO && d == NULL, "empty cache: miss");
	CHECK_SAY(cg_cache_put(dir, key, payload, sizeof payload) == CG_OK, "put %zu bytes", sizeof payload);
	CHECK_SAY(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 &&
	          st.st_size == (off_t)(sizeof payload + HDR), "entry is KEY.cubin, mode 0600, %d-byte header",
	          HDR);
	CHECK_SAY(count_files(dir) == 1, "no temporary file left behind");
	raw = malloc(sizeof payload + HDR + 1);  /* room for "an extra byte" */
	{
		FILE *f = fopen(path, "rb");
		size_t got = f ? fread(raw, 1, sizeof payload + HDR, f) : 0;
		if (f)
			fclose(f);
		CHECK_SAY(got == sizeof payload + HDR && !memcmp(raw, "MKCACHE2", 8) && raw[8] == (5000 & 255) &&
		          raw[9] == 5000 >> 8 && !memcmp(raw + 16, key, 64) && raw[16 + 64] == 0 &&
		          !memcmp(raw + HDR, payload, sizeof payload),
		          "header: magic MKCACHE2, little-endian length, the key, then the payload");
	}
	CHECK_SAY(cg_cache_get(dir, key, &d, &n) == CG_OK && n == sizeof payload &&
	          !memcmp(d, payload, n), "get: hit, same bytes");
	free(d);
	d = NULL;
	CHECK_SAY(cg_cache_get(dir, "ffff", &d, &n) == CG_EIO, "other key: miss");
	CHECK_SAY(cg_cache_get(dir, "../cache/x", &d, &n) == CG_EINVAL &&
	          cg_cache_put(dir, "a/b", payload, 1) == CG_EINVAL && cg_cache_put(dir, "", payload, 1) == CG_EINVAL,
	          "keys that could leave the directory are CG_EINVAL");
	CHECK_SAY(cg_cache_put(dir, "empty", "", 0) == CG_OK && cg_cache_get(dir, "empty", &d, &n) == CG_OK &&
	          n == 0, "an empty payload round-trips");
	free(d);
	d = NULL;

	/* Damage: each must be a miss that deletes the entry, and a put
	 * afterwards must make it a hit again. */
	{
		static const char *what[] = { "a flipped payload byte", "a flipped checksum byte",
					      "a truncated payload", "a truncated header",
					      "an extra byte", "bad magic", "an empty file" };
		int k;
		for (k = 0; k < 7; k++) {
			size_t len = sizeof payload + HDR;
			memcpy(raw + HDR, payload, sizeof payload);
			cg_cache_put(dir, key, payload, sizeof payload);
			{
				FILE *f = fopen(path, "rb");
				if (f) {
					len = fread(raw, 1, len, f);
					fclose(f);
				}
			}
			switch (k) {
			case 0: raw[HDR + 1234] ^= 0x40; break;
			case 1: raw[SUM_AT + 5] ^= 1; break;
			case 2: len -= 100; break;
			case 3: len = 20; break;
			case 4: raw[len++] = 0; break;
			case 5: raw[7] = '9'; break;
			case 6: len = 0; break;
			}
			write_file(path, raw, len);
			CHECK_SAY(cg_cache_get(dir, key, &d, &n) == CG_EIO && d == NULL,
			          "%s: detected as a miss", what[k]);
			CHECK_SAY(access(path, F_OK) != 0, "  and the bad entry deleted");
			CHECK_SAY(cg_cache_put(dir, key, payload, sizeof payload) == CG_OK &&
			          cg_cache_get(dir, key, &d, &n) == CG_OK && n == sizeof payload &&
			          !memcmp(d, payload, n), "  and rebuilt by the next put");
			free(d);
			d = NULL;
		}
	}
	free(raw);

	snprintf(path, sizeof path, "%s/file", top);
	write_file(path, "x", 1);
	snprintf(dir, sizeof dir, "%s/file/sub", top);
	CHECK_SAY(cg_cache_put(dir, key, payload, 10) == CG_EIO, "put into a path under a regular file: CG_EIO");
	CHECK_SAY(cg_cache_get(dir, key, &d, &n) == CG_EIO, "get from it: miss");
}

/* ---- a cache directory and entries nobody else controls ------------------ */

/* Runs cg_cache_get in a child with a deadline: a get that blocks (a FIFO
 * entry) must not hang the compiler.  Returns the child's verdict: 0 miss,
 * 1 hit, 2 hung, 3 other. */
static int get_in_child(const char *dir, const char *key)
{
	pid_t p;
	int st = 0, waited = 0;

	fflush(stdout);
	if ((p = fork()) == 0) {
		void *d = NULL;
		size_t n = 0;
		cg_status s;
		alarm(10);
		s = cg_cache_get(dir, key, &d, &n);
		_exit(s == CG_OK ? 1 : s == CG_EIO ? 0 : 3);
	}
	while (waitpid(p, &st, WNOHANG) == 0) {
		if (++waited > 300) {   /* 3 s */
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			return 2;
		}
		usleep(10000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

static void test_trust(const char *top)
{
	const char *ka = "aaaa0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
	const char *kb = "bbbb0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
	char dir[2048], pa[2200], pb[2200], p[2200], buf[2048], why[512];
	void *d = NULL;
	size_t n = 0;
	struct stat st;

	snprintf(dir, sizeof dir, "%s/trust", top);
	CHECK_SAY(cg_cache_dir(dir, dir, sizeof dir) == CG_OK, "trust: cache dir %s", dir);
	snprintf(pa, sizeof pa, "%s/%s.cubin", dir, ka);
	snprintf(pb, sizeof pb, "%s/%s.cubin", dir, kb);

	/* an entry is bound to its key: a copy under another key is no hit */
	CHECK_SAY(cg_cache_put(dir, ka, payload, 100) == CG_OK, "put under key A");
	{
		unsigned char raw[400];
		FILE *f = fopen(pa, "rb");
		size_t got = f ? fread(raw, 1, sizeof raw, f) : 0;
		if (f)
			fclose(f);
		write_file(pb, raw, got);
	}
	CHECK_SAY(cg_cache_get(dir, kb, &d, &n) == CG_EIO && !d,
	          "A's entry copied under key B: a miss, not A's binary served as B's");
	free(d);
	d = NULL;
	CHECK_SAY(cg_cache_get(dir, ka, &d, &n) == CG_OK && n == 100, "A itself still hits");
	free(d);
	d = NULL;

	/* entries are not followed through symbolic links */
	unlink(pb);
	CHECK_SAY(symlink(pa, pb) == 0, "B.cubin -> A.cubin");
	CHECK_SAY(cg_cache_get(dir, kb, &d, &n) == CG_EIO && !d, "a symlinked entry is a miss");
	free(d);
	d = NULL;
	CHECK_SAY(cg_cache_put(dir, kb, payload, 50) == CG_OK && lstat(pb, &st) == 0 &&
	          S_ISREG(st.st_mode) && cg_cache_get(dir, ka, &d, &n) == CG_OK && n == 100,
	          "  a put replaces the link, not the entry it pointed to");
	free(d);
	d = NULL;

	/* a FIFO entry must not hang a reader */
	unlink(pb);
	CHECK_SAY(mkfifo(pb, 0600) == 0, "B.cubin is a FIFO");
	CHECK_SAY(get_in_child(dir, kb) == 0, "a FIFO entry is a miss, at once");
	CHECK_SAY(cg_cache_put(dir, kb, payload, 50) == CG_OK && cg_cache_get(dir, kb, &d, &n) == CG_OK &&
	          n == 50, "  and a put replaces it");
	free(d);
	d = NULL;

	/* an entry owned by someone else is not ours to run */
	if (geteuid() == 0) {
		CHECK_SAY(chown(pb, 65534, 65534) == 0, "B.cubin given to uid 65534");
		CHECK_SAY(cg_cache_get(dir, kb, &d, &n) == CG_EIO && !d, "a foreign-owned entry is a miss");
		free(d);
		d = NULL;
	}

	/* the directory: group or world writable, foreign, a symlink -> refused */
	snprintf(p, sizeof p, "%s/open", top);
	mkdir(p, 0700);
	chmod(p, 0777);
	CHECK_SAY(cg_cache_open(p, buf, sizeof buf, why, sizeof why) == CG_EIO && !strcmp(buf, p) &&
	          strstr(why, "writable by everyone (mode 0777)"), "an existing 0777 directory is refused: "
	          "%s %s", buf, why);
	chmod(p, 0770);
	CHECK_SAY(cg_cache_dir(p, buf, sizeof buf) == CG_EIO, "an existing 0770 directory is refused");
	CHECK_SAY(cg_cache_put(p, ka, payload, 10) == CG_EIO, "  and put into it refused");
	chmod(p, 0700);
	CHECK_SAY(cg_cache_put(p, ka, payload, 10) == CG_OK, "  put once it is 0700");
	chmod(p, 0777);
	CHECK_SAY(cg_cache_get(p, ka, &d, &n) == CG_EIO && !d, "  get refused again at 0777");
	free(d);
	d = NULL;
	chmod(p, 0700);
	if (geteuid() == 0) {
		snprintf(p, sizeof p, "%s/foreign", top);
		mkdir(p, 0700);
		CHECK_SAY(chown(p, 65534, 65534) == 0, "a directory of uid 65534");
		CHECK_SAY(cg_cache_open(p, buf, sizeof buf, why, sizeof why) == CG_EIO &&
		          strstr(why, "belongs to uid 65534"), "a foreign-owned directory is refused: %s",
		          why);
	} else {
		printf("      (not root: no foreign-owned directory to test)\n");
	}
	snprintf(p, sizeof p, "%s/linked", top);
	CHECK_SAY(symlink(dir, p) == 0, "linked -> trust");
	CHECK_SAY(cg_cache_open(p, buf, sizeof buf, why, sizeof why) == CG_EIO &&
	          strstr(why, "symbolic link"), "a directory that is a symlink is refused: %s", why);
	CHECK_SAY(cg_cache_get(p, ka, &d, &n) == CG_EIO && !d, "  and not read through");
	free(d);
}

/* The cache is an optimisation: a compile must succeed without one. */
static void test_unwritable(const char *top)
{
	static const char src[] = "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = 1; }\n";
	cg_compile_opts o = { 0 };
	cg_binary b;
	char dir[2048], why[256];
	cg_status s;

	if (cg_nvrtc_version(NULL, NULL, why, sizeof why) != CG_OK) {
		CHECK_SAY(0, "NVRTC needed for the fallback test: %s", why);
		return;
	}
	snprintf(dir, sizeof dir, "%s/file/sub", top);
	o.use_cache = 1;
	o.cache_dir = dir;
	s = cg_compile(src, "k.cu", &o, CG_CUBIN, &b);
	CHECK_SAY(s == CG_OK && b.size > 0 && !b.from_cache, "cache dir under a regular file: compiles anyway");
	CHECK_SAY(b.note && strstr(b.note, dir) && strstr(b.note, "compiling without a cache") &&
	          !strchr(b.note, '\n'),
	          "  with a one-line note: %s", b.note ? b.note : "(none)");
	cg_binary_free(&b);

	/* A read-only directory stops writes only when we are not root. */
	if (geteuid() != 0) {
		snprintf(dir, sizeof dir, "%s/ro", top);
		mkdir(dir, 0500);
		chmod(dir, 0500);
		s = cg_compile(src, "k.cu", &o, CG_CUBIN, &b);
		CHECK_SAY(s == CG_OK && b.note, "0500 cache dir: compiles anyway, note: %s", b.note ? b.note : "(none)");
		cg_binary_free(&b);
		chmod(dir, 0700);
	} else {
		printf("      (root: a 0500 directory would not stop writes; not tested)\n");
	}

	snprintf(dir, sizeof dir, "%s/ok", top);
	s = cg_compile(src, "k.cu", &o, CG_PTX, &b);
	CHECK_SAY(s == CG_OK && !b.note && !b.from_cache, "writable cache dir: no note");
	cg_binary_free(&b);
	s = cg_compile(src, "k.cu", &o, CG_PTX, &b);
	CHECK_SAY(s == CG_OK && b.from_cache && b.size == strlen(b.data), "cached PTX is a hit and a C string");
	cg_binary_free(&b);
}

int main(void)
{
	const char *base = getenv("MK_CACHE_DIR_FOR_TESTS");
	char parent[1024], top[1100];

	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	/* a directory of our own under base, which may be /tmp (not one the cache
	 * would accept itself) */
	snprintf(parent, sizeof parent, "%s", base);
	mkdir(parent, 0700);
	snprintf(top, sizeof top, "%s/cache.XXXXXX", parent);
	if (!mkdtemp(top)) {
		printf("FAIL  mkdtemp %s: %s\n", top, strerror(errno));
		return 1;
	}
	printf("      working in %s\n", top);
	test_sha256();
	test_dirs(top);
	test_entries(top);
	test_trust(top);
	test_unwritable(top);
	rm_tree(top);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures != 0;
}
