/* test_fdpass.c - file descriptors between processes over the Unix socket:
 * a memfd, a pipe and a file reach another process and work there (tags out
 * of order, close-on-exec); a message with more descriptors than the
 * receiver has room for is refused and its descriptors closed; strangers
 * (garbage, wrong token, no hello, oversized) are dropped; a peer that
 * disappears and one that never comes; the abstract name and a path; the
 * header parser.  Authentication both ways (issue 21): random names that say
 * nothing of the job; a socket of another user (uid 65534, when run as root)
 * gets no hello and no descriptor and the send says whose it was; a process
 * other than the one the bootstrap named is refused on either side.
 * Exit 0 = pass.
 */
#include "mkt_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "runtime/fdpass.h"

static uint64_t token;
static char dir[128];
static int use_path, run;

/* Test names, known to every process of a run: "mkt-<run>-<rank>". */
static void tname(int rank, char *buf, size_t n)
{
	snprintf(buf, n, "mkt-%d-%d-%d", (int)getpgrp(), run, rank);
}

static void shown(int rank, char *buf, size_t n)
{
	char b[64];
	tname(rank, b, sizeof b);
	if (use_path)
		snprintf(buf, n, "%s/%s", dir, b);
	else
		snprintf(buf, n, "@%s", b);
}

/* A rank under its test name, its peers' names known, their pids not. */
static fdpass *open_rank(int rank, int nranks, unsigned timeout_ms)
{
	fdpass_cfg c;
	fdpass_ep eps[8];
	fdpass *f;
	char err[512], name[64];
	mk_status st;
	memset(&c, 0, sizeof c);
	memset(eps, 0, sizeof eps);
	tname(rank, name, sizeof name);
	c.token = token;
	c.rank = rank;
	c.nranks = nranks;
	c.timeout_ms = timeout_ms;
	c.use_path = use_path;
	c.dir = use_path ? dir : NULL;
	c.name = name;
	st = fdpass_create(&c, &f, err, sizeof err);
	mkt_check(st == MK_OK, "local rank %d listens: %s", rank, st ? err : "ok");
	if (st != MK_OK)
		return NULL;
	for (int r = 0; r < nranks; r++)
		shown(r, eps[r].name, sizeof eps[r].name);
	st = fdpass_set_peers(f, eps);
	mkt_check(st == MK_OK, "local rank %d knows its peers: %s", rank, fdpass_error(f));
	return f;
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1;   /* the DIR's own */
}

/* ---- parser ---------------------------------------------------------------- */
static void test_parser(void)
{
	unsigned char b[FDPASS_HDR + 16];
	fdpass_msg m;
	char err[256];
	struct {
		const char *what;
		uint32_t type;
		int rank;
		uint32_t tag, nfds, len;
		uint64_t tok;
		size_t n;
		int got;
		int ok;
	} cases[] = {
		{"a message", FDPASS_MSG, 1, 7, 2, 16, 0, FDPASS_HDR + 16, 2, 1},
		{"a hello", FDPASS_HELLO, 1, 0, 0, 0, 0, FDPASS_HDR, 0, 1},
		{"rank 4 of 4", FDPASS_MSG, 4, 0, 0, 0, 0, FDPASS_HDR, 0, 0},
		{"rank -1", FDPASS_MSG, -1, 0, 0, 0, 0, FDPASS_HDR, 0, 0},
		{"17 descriptors", FDPASS_MSG, 1, 0, 17, 0, 0, FDPASS_HDR, 17, 0},
		{"data over the maximum", FDPASS_MSG, 1, 0, 0, FDPASS_MAX_DATA + 1, 0,
		 FDPASS_HDR, 0, 0},
		{"a hello with descriptors", FDPASS_HELLO, 1, 0, 1, 0, 0, FDPASS_HDR, 1, 0},
		{"type 9", 9, 1, 0, 0, 0, 0, FDPASS_HDR, 0, 0},
		{"fewer bytes than the header says", FDPASS_MSG, 1, 0, 0, 16, 0, FDPASS_HDR + 8, 0,
		 0},
		{"more descriptors than the header says", FDPASS_MSG, 1, 0, 1, 0, 0, FDPASS_HDR, 2,
		 0},
		{"another job's token", FDPASS_MSG, 1, 0, 0, 0, 1, FDPASS_HDR, 0, 0},
		{"a truncated header", FDPASS_MSG, 1, 0, 0, 0, 0, 20, 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mk_status st;
		memset(b, 0, sizeof b);
		fdpass_header(b, cases[i].type, cases[i].rank, cases[i].tag, cases[i].nfds,
			      cases[i].len, token ^ cases[i].tok);
		err[0] = 0;
		st = fdpass_parse(b, cases[i].n, cases[i].got, token, 4, &m, err, sizeof err);
		mkt_check((st == MK_OK) == cases[i].ok && (cases[i].ok || err[0]), "parse %s: %s",
			  cases[i].what, cases[i].ok ? "accepted" : err);
	}
	memset(b, 0, sizeof b);
	fdpass_header(b, FDPASS_MSG, 1, 0, 0, 0, token);
	b[1] ^= 0x10;
	mkt_check(fdpass_parse(b, FDPASS_HDR, 0, token, 4, &m, err, sizeof err) != MK_OK,
		  "parse bad magic: %s", err);
}

/* ---- three processes ------------------------------------------------------------- */
static int rank0(void *arg)
{
	fdpass *f = open_rank(0, 3, 10000);
	int mfd, pfd[2], tfd, fds[3];
	char path[256];
	(void)arg;
	if (!f)
		return 1;
	mfd = memfd_create("alpha", MFD_CLOEXEC);
	if (write(mfd, "alpha", 5) != 5 || pipe(pfd) != 0)
		return 2;
	snprintf(path, sizeof path, "%s/gamma", dir);
	tfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (tfd < 0 || write(tfd, "gamma", 5) != 5)
		return 2;
	fds[0] = mfd;
	fds[1] = pfd[0];
	fds[2] = tfd;
	mkt_check(fdpass_send(f, 1, 7, fds, 3, "three fds", 9) == MK_OK, "rank 0 sends 3 fds: %s",
		  fdpass_error(f));
	mkt_check(fdpass_send(f, 2, 8, fds, 1, "eight", 5) == MK_OK, "rank 0 sends tag 8");
	mkt_check(fdpass_send(f, 2, 7, NULL, 0, "seven", 5) == MK_OK, "rank 0 sends tag 7");
	mkt_check(fdpass_send(f, 2, 1, fds, 2, "two fds", 7) == MK_OK, "rank 0 sends 2 fds");
	mkt_check(fdpass_send(f, 1, 1, fds, FDPASS_MAX_FDS + 1, NULL, 0) == MK_ERR_SIZE,
		  "17 descriptors refused before sending: %s", fdpass_error(f));
	if (write(pfd[1], "through the pipe", 16) != 16)
		return 2;
	close(pfd[1]);
	close(pfd[0]);
	close(mfd);
	close(tfd);
	{
		char buf[8];
		size_t len;
		mkt_check(fdpass_recv(f, 1, 99, NULL, 0, NULL, buf, sizeof buf, &len) == MK_OK,
			  "rank 0: done message from rank 1: %s", fdpass_error(f));
		mkt_check(fdpass_recv(f, 2, 99, NULL, 0, NULL, buf, sizeof buf, &len) == MK_OK,
			  "rank 0: done message from rank 2: %s", fdpass_error(f));
		/* any rank that dies is the job's failure: let rank 2 die only now */
		mkt_check(fdpass_send(f, 2, 100, NULL, 0, "go", 2) == MK_OK, "rank 0: go to rank 2");
	}
	fdpass_destroy(f);
	return mkt_failures ? 1 : 0;
}

static int rank1(void *arg)
{
	fdpass *f = open_rank(1, 3, 10000);
	int fds[4], nfds = 0;
	char data[64], buf[64];
	size_t len = 0;
	mk_status st;
	int64_t t;
	(void)arg;
	if (!f)
		return 1;
	memset(data, 0, sizeof data);
	st = fdpass_recv(f, 0, 7, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_OK && nfds == 3 && len == 9 && !memcmp(data, "three fds", 9),
		  "rank 1 receives 3 fds and '%s': %s", data, fdpass_error(f));
	if (st == MK_OK && nfds == 3) {
		memset(buf, 0, sizeof buf);
		mkt_check(pread(fds[0], buf, 5, 0) == 5 && !memcmp(buf, "alpha", 5),
			  "the memfd reads 'alpha'");
		memset(buf, 0, sizeof buf);
		mkt_check(read(fds[1], buf, 16) == 16 && !memcmp(buf, "through the pipe", 16),
			  "the pipe carries what rank 0 wrote after sending it");
		memset(buf, 0, sizeof buf);
		mkt_check(pread(fds[2], buf, 5, 0) == 5 && !memcmp(buf, "gamma", 5),
			  "the file reads 'gamma'");
		mkt_check((fcntl(fds[0], F_GETFD) & FD_CLOEXEC) != 0,
			  "received descriptors are close-on-exec");
		for (int i = 0; i < 3; i++)
			close(fds[i]);
	}
	mkt_check(fdpass_send(f, 0, 99, NULL, 0, "done", 4) == MK_OK, "rank 1: done to rank 0");
	/* rank 2 sends one message and dies */
	st = fdpass_recv(f, 2, 2, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_OK && len == 4, "rank 1: the message before rank 2 dies");
	t = mkt_now_ms();
	st = fdpass_recv(f, 2, 3, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_ERR_PEER && strstr(fdpass_error(f), "local rank 2") &&
		  mkt_now_ms() - t < 3000, "rank 1 learns in %lld ms: %s",
		  (long long)(mkt_now_ms() - t), fdpass_error(f));
	fdpass_destroy(f);
	return mkt_failures ? 1 : 0;
}

static int rank2(void *arg)
{
	fdpass *f = open_rank(2, 3, 10000);
	int fds[4], nfds = 0, before;
	char data[64];
	size_t len = 0;
	mk_status st;
	(void)arg;
	if (!f)
		return 1;
	st = fdpass_recv(f, 0, 7, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_OK && nfds == 0 && len == 5 && !memcmp(data, "seven", 5),
		  "rank 2: tag 7 first although tag 8 came first");
	st = fdpass_recv(f, 0, 8, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_OK && nfds == 1 && !memcmp(data, "eight", 5), "rank 2: then tag 8");
	if (st == MK_OK && nfds == 1)
		close(fds[0]);
	before = open_fds();
	st = fdpass_recv(f, 0, 1, fds, 1, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_ERR_SIZE && nfds == 0, "rank 2: 2 fds with room for 1: %s",
		  fdpass_error(f));
	mkt_check(open_fds() <= before, "and both were closed (%d open before, %d after)", before,
		  open_fds());
	mkt_check(fdpass_send(f, 0, 99, NULL, 0, "done", 4) == MK_OK, "rank 2: done to rank 0");
	st = fdpass_recv(f, 0, 100, fds, 4, &nfds, data, sizeof data, &len);
	mkt_check(st == MK_OK, "rank 2: go from rank 0: %s", fdpass_error(f));
	mkt_check(fdpass_send(f, 1, 2, NULL, 0, "last", 4) == MK_OK, "rank 2 sends, then dies");
	_exit(mkt_failures ? 1 : 0);
}

static void test_three(void)
{
	int64_t t0 = mkt_now_ms();
	pid_t p[3];
	int rc[3];
	p[0] = mkt_spawn(rank0, NULL);
	p[1] = mkt_spawn(rank1, NULL);
	p[2] = mkt_spawn(rank2, NULL);
	for (int i = 0; i < 3; i++) {
		rc[i] = mkt_reap(p[i], t0 + 30000);
		mkt_check(rc[i] == 0, "%s: local rank %d exits 0 (%d)", use_path ? "path" : "abstract",
			  i, rc[i]);
	}
	fprintf(stderr, "      three ranks (%s): %lld ms\n", use_path ? "path" : "abstract",
		(long long)(mkt_now_ms() - t0));
}

/* ---- strangers and absences --------------------------------------------------------- */
static int dial_rank(int rank)
{
	struct sockaddr_un sa;
	socklen_t sl;
	char name[100];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	tname(rank, name, sizeof name);
	memcpy(sa.sun_path + 1, name, strlen(name));
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	if (connect(fd, (struct sockaddr *)&sa, sl) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int target(void *arg)
{
	fdpass *f = open_rank(0, 2, 10000);
	char data[16];
	size_t len;
	mk_status st;
	(void)arg;
	if (!f)
		return 1;
	st = fdpass_recv(f, 1, 5, NULL, 0, NULL, data, sizeof data, &len);
	mkt_check(st == MK_OK && len == 4 && !memcmp(data, "real", 4),
		  "the real rank 1 gets through after the strangers: %s", fdpass_error(f));
	fdpass_destroy(f);
	return mkt_failures ? 1 : 0;
}

static int real_one(void *arg)
{
	fdpass *f = open_rank(1, 2, 10000);
	(void)arg;
	if (!f)
		return 1;
	mkt_check(fdpass_send(f, 0, 5, NULL, 0, "real", 4) == MK_OK, "real rank 1 sends");
	fdpass_destroy(f);
	return mkt_failures ? 1 : 0;
}

static void stranger(const char *what, const void *b, size_t n)
{
	int fd = -1;
	char got[8];
	for (int i = 0; i < 200 && fd < 0; i++) {
		fd = dial_rank(0);
		if (fd < 0)
			mkt_sleep_ms(10);
	}
	if (fd < 0) {
		mkt_check(0, "%s: cannot connect", what);
		return;
	}
	if (send(fd, b, n, MSG_NOSIGNAL) != (ssize_t)n) {
		/* refused at once is fine too */
	}
	/* rank 0 drops us: recv sees the close */
	{
		struct timeval tv = {3, 0};
		ssize_t k;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		k = recv(fd, got, sizeof got, 0);
		mkt_check(k == 0 || (k < 0 && errno == ECONNRESET), "%s: dropped", what);
	}
	close(fd);
}

static void test_strangers(void)
{
	unsigned char b[FDPASS_HDR + FDPASS_MAX_DATA + 100];
	int64_t t0 = mkt_now_ms();
	pid_t tp, rp;
	memset(b, 0x5a, sizeof b);
	tp = mkt_spawn(target, NULL);
	stranger("garbage", b, 40);
	fdpass_header(b, FDPASS_HELLO, 1, 0, 0, 0, token ^ 1);
	stranger("a hello with another job's token", b, FDPASS_HDR);
	fdpass_header(b, FDPASS_MSG, 1, 5, 0, 4, token);
	memcpy(b + FDPASS_HDR, "fake", 4);
	stranger("a message before any hello", b, FDPASS_HDR + 4);
	fdpass_header(b, FDPASS_HELLO, 0, 0, 0, 0, token);
	stranger("a hello claiming to be rank 0 itself", b, FDPASS_HDR);
	fdpass_header(b, FDPASS_HELLO, 1, 0, 0, 0, token);
	stranger("a hello of 4196 bytes", b, sizeof b);
	rp = mkt_spawn(real_one, NULL);
	mkt_check(mkt_reap(rp, t0 + 20000) == 0, "real rank 1 exits 0");
	mkt_check(mkt_reap(tp, t0 + 20000) == 0, "rank 0 exits 0");
	{
		fdpass *f = open_rank(1, 4, 300);
		int64_t t = mkt_now_ms();
		if (f) {
			mkt_check(fdpass_send(f, 3, 1, NULL, 0, "x", 1) == MK_ERR_PEER &&
				  strstr(fdpass_error(f), "cannot reach local rank 3") &&
				  mkt_now_ms() - t < 1500, "a rank that never comes: %s",
				  fdpass_error(f));
			fdpass_destroy(f);
		}
	}
	{
		fdpass *f = open_rank(1, 4, 300), *g;
		char data[4];
		size_t len;
		fdpass_cfg c;
		char err[512];
		int64_t t = mkt_now_ms();
		if (f) {
			mkt_check(fdpass_recv(f, 2, 1, NULL, 0, NULL, data, sizeof data, &len) ==
				  MK_ERR_PEER && strstr(fdpass_error(f), "timed out") &&
				  mkt_now_ms() - t < 1500, "waiting for a rank that never sends: %s",
				  fdpass_error(f));
			char name[64];
			memset(&c, 0, sizeof c);
			tname(1, name, sizeof name);
			c.token = token;
			c.rank = 1;
			c.nranks = 4;
			c.timeout_ms = 100;
			c.name = name;
			mkt_check(fdpass_create(&c, &g, err, sizeof err) == MK_ERR_STATE,
				  "the same name twice: %s", err);
			fdpass_destroy(f);
		}
	}
	fprintf(stderr, "      strangers: %lld ms\n", (long long)(mkt_now_ms() - t0));
}

/* ---- who is at the other end ------------------------------------------------------- */
static fdpass *make(int rank, int nranks, const char *name, unsigned timeout_ms)
{
	fdpass_cfg c;
	fdpass *f;
	char err[512];
	memset(&c, 0, sizeof c);
	c.token = token;
	c.rank = rank;
	c.nranks = nranks;
	c.timeout_ms = timeout_ms;
	c.use_path = use_path;
	c.dir = use_path ? dir : NULL;
	c.name = name;
	if (fdpass_create(&c, &f, err, sizeof err) != MK_OK) {
		mkt_check(0, "create: %s", err);
		return NULL;
	}
	return f;
}

static void test_names(void)
{
	fdpass *a = make(0, 2, NULL, 1000), *b = make(1, 2, NULL, 1000);
	char tok[32];
	snprintf(tok, sizeof tok, "%016llx", (unsigned long long)token);
	if (a && b) {
		const char *na = fdpass_name(a), *nb = fdpass_name(b);
		mkt_check(!strncmp(na, "@mk-fd-", 7) && strlen(na) == 7 + 32 && strcmp(na, nb) &&
			  !strstr(na, tok), "random abstract names, nothing of "
			  "the job in them: %s, %s", na, nb);
	}
	fdpass_destroy(a);
	fdpass_destroy(b);
	use_path = 1;
	a = make(0, 2, NULL, 1000);
	if (a) {
		const char *na = fdpass_name(a);
		struct stat st;
		mkt_check(!strncmp(na, dir, strlen(dir)) && strstr(na, "/mk-fd-") &&
			  strlen(na) == strlen(dir) + 7 + 32 + 5 && !strstr(na, tok) &&
			  stat(na, &st) == 0 && (st.st_mode & 0777) == 0600, "a random path, mode "
			  "0600: %s", na);
	}
	fdpass_destroy(a);
	use_path = 0;
}

/* Rank 1's socket is held by a process other than the one the bootstrap
 * named: a send to it is refused before anything goes out; and a rank 1 of
 * the wrong process is not heard. */
static int holder(void *arg)
{
	char name[64];
	fdpass *f;
	(void)arg;
	tname(1, name, sizeof name);
	if (!(f = make(1, 2, name, 10000)))
		return 1;
	{
		fdpass_ep eps[2];
		memset(eps, 0, sizeof eps);
		shown(0, eps[0].name, sizeof eps[0].name);
		fdpass_set_peers(f, eps);
	}
	/* the other side's refusal to send leaves nothing here; our send gets
	 * through the kernel, but rank 0 must not take it for rank 1's */
	fdpass_send(f, 0, 3, NULL, 0, "imposter", 8);
	mkt_sleep_ms(1500);
	fdpass_destroy(f);
	return 0;
}

static void test_pids(void)
{
	char name[64], data[16];
	fdpass *f;
	fdpass_ep eps[2], me;
	pid_t h;
	size_t len;
	mk_status st;
	int fds[1] = {0};

	/* the child first: it must not inherit rank 0's socket */
	h = mkt_spawn(holder, NULL);
	tname(0, name, sizeof name);
	if (!(f = make(0, 2, name, 1000)))
		return;
	fdpass_self(f, &me);
	mkt_check(me.pid == getpid() && me.pidns != 0 && !strcmp(me.name, fdpass_name(f)),
		  "fdpass_self: pid %d, pid namespace %llu", (int)me.pid,
		  (unsigned long long)me.pidns);
	memset(eps, 0, sizeof eps);
	shown(1, eps[1].name, sizeof eps[1].name);
	eps[1].pid = (int32_t)getpid();   /* not the holder */
	eps[1].pidns = me.pidns;
	mkt_check(fdpass_set_peers(f, eps) == MK_OK, "peers known");
	mkt_sleep_ms(200);
	st = fdpass_recv(f, 1, 3, NULL, 0, NULL, data, sizeof data, &len);
	mkt_check(st == MK_ERR_PEER && strstr(fdpass_error(f), "never connected"),
		  "a HELLO from a process other than rank 1's is not heard: %s", fdpass_error(f));
	fdpass_destroy(f);
	f = make(0, 2, name, 1000);
	if (f && fdpass_set_peers(f, eps) == MK_OK) {
		char want[64];
		snprintf(want, sizeof want, "held by pid %d", (int)h);
		st = fdpass_send(f, 1, 1, fds, 1, "x", 1);
		mkt_check(st == MK_ERR_PEER && strstr(fdpass_error(f), want) &&
			  strstr(fdpass_error(f), "nothing sent"),
			  "a socket held by another process of this user: %s", fdpass_error(f));
	}
	fdpass_destroy(f);
	mkt_check(mkt_reap(h, mkt_now_ms() + 10000) == 0, "the holder exits 0");
}

/* Another user (uid 65534) binds the name rank 1 is known by, and connects
 * to rank 0's: it gets nothing, and the send says whose socket it was.
 * Needs root (to be two users); skipped otherwise. */
static int squatter(void *arg)
{
	int *pfd = arg, l, c = -1, got = 0, nfds = 0;
	struct sockaddr_un sa;
	char name[64];
	int64_t end;
	if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
		return 10;
	tname(1, name, sizeof name);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, strlen(name));
	l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
	if (bind(l, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		 strlen(name))) != 0 || listen(l, 8) != 0)
		return 11;
	if (write(pfd[1], "r", 1) != 1)
		return 12;
	/* take what comes for 3 s */
	end = mkt_now_ms() + 3000;
	while (mkt_now_ms() < end) {
		struct pollfd p[2] = {{l, POLLIN, 0}, {c, POLLIN, 0}};
		if (poll(p, c >= 0 ? 2 : 1, 100) <= 0)
			continue;
		if (p[0].revents && c < 0)
			c = accept(l, NULL, NULL);
		if (c >= 0 && p[1].revents) {
			char buf[8192], ctl[512];
			struct iovec iov = {buf, sizeof buf};
			struct msghdr mh;
			ssize_t k;
			memset(&mh, 0, sizeof mh);
			mh.msg_iov = &iov;
			mh.msg_iovlen = 1;
			mh.msg_control = ctl;
			mh.msg_controllen = sizeof ctl;
			k = recvmsg(c, &mh, MSG_DONTWAIT);
			if (k > 0)
				got += (int)k;
			if (mh.msg_controllen > 0)
				nfds++;
			if (k == 0) {
				close(c);
				c = -2;   /* closed: poll it no more */
			}
		}
		if (c == -2)
			break;
	}
	/* and connect to rank 0's socket ourselves, saying hello as rank 1 */
	{
		char n0[64];
		unsigned char h[FDPASS_HDR];
		struct timeval tv = {3, 0};
		int d = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		tname(0, n0, sizeof n0);
		memset(&sa, 0, sizeof sa);
		sa.sun_family = AF_UNIX;
		memcpy(sa.sun_path + 1, n0, strlen(n0));
		if (connect(d, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un,
			    sun_path) + 1 + strlen(n0))) == 0) {
			ssize_t k;
			fdpass_header(h, FDPASS_HELLO, 1, 0, 0, 0, token);
			send(d, h, sizeof h, MSG_NOSIGNAL);
			fdpass_header(h, FDPASS_MSG, 1, 3, 0, 0, token);
			send(d, h, sizeof h, MSG_NOSIGNAL);
			setsockopt(d, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
			k = recv(d, h, sizeof h, 0);
			if (k > 0)
				got += 1000;   /* rank 0 must not answer a stranger */
		}
		close(d);
	}
	return got ? 1 : nfds ? 2 : 0;
}

static void test_other_user(void)
{
	char name[64], path[300], data[8];
	fdpass *f;
	fdpass_ep eps[2];
	pid_t sq;
	int pfd[2], fd, rc;
	size_t len;
	mk_status st;
	char ready;

	if (geteuid() != 0) {
		fprintf(stderr, "      (not root: no second user for the squatter test)\n");
		return;
	}
	if (pipe(pfd) != 0) {
		mkt_check(0, "pipe");
		return;
	}
	/* the squatter first: it inherits neither our socket nor the secret */
	sq = mkt_spawn(squatter, pfd);
	if (read(pfd[0], &ready, 1) != 1) {
		mkt_check(0, "the squatter did not start");
		return;
	}
	snprintf(path, sizeof path, "%s/secret", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	tname(0, name, sizeof name);
	if (fd < 0 || !(f = make(0, 2, name, 1500)))
		return;
	memset(eps, 0, sizeof eps);
	shown(1, eps[1].name, sizeof eps[1].name);
	fdpass_set_peers(f, eps);
	st = fdpass_send(f, 1, 1, &fd, 1, "secret", 6);
	mkt_check(st == MK_ERR_PEER && strstr(fdpass_error(f), "held by uid 65534") &&
		  strstr(fdpass_error(f), "nothing sent"),
		  "a send to a socket of uid 65534 is refused: %s", fdpass_error(f));
	/* rank 0 keeps listening: the squatter's own hello must not be heard */
	fdpass_destroy(f);
	f = make(0, 2, name, 1500);
	if (f) {
		fdpass_set_peers(f, eps);
		st = fdpass_recv(f, 1, 3, NULL, 0, NULL, data, sizeof data, &len);
		mkt_check(st == MK_ERR_PEER, "uid 65534 saying hello as rank 1 is not heard: %s",
			  fdpass_error(f));
	}
	fdpass_destroy(f);
	rc = mkt_reap(sq, mkt_now_ms() + 10000);
	mkt_check(rc == 0, "the squatter got nothing: no bytes, no descriptor (%d)", rc);
	close(fd);
	close(pfd[0]);
	close(pfd[1]);
	unlink(path);
}

int main(void)
{
	char cmd[300];
	signal(SIGPIPE, SIG_IGN);
	token = 0xfd00000000000000ull ^ ((uint64_t)getpid() << 16) ^ (uint64_t)time(NULL);
	snprintf(dir, sizeof dir, "/tmp/mkt_fdpass_%d", (int)getpid());
	mkdir(dir, 0700);
	test_parser();
	use_path = 0;
	test_three();
	test_strangers();
	use_path = 1;
	token ^= 1;
	run++;
	test_three();
	for (int r = 0; r < 2; r++) {
		/* rank 2 dies without destroy: its file stays, the others' go */
		char p[300];
		struct stat st;
		shown(r, p, sizeof p);
		mkt_check(stat(p, &st) != 0, "rank %d's socket file removed on destroy", r);
	}
	use_path = 0;
	run++;
	test_names();
	test_pids();
	test_other_user();
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return mkt_summary("test_fdpass");
}
